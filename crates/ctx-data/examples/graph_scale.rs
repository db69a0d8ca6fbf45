use ctx_data::kneser_ney::{estimate, KnOptions};
use ctx_data::pronounce::{Pronouncer, CMU_PHONES};
use ctx_graph::compile::{build_graph, GraphInputs, GraphKind};
use ctx_graph::grammar::MissingWords;
use ctx_graph::hmm::HmmTopology;
use ctx_graph::lexicon_fst::SilenceOptions;
use std::path::Path;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).map(|s| s.parse().unwrap()).unwrap_or(5000);
    let prune: Vec<u64> = args
        .get(2)
        .map(|s| s.split(',').map(|x| x.parse().unwrap()).collect())
        .unwrap_or_default();
    let text = ctx_core::io::read_text(Path::new("datasets/earnings22/lm_text.txt.gz")).unwrap();
    let sents: Vec<Vec<&str>> = text
        .lines()
        .take(n)
        .map(|l| l.split_whitespace().collect())
        .collect();
    let t = Instant::now();
    let (lm, rep) = estimate(
        &sents,
        &KnOptions {
            prune,
            ..Default::default()
        },
    )
    .unwrap();
    println!("lm {:?} {:.1}s", rep.counts, t.elapsed().as_secs_f64());
    let p = Pronouncer::from_cmudict(Path::new("datasets/cmudict/cmudict.dict.gz")).unwrap();
    let words: Vec<&str> = lm
        .vocab()
        .iter()
        .map(String::as_str)
        .filter(|w| !w.starts_with('<') && !w.starts_with('#') && p.pronounce(w).is_ok())
        .collect();
    let (lex, _) = p.lexicon_for(&words).unwrap();
    let mut units: Vec<String> = vec!["SIL".into()];
    units.extend(CMU_PHONES.iter().map(|s| s.to_string()));
    let inputs = GraphInputs {
        lexicon: &lex,
        units: &units,
        lm: &lm,
        missing_words: MissingWords::Skip,
        silence: Some(SilenceOptions {
            unit: "SIL".into(),
            prob: 0.5,
        }),
        hmm: HmmTopology::default(),
    };
    let (g, _) = build_graph(
        GraphKind::parse(args.get(3).map(String::as_str).unwrap_or("hclg")).unwrap(),
        &inputs,
    )
    .unwrap();
    for s in &g.steps {
        println!(
            "{:24} {:>9} {:>9} {:.2}s",
            s.name, s.states, s.arcs, s.seconds
        );
    }
}
