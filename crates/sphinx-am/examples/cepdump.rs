//! Writes the cepstra of a 16 kHz mono WAV as pocketsphinx's `mfclogdir` does (a 32-bit
//! big-endian count of values, then big-endian floats), to compare with its dumps:
//! `cargo run --release -p sphinx-am --example cepdump -- <model dir> <wav> <out.mfc>`.
use sphinx_am::frontend::{Frontend, FrontendConfig};
use sphinx_am::FeatParams;
use std::io::Write;
use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, model, wav, out] = args.as_slice() else {
        return Err("usage: cepdump <model dir> <wav> <out.mfc>".into());
    };
    let p = FeatParams::read(&Path::new(model).join("feat.params"))?;
    let fe = Frontend::new(FrontendConfig::from_params(&p)?)?;
    let s = sphinx_am::audio::read_wav(Path::new(wav), 16_000)?;
    let cep = fe.cepstra(&s);
    let mut f = std::fs::File::create(out)?;
    f.write_all(&((cep.len() * 13) as i32).to_be_bytes())?;
    for c in &cep {
        for x in c {
            f.write_all(&x.to_be_bytes())?;
        }
    }
    Ok(())
}
