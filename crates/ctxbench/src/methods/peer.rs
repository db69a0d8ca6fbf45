//! The peer family: another decoder's output on a dataset, scored exactly as our rows are, so
//! a peer is a row of a table and not a sentence beside it. The peer ran elsewhere (e.g.
//! pocketsphinx through `make peer-sphinx`) and left a Kaldi `text` file of hypotheses and a
//! JSON file of its timing; the method reads both, checks that every utterance of the dataset
//! has a hypothesis, and scores them with the dataset's own scoring (entities, callsigns,
//! targets) through the same setup as the WFST family's.
//!
//! Method: `peer`. Measures: the accuracy columns, and `rtfx_am` = audio seconds over the
//! peer's measured wall time (what it timed: for pocketsphinx its front end, scoring and
//! search on one thread, the same span as our `rtfx_am`).

use super::family::{
    accuracy_measures, check_targets, common, load_setup, record, setup_key_of, Component, Family,
    FamilySpec, GroupContext, SetupCache,
};
use crate::experiment::{Point, SettingSpec, Settings};
use crate::pipeline::{self, SetupOptions};
use crate::results::PointRecord;
use crate::settings::{Block, Common};
use anyhow::{anyhow, bail, Context, Result};
use ctx_data::dataset::Dataset;
use std::collections::HashMap;
use std::path::Path;

/// The peer family (see the module docs).
pub struct Peer;

const COMPONENTS: &[Component] = &[Component {
    name: "peer",
    doc: "another decoder's hypotheses (a Kaldi text file) and timing, scored as ours are",
}];

crate::settings_block! {
    /// Where the peer's output is.
    pub struct PeerOutput in "peer" {
        /// the peer's hypotheses: a Kaldi text file (`utt word word ...`), one line per
        /// utterance of the dataset
        peer_hyp: Option<String> = None => required,
        /// the peer's timing: JSON with `audio_s` and `wall_s` (empty: no RTFx)
        peer_timing: String = String::new(),
    }
}

/// The peer's timing file.
#[derive(serde::Deserialize)]
struct Timing {
    audio_s: f64,
    wall_s: f64,
}

impl FamilySpec for Peer {
    fn name(&self) -> &'static str {
        "peer"
    }

    fn marker(&self) -> Option<&'static str> {
        Some("peer")
    }

    fn components(&self) -> Vec<Component> {
        COMPONENTS.to_vec()
    }

    fn settings(&self) -> Vec<SettingSpec> {
        PeerOutput::SPECS.to_vec()
    }

    fn check(&self, s: &Settings, what: &str) -> Result<()> {
        PeerOutput::read(s).with_context(|| what.to_string())?;
        Ok(())
    }
}

/// Reads a Kaldi text file of hypotheses (the project's table reader: a repeated id is an
/// error naming the line): utterance id → words.
fn read_hyps(path: &Path) -> Result<HashMap<String, Vec<String>>> {
    Ok(ctx_core::corpus::read_text_table(path)
        .with_context(|| format!("reading the peer's hypotheses {}", path.display()))?
        .into_iter()
        .collect())
}

fn read_timing(path: &Path) -> Result<Timing> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the peer's timing {}", path.display()))?;
    let t: Timing = serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: expected {{\"audio_s\": .., \"wall_s\": ..}}",
            path.display()
        )
    })?;
    if !(t.audio_s > 0.0 && t.wall_s > 0.0 && t.audio_s.is_finite() && t.wall_s.is_finite()) {
        bail!(
            "{}: audio_s {} and wall_s {} must be positive",
            path.display(),
            t.audio_s,
            t.wall_s
        );
    }
    Ok(t)
}

impl Family for Peer {
    fn check_lists(&self, ds: &Dataset, _full: &Dataset, p: &Point) -> Result<()> {
        check_targets(ds, p)
    }

    fn setup_key(&self, p: &Point) -> String {
        common(p).map_or(String::new(), |c| setup_key_of("wfst", &c))
    }

    fn decode_key(&self, p: &Point) -> String {
        let Ok(b) = PeerOutput::read(&p.settings) else {
            return String::new();
        };
        format!(
            "{};peer_hyp={};peer_timing={}",
            self.setup_key(p),
            b.peer_hyp.unwrap_or_default(),
            b.peer_timing
        )
    }

    fn run_group(
        &self,
        cx: &GroupContext<'_>,
        group: &[usize],
        setup: &mut SetupCache,
    ) -> Result<Vec<PointRecord>> {
        let first = &cx.points[group[0]];
        let c: Common = common(first)?;
        let b = PeerOutput::read(&first.settings)?;
        let hyp_path = b
            .peer_hyp
            .clone()
            .ok_or_else(|| anyhow!("{}: peer_hyp is required", first.label()))?;
        let opts = SetupOptions {
            kind: c.graph_kind()?,
            noise: c.noise,
            snr_db: c.snr_db,
            ..SetupOptions::hclg(c.subset(), cx.cache)
        };
        // The setup the WFST family's baseline loads (cached): its utterances and scoring.
        let st = load_setup(cx, &c, self.setup_key(first), &opts, setup)?;
        let path = Path::new(&hyp_path);
        let mut table = read_hyps(path)?;
        let hyps = st
            .dataset
            .utterances
            .iter()
            .map(|u| {
                table.remove(&u.id).ok_or_else(|| {
                    anyhow!(
                        "{}: utterance {} of dataset {} has no hypothesis",
                        path.display(),
                        u.id,
                        st.dataset.name
                    )
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let timing = match b.peer_timing.as_str() {
            "" => None,
            t => Some(read_timing(Path::new(t))?),
        };
        let mut out = Vec::with_capacity(group.len());
        for &i in group {
            let p = &cx.points[i];
            let pc = common(p)?;
            let targets = pipeline::targets(&st.dataset, pc.targets.as_deref())?;
            let totals = st.score(&hyps, targets.as_ref().map(|(_, t)| t))?;
            let mut m = accuracy_measures(&totals);
            m.extend(st.fbai_measures(&hyps));
            if let Some(t) = &timing {
                m.insert("rtfx_am".into(), t.audio_s / t.wall_s);
                m.insert("audio_h".into(), t.audio_s / 3600.0);
            }
            out.push(record(cx, i, m, "cpu"));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_hypothesis_of_one_utterance_is_named() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("hyp.txt");
        std::fs::write(&p, "u1 a b\n\nu2\nu1 c\n").unwrap();
        let e = format!("{:#}", read_hyps(&p).unwrap_err());
        assert!(
            e.contains("hyp.txt:4") && e.contains("utterance u1 appears twice"),
            "{e}"
        );
        std::fs::write(&p, "u1 a b\nu2\n").unwrap();
        let h = read_hyps(&p).unwrap();
        assert_eq!(h["u1"], ["a", "b"]);
        assert!(h["u2"].is_empty());
    }

    #[test]
    fn a_timing_without_positive_seconds_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t.json");
        std::fs::write(&p, r#"{"audio_s": 34.4, "wall_s": 2.0}"#).unwrap();
        let t = read_timing(&p).unwrap();
        assert_eq!(t.audio_s / t.wall_s, 17.2);
        std::fs::write(&p, r#"{"audio_s": 34.4, "wall_s": 0}"#).unwrap();
        let e = format!("{:#}", read_timing(&p).err().unwrap());
        assert!(e.contains("must be positive"), "{e}");
        std::fs::write(&p, r#"{"audio": 34.4}"#).unwrap();
        let e = format!("{:#}", read_timing(&p).err().unwrap());
        assert!(e.contains("expected {\"audio_s\""), "{e}");
    }
}
