//! `ctxbench regress`: rerun the experiments marked `regress = true` on the quick subsets and
//! compare with `results/baselines/<id>.json`. WER and NE-WER must match to 0.05 absolute (the
//! pipeline is deterministic); speed is checked only as ratios measured within the same run
//! (the experiment's `[[regress_ratio]]`), never as absolute times.

use crate::experiment::Experiment;
use crate::results::Points;
use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Absolute tolerance on WER and NE-WER (percentage points).
pub const TOLERANCE: f64 = 0.05;

/// The figures of one point in a baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BasePoint {
    /// The point label (row and swept settings).
    pub label: String,
    /// WER (percent).
    pub wer: Option<f64>,
    /// NE-WER (percent).
    pub ne_wer: Option<f64>,
}

/// A speed ratio in a baseline (for reference; the threshold lives in the experiment file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaseRatio {
    /// Its name.
    pub name: String,
    /// The value measured when the baseline was written.
    pub value: f64,
}

/// `results/baselines/<id>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// The experiment id.
    pub experiment: String,
    /// The code version that wrote it (for reference).
    pub code_version: String,
    /// Every point's figures.
    pub points: Vec<BasePoint>,
    /// The speed ratios measured with them.
    pub ratios: Vec<BaseRatio>,
}

/// Reads the figures of a finished run: (label, wer, ne_wer) per point, in grid order.
pub fn measured(exp: &Experiment, pts: &Points) -> Result<Baseline> {
    let points = exp.points(&crate::experiment::Overrides::default())?;
    if points.len() != pts.rows.len() {
        bail!(
            "{}: points.csv has {} rows, the experiment {} points",
            exp.id,
            pts.rows.len(),
            points.len()
        );
    }
    // A label two sections share is told apart by its section.
    let labels: Vec<String> = points.iter().map(|p| p.label()).collect();
    let mut out = Vec::new();
    for (i, p) in points.iter().enumerate() {
        let label = p.label();
        let label = if labels.iter().filter(|l| **l == label).count() > 1 {
            format!("{} / {label}", pts.text(i, "section").unwrap_or(""))
        } else {
            label
        };
        out.push(BasePoint {
            label,
            wer: pts.num(i, "wer"),
            ne_wer: pts.num(i, "ne_wer"),
        });
    }
    let mut ratios = Vec::new();
    for r in &exp.ratios {
        ratios.push(BaseRatio {
            name: r.name.clone(),
            value: ratio(exp, pts, r)?,
        });
    }
    Ok(Baseline {
        experiment: exp.id.clone(),
        code_version: crate::version::CODE_VERSION.to_string(),
        points: out,
        ratios,
    })
}

fn ratio(exp: &Experiment, pts: &Points, r: &crate::experiment::RatioSpec) -> Result<f64> {
    let pick = |sel| -> Result<f64> {
        let rows = pts.select(sel);
        if rows.len() != 1 {
            bail!(
                "{}: ratio '{}': selector {sel:?} matches {} rows",
                exp.id,
                r.name,
                rows.len()
            );
        }
        pts.num(rows[0], &r.measure)
            .ok_or_else(|| anyhow!("{}: ratio '{}': no {} value", exp.id, r.name, r.measure))
    };
    Ok(pick(&r.num)? / pick(&r.den)?.max(1e-12))
}

/// Compares a run with its baseline; returns one message per failure (empty = pass).
pub fn compare(exp: &Experiment, got: &Baseline, base: &Baseline) -> Vec<String> {
    let mut fails = Vec::new();
    for b in &base.points {
        let Some(g) = got.points.iter().find(|g| g.label == b.label) else {
            fails.push(format!(
                "{}: point '{}' is in the baseline but not in the experiment",
                exp.id, b.label
            ));
            continue;
        };
        for (name, bv, gv) in [("WER", b.wer, g.wer), ("NE-WER", b.ne_wer, g.ne_wer)] {
            match (bv, gv) {
                (Some(bv), Some(gv)) if (bv - gv).abs() > TOLERANCE => fails.push(format!(
                    "{}: point '{}': {name} {gv:.2} vs baseline {bv:.2} (tolerance {TOLERANCE})",
                    exp.id, b.label
                )),
                (Some(_), None) | (None, Some(_)) => fails.push(format!(
                    "{}: point '{}': {name} {gv:?} vs baseline {bv:?}",
                    exp.id, b.label
                )),
                _ => {}
            }
        }
    }
    for g in &got.points {
        if !base.points.iter().any(|b| b.label == g.label) {
            fails.push(format!(
                "{}: point '{}' has no baseline (run `ctxbench regress --update`)",
                exp.id, g.label
            ));
        }
    }
    for (spec, g) in exp.ratios.iter().zip(&got.ratios) {
        if g.value < spec.min {
            fails.push(format!(
                "{}: speed ratio '{}' = {:.3} is below {:.3}",
                exp.id, spec.name, g.value, spec.min
            ));
        }
    }
    fails
}

/// Reads a baseline file.
pub fn read_baseline(path: &Path) -> Result<Baseline> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "reading baseline {} (write it with `ctxbench regress --update`)",
            path.display()
        )
    })?;
    serde_json::from_str(&text).map_err(|e| anyhow!("{}: {e}", path.display()))
}

/// Writes a baseline file atomically.
pub fn write_baseline(path: &Path, b: &Baseline) -> Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d)?;
    }
    let text = serde_json::to_string_pretty(b)? + "\n";
    ctx_core::io::write_atomic(path, |w| w.write_all(text.as_bytes()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exp(dir: &Path, min: f64) -> Experiment {
        let p = dir.join("experiments/r.toml");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(
            &p,
            format!(
                r#"
[settings]
dataset = "a"
[[rows]]
row = "base"
[[rows]]
row = "lat"
method = "lattice-biasing"
bias_list = "gt"
[[regress_ratio]]
name = "speed"
measure = "rtfx"
num = {{ row = "lat" }}
den = {{ row = "base" }}
min = {min}
"#
            ),
        )
        .unwrap();
        Experiment::load(&p, crate::methods::catalog()).unwrap()
    }

    fn pts(dir: &Path, lat_wer: f64) -> Points {
        let csv = format!("row,wer,ne_wer,rtfx\nbase,20.0,30.0,100\nlat,{lat_wer},25.0,96\n");
        std::fs::write(dir.join("points.csv"), csv).unwrap();
        Points::read(dir).unwrap()
    }

    #[test]
    fn a_changed_wer_or_a_slow_ratio_fails_naming_the_figure() {
        let d = tempfile::tempdir().unwrap();
        let e = exp(d.path(), 0.95);
        let base = measured(&e, &pts(d.path(), 19.0)).unwrap();
        assert_eq!(base.points[1].label, "lat");
        assert!((base.ratios[0].value - 0.96).abs() < 1e-9);
        // Same figures (within 0.05) pass.
        let got = measured(&e, &pts(d.path(), 19.04)).unwrap();
        assert!(compare(&e, &got, &base).is_empty());
        // A WER 0.06 off fails and names experiment, point and figure.
        let got = measured(&e, &pts(d.path(), 19.06)).unwrap();
        let f = compare(&e, &got, &base);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].contains("r: point 'lat': WER 19.06 vs baseline 19.00"),
            "{f:?}"
        );
        // A ratio below its minimum fails.
        let e = exp(d.path(), 0.97);
        let got = measured(&e, &pts(d.path(), 19.0)).unwrap();
        let f = compare(&e, &got, &base);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].contains("speed ratio 'speed' = 0.960 is below 0.970"),
            "{f:?}"
        );
    }
}
