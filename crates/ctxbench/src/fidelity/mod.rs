//! The fidelity report: what a researcher reproduces a table for is each method's *effect*, the
//! change from the baseline row, so every row of every table with paper figures is compared with
//! the paper as an effect (row − baseline, ours beside the paper's): same sign, opposite sign,
//! within a factor of two. `ctxbench fidelity` writes `results/fidelity/` (README.md, effects.csv);
//! `--check` fails when an effect that had the paper's sign in the committed report lost it.
//!
//! Rules (docs/fidelity.md): accuracy effects are differences in points, a move under
//! [`NONE_POINTS`] counts as none; speed effects are RTFx changes in percent, under
//! [`NONE_SPEED_PCT`] none. Two effects agree in sign when their signs (−, none, +) are equal,
//! and are within ×2 when they agree and either both are none or their ratio lies in [0.5, 2].
//! Where the paper's column block names one of ours (`ATCO2-1h`, or `003: ATCO2-1h`), its
//! effects are compared with that block only; where it used other data, with each of ours.

pub mod ceiling;
mod effect;

use effect::is_speed;
pub use effect::{
    change, sign, Columns, Effect, Verdict, ACCURACY, NONE_POINTS, NONE_SPEED_PCT, SPEED,
};

use crate::experiment::{Experiment, PaperRow};
use crate::results::Points;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::Path;

/// A paper column block without its source prefix: `003: ATCO2-1h` → `ATCO2-1h`.
fn bare_group(g: &str) -> &str {
    match g.split_once(": ") {
        Some((pre, rest)) if !pre.is_empty() && pre.chars().all(|c| c.is_ascii_digit()) => rest,
        _ => g,
    }
}

/// Whether our block `label` is the paper's block `group`: the same name, or ours with more
/// said after it (`ATCO2-1h spoken, real AM` is the paper's `ATCO2-1h` spoken).
fn names_block(label: &str, group: &str) -> bool {
    let g = bare_group(group);
    !label.is_empty()
        && !g.is_empty()
        && (label == g
            || label
                .strip_prefix(g)
                .is_some_and(|rest| rest.starts_with(' ')))
}

/// The baseline row label of a section: the table's `baseline`, else the section's first row.
fn baseline_of<'a>(exp: &'a Experiment, section: &str) -> Option<&'a str> {
    if let Some(b) = &exp.table.baseline {
        return Some(b);
    }
    exp.rows
        .iter()
        .find(|r| r.section == section)
        .map(|r| r.row.as_str())
}

/// The one point of (section, row, group), or `None` when there is none or several (a swept row
/// has no single effect).
fn our_point(
    exp: &Experiment,
    pts: &Points,
    section: &str,
    row: &str,
    group: &str,
) -> Option<usize> {
    let found: Vec<usize> = (0..pts.rows.len())
        .filter(|&i| {
            pts.text(i, "row") == Some(row)
                && pts.text(i, "section").unwrap_or("") == section
                && exp
                    .table
                    .group_by
                    .as_ref()
                    .is_none_or(|g| pts.text(i, g).unwrap_or("") == group)
        })
        .collect();
    (found.len() == 1).then(|| found[0])
}

fn paper_matches(p: &PaperRow, section: &str, row: &str, group: &str) -> bool {
    p.row == row && p.group == group && (p.section.is_empty() || p.section == section)
}

/// Every compared effect of one experiment (empty when its table has `effects = false` or no
/// paper figures).
pub fn effects(exp: &Experiment, pts: &Points) -> Vec<Effect> {
    let mut out = Vec::new();
    if !exp.table.effects {
        return out;
    }
    let groups = crate::table::column_groups(exp, pts);
    for row in &exp.rows {
        let Some(base_label) = baseline_of(exp, &row.section) else {
            continue;
        };
        if row.row == base_label {
            continue;
        }
        for p in exp
            .paper
            .iter()
            .filter(|p| p.row == row.row && (p.section.is_empty() || p.section == row.section))
        {
            let Some(pb) = exp
                .paper
                .iter()
                .find(|q| paper_matches(q, &row.section, base_label, &p.group))
            else {
                continue;
            };
            let named: Vec<&(String, String)> = groups
                .iter()
                .filter(|(_, l)| names_block(l, &p.group))
                .collect();
            let paired: Vec<&(String, String)> = if named.is_empty() {
                groups.iter().collect()
            } else {
                named
            };
            for (value, label) in paired {
                let (Some(ob), Some(or)) = (
                    our_point(exp, pts, &row.section, base_label, value),
                    our_point(exp, pts, &row.section, &row.row, value),
                ) else {
                    continue;
                };
                let spoken = pts.num(or, "am_s").is_some() || pts.num(ob, "am_s").is_some();
                for (m, &pr) in &p.values {
                    if !ACCURACY.contains(&m.as_str()) && !is_speed(m) {
                        continue;
                    }
                    let (Some(&pbv), Some(obv), Some(orv)) =
                        (pb.values.get(m), pts.num(ob, m), pts.num(or, m))
                    else {
                        continue;
                    };
                    out.push(Effect {
                        experiment: exp.id.clone(),
                        section: row.section.clone(),
                        row: row.row.clone(),
                        group: if label.is_empty() {
                            "ours".into()
                        } else {
                            label.clone()
                        },
                        columns: if spoken {
                            Columns::Spoken
                        } else {
                            Columns::Simulated
                        },
                        paper_group: if p.group.is_empty() {
                            "paper".into()
                        } else {
                            p.group.clone()
                        },
                        measure: m.clone(),
                        ours: (obv, orv),
                        paper: (pbv, pr),
                        cause: p.cause.clone().unwrap_or_default(),
                    });
                }
            }
        }
    }
    out
}

/// Counts over a set of effects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Effects compared.
    pub n: usize,
    /// With the paper's sign.
    pub same: usize,
    /// Opposite sign.
    pub opposite: usize,
    /// Within ×2 of the paper's.
    pub within_x2: usize,
    /// Within ×2 of the paper's, each as a fraction of its baseline.
    pub within_x2_relative: usize,
    /// The most within ×2 any results could reach ([`ceiling::x2_ceiling`]).
    pub within_x2_ceiling: usize,
}

impl Summary {
    /// Counts `effects`.
    pub fn of<'a>(effects: impl IntoIterator<Item = &'a Effect>) -> Self {
        let mut s = Summary::default();
        let effects: Vec<&Effect> = effects.into_iter().collect();
        s.within_x2_ceiling = ceiling::x2_ceiling(effects.iter().copied());
        for e in effects {
            s.n += 1;
            match e.verdict() {
                Verdict::Same => s.same += 1,
                Verdict::Opposite => s.opposite += 1,
                _ => {}
            }
            s.within_x2 += e.within_x2() as usize;
            s.within_x2_relative += e.within_x2_relative() as usize;
        }
        s
    }

    /// The row's cells after its label: n, then each count with its share.
    fn cells(&self) -> String {
        [
            self.n.to_string(),
            self.pct(self.same),
            self.pct(self.opposite),
            self.pct(self.within_x2),
            self.pct(self.within_x2_relative),
            self.pct(self.within_x2_ceiling),
        ]
        .join(" | ")
    }

    fn pct(&self, k: usize) -> String {
        if self.n == 0 {
            "-".into()
        } else {
            format!("{k} ({:.0}%)", 100.0 * k as f64 / self.n as f64)
        }
    }
}

fn fmt_change(e: &Effect, c: f64) -> String {
    if e.is_speed() {
        format!("{c:+.1}%")
    } else {
        format!("{c:+.1}")
    }
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The report (Markdown): the summary, then every disagreement with its cause, then every
/// effect by experiment.
pub fn render(effects: &[Effect], titles: &BTreeMap<String, String>) -> String {
    let acc_sim = Summary::of(
        effects
            .iter()
            .filter(|e| !e.is_speed() && e.columns == Columns::Simulated),
    );
    let acc_all = Summary::of(effects.iter().filter(|e| !e.is_speed()));
    let spoken = |e: &&Effect| !e.is_speed() && e.columns == Columns::Spoken;
    let acc_spoken = Summary::of(effects.iter().filter(spoken));
    // The spoken sets through the radio channel: their blocks say so in their label.
    let acc_radio = Summary::of(effects.iter().filter(spoken).filter(|e| {
        e.group
            .split_whitespace()
            .any(|w| w.trim_matches(',') == "radio")
    }));
    let speed = Summary::of(effects.iter().filter(|e| e.is_speed()));
    let mut s = String::from(
        "# Fidelity: each method's effect beside the paper's\n\n\
         Written by `ctxbench fidelity` (part of `make reproduce`) from every committed table with\n\
         paper figures. An effect is a row's change from its section's baseline row (accuracy in\n\
         points, a move under 0.3 counting as none; speed as the percent change of RTFx, under 5%\n\
         none). Where the paper's column block is one of ours, the effects are compared with that\n\
         block; where the paper used other data, with each of ours. Same sign counts both-none;\n\
         within ×2: same sign and the ratio in [0.5, 2] (or both none); relative: the same with each\n\
         change as a fraction of its own baseline (where the paper's data are not ours, a 1-point\n\
         fall from 6% is a 2-point fall from 12%). Most reachable: the most effects within ×2 that\n\
         any results could give, where a paper's own data sets disagree (004's effect on SLURP is\n\
         four times its effect on SPGI: no one value of ours is within ×2 of both).\n\
         `ctxbench fidelity --check`\n\
         (in `make regress-ci`) fails when an effect that has the paper's sign here loses it.\n\n\
         | effects compared | n | same sign | opposite | within ×2 of the paper's | within ×2, relative | within ×2, most reachable |\n\
         | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for (name, sm) in [
        ("accuracy, simulated columns", acc_sim),
        ("accuracy, with the spoken real-model columns", acc_all),
        ("accuracy, spoken real-model columns alone", acc_spoken),
        (
            "of which through the radio channel (the papers' difficulty)",
            acc_radio,
        ),
        ("speed (RTFx % change)", speed),
    ] {
        s.push_str(&format!("| {name} | {} |\n", sm.cells()));
    }
    s.push_str("\n## By experiment\n\n| experiment | n | same sign | opposite | within ×2 | within ×2, relative | within ×2, most reachable |\n| --- | --- | --- | --- | --- | --- | --- |\n");
    let mut ids: Vec<&str> = effects.iter().map(|e| e.experiment.as_str()).collect();
    ids.dedup();
    for id in &ids {
        let sm = Summary::of(effects.iter().filter(|e| e.experiment == *id));
        s.push_str(&format!("| [{id}](../{id}/table.md) | {} |\n", sm.cells()));
    }
    let header = "| row | ours | paper's block | measure | ours: base → row (effect) | paper: base → row (effect) | verdict | ×2 |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n";
    let line = |e: &Effect| {
        format!(
            "| {} | {}{} | {} | {} | {:.1} → {:.1} ({}) | {:.1} → {:.1} ({}) | {} | {} |\n",
            cell(&e.row),
            cell(&e.group),
            if e.columns == Columns::Spoken {
                " (spoken)"
            } else {
                ""
            },
            cell(&e.paper_group),
            crate::table::measure_name(&e.measure),
            e.ours.0,
            e.ours.1,
            fmt_change(e, e.ours_change()),
            e.paper.0,
            e.paper.1,
            fmt_change(e, e.paper_change()),
            e.verdict().name(),
            if e.within_x2() { "yes" } else { "no" }
        )
    };
    s.push_str(&render_opposite(effects));
    s.push_str("\n## Every effect\n");
    for id in &ids {
        s.push_str(&format!(
            "\n### {id}: {}\n\n{header}",
            titles.get(*id).map_or("", |t| t.as_str())
        ));
        let mut section = None;
        for e in effects.iter().filter(|e| e.experiment == *id) {
            if section != Some(&e.section) && !e.section.is_empty() {
                s.push_str(&format!("| **{}** | | | | | | | |\n", cell(&e.section)));
            }
            section = Some(&e.section);
            s.push_str(&line(e));
        }
        for e in effects
            .iter()
            .filter(|e| e.experiment == *id && !e.cause.is_empty())
            .map(|e| (&e.row, &e.cause))
            .collect::<std::collections::BTreeSet<_>>()
        {
            s.push_str(&format!("\n- *{}*: {}\n", e.0, e.1));
        }
    }
    s
}

/// The report's list of opposite signs, each with its cause.
fn render_opposite(effects: &[Effect]) -> String {
    let mut s = String::from("\n## Opposite signs and their causes\n\n");
    let opposite: Vec<&Effect> = effects
        .iter()
        .filter(|e| e.verdict() == Verdict::Opposite)
        .collect();
    if opposite.is_empty() {
        s.push_str("None.\n");
    } else {
        s.push_str("| experiment | row | ours | measure | ours | paper's | cause |\n| --- | --- | --- | --- | --- | --- | --- |\n");
        for e in opposite {
            s.push_str(&format!(
                "| {} | {} | {}{} | {} | {} | {} | {} |\n",
                e.experiment,
                cell(&e.row),
                cell(&e.group),
                if e.columns == Columns::Spoken {
                    " (spoken)"
                } else {
                    ""
                },
                crate::table::measure_name(&e.measure),
                fmt_change(e, e.ours_change()),
                fmt_change(e, e.paper_change()),
                if e.cause.is_empty() {
                    "not yet measured".to_string()
                } else {
                    cell(&e.cause)
                }
            ));
        }
    }
    s
}

/// The effects as effects.csv (one row per effect; quoted where a label holds a comma).
pub fn to_csv(effects: &[Effect]) -> String {
    let q = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let mut s = String::from("experiment,section,row,group,columns,paper_group,measure,ours_base,ours_row,ours_change,paper_base,paper_row,paper_change,verdict,within_x2,within_x2_relative\n");
    for e in effects {
        s.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{:.4},{},{},{:.4},{},{},{}\n",
            q(&e.experiment),
            q(&e.section),
            q(&e.row),
            q(&e.group),
            e.columns.name(),
            q(&e.paper_group),
            e.measure,
            e.ours.0,
            e.ours.1,
            e.ours_change(),
            e.paper.0,
            e.paper.1,
            e.paper_change(),
            e.verdict().name(),
            e.within_x2(),
            e.within_x2_relative()
        ));
    }
    s
}

/// The keys of the effects that had the paper's sign (and moved) in a committed effects.csv.
pub fn agreeing_keys(csv_dir: &Path) -> Result<Vec<String>> {
    let pts = Points::read_csv(&csv_dir.join("effects.csv"))?;
    let mut keys = Vec::new();
    for i in 0..pts.rows.len() {
        let moved = pts
            .num(i, "paper_change")
            .zip(pts.text(i, "measure"))
            .is_some_and(|(c, m)| sign(m, c) != 0);
        if pts.text(i, "verdict") == Some("same") && moved {
            let k = [
                "experiment",
                "section",
                "row",
                "group",
                "paper_group",
                "measure",
            ]
            .iter()
            .map(|c| pts.text(i, c).unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\u{1f}");
            keys.push(k);
        }
    }
    Ok(keys)
}

/// The effects that had the paper's (non-zero) sign in the committed report and lost it now,
/// one message each (empty: none).
pub fn lost_agreement(committed: &[String], now: &[Effect]) -> Vec<String> {
    let mut out = Vec::new();
    for k in committed {
        match now.iter().find(|e| &e.key() == k) {
            Some(e) if e.verdict() == Verdict::Same => {}
            Some(e) => out.push(format!(
                "{}: '{}' {} on {} ({}): ours {} against the paper's {} — had the paper's sign",
                e.experiment,
                e.row,
                crate::table::measure_name(&e.measure),
                e.group,
                e.paper_group,
                fmt_change(e, e.ours_change()),
                fmt_change(e, e.paper_change())
            )),
            None => out.push(format!(
                "effect {} is in the committed report but no longer compared",
                k.replace('\u{1f}', " / ")
            )),
        }
    }
    out
}

/// Every effect of the experiments whose results exist under `root` (an experiment with paper
/// figures but no results is an error: the report must cover every table).
pub fn collect(exps: &[Experiment], root: &Path) -> Result<Vec<Effect>> {
    let mut all = Vec::new();
    for e in exps {
        if e.paper.is_empty() || !e.table.effects {
            continue;
        }
        let dir = root.join(&e.id);
        if !dir.join("points.csv").exists() {
            if e.reproduce {
                bail!(
                    "{}: no results under {} (run `ctxbench run {}` first)",
                    e.id,
                    dir.display(),
                    e.path.display()
                );
            }
            continue;
        }
        let pts = Points::read(&dir).with_context(|| format!("fidelity of {}", e.id))?;
        all.extend(effects(e, &pts));
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::catalog;

    fn experiment(dir: &Path, table: &str, paper: &str) -> Experiment {
        let p = dir.join("experiments/x.toml");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let text = format!(
            r#"
[settings]
dataset = "a"
[sweep]
dataset = ["a", "b"]
[table]
group_by = "dataset"
groups = [{{ value = "a", label = "A" }}, {{ value = "b", label = "B" }}]
measures = ["wer", "rtfx"]
{table}
[[rows]]
row = "base"
[[rows]]
row = "lat"
method = "lattice-biasing"
bias_list = "sequences"
{paper}
"#
        );
        std::fs::write(&p, text).unwrap();
        Experiment::load(&p, catalog()).unwrap()
    }

    fn points(rows: &[(&str, &str, f64, f64)]) -> Points {
        Points {
            columns: ["section", "row", "dataset", "wer", "rtfx"]
                .map(String::from)
                .to_vec(),
            rows: rows
                .iter()
                .map(|(r, d, w, x)| {
                    vec![
                        Some(String::new()),
                        Some(r.to_string()),
                        Some(d.to_string()),
                        Some(w.to_string()),
                        Some(x.to_string()),
                    ]
                })
                .collect(),
        }
    }

    const PAPER: &str = r#"
[[paper]]
row = "base"
group = "A"
wer = 30.0
rtfx = 100
[[paper]]
row = "lat"
group = "A"
wer = 28.0
rtfx = 50
cause = "the list"
[[paper]]
row = "base"
group = "003: Other"
wer = 10.0
[[paper]]
row = "lat"
group = "003: Other"
wer = 10.2
"#;

    #[test]
    fn effects_pair_named_blocks_and_compare_other_data_with_each_of_ours() {
        let d = tempfile::tempdir().unwrap();
        let e = experiment(d.path(), "", PAPER);
        // A: WER 20 → 21 (paper −2: opposite), RTFx 1000 → 980 (−2%: none, paper −50%).
        // B: WER 20 → 19.1 (−0.9).
        let pts = points(&[
            ("base", "a", 20.0, 1000.0),
            ("base", "b", 20.0, 800.0),
            ("lat", "a", 21.0, 980.0),
            ("lat", "b", 19.1, 400.0),
        ]);
        let fx = effects(&e, &pts);
        let got: Vec<(&str, &str, &str, Verdict, bool)> = fx
            .iter()
            .map(|f| {
                (
                    f.group.as_str(),
                    f.paper_group.as_str(),
                    f.measure.as_str(),
                    f.verdict(),
                    f.within_x2(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                // The paper's block A is ours A only.
                ("A", "A", "rtfx", Verdict::PaperOnly, false),
                ("A", "A", "wer", Verdict::Opposite, false),
                // Its other data (+0.2: none) is compared with both of ours.
                ("A", "003: Other", "wer", Verdict::OursOnly, false),
                ("B", "003: Other", "wer", Verdict::OursOnly, false),
            ]
        );
        assert_eq!(fx[1].cause, "the list");
        assert!((fx[0].ours_change() + 2.0).abs() < 1e-9);
        assert!((fx[0].paper_change() + 50.0).abs() < 1e-9);
        let s = Summary::of(&fx);
        assert_eq!((s.n, s.same, s.opposite, s.within_x2), (4, 0, 1, 0));
    }

    #[test]
    fn within_two_needs_the_same_sign_and_a_ratio_in_half_to_double() {
        let mk = |ours: (f64, f64), paper: (f64, f64)| Effect {
            experiment: "x".into(),
            section: String::new(),
            row: "r".into(),
            group: "A".into(),
            columns: Columns::Simulated,
            paper_group: "A".into(),
            measure: "wer".into(),
            ours,
            paper,
            cause: String::new(),
        };
        assert!(mk((20.0, 19.0), (30.0, 28.0)).within_x2()); // −1 vs −2: ratio 0.5
        assert!(!mk((20.0, 19.1), (30.0, 28.0)).within_x2()); // −0.9 vs −2: 0.45
        assert!(!mk((20.0, 24.1), (30.0, 28.0)).within_x2()); // +4.1: opposite
        assert!(mk((20.0, 20.2), (30.0, 29.8)).within_x2()); // both none

        // Relative: −2 from 20 (10%) against −0.5 from 6 (8.3%) is within ×2; absolute is not.
        let e = mk((20.0, 18.0), (6.0, 5.5));
        assert!(!e.within_x2() && e.within_x2_relative());
        // −4 from 10 (40%) against −2 from 30 (6.7%): absolute within ×2, relative not.
        let e = mk((10.0, 6.0), (30.0, 28.0));
        assert!(e.within_x2() && !e.within_x2_relative());
        assert_eq!(mk((20.0, 20.2), (30.0, 29.8)).verdict(), Verdict::Same);
        assert_eq!(mk((20.0, 20.3), (30.0, 29.8)).verdict(), Verdict::OursOnly);
    }

    #[test]
    fn the_baseline_row_can_be_named_and_a_check_finds_a_lost_sign() {
        let d = tempfile::tempdir().unwrap();
        let e = experiment(d.path(), "baseline = \"lat\"", PAPER);
        let pts = points(&[
            ("base", "a", 20.0, 1000.0),
            ("base", "b", 20.0, 800.0),
            ("lat", "a", 21.0, 980.0),
            ("lat", "b", 19.1, 400.0),
        ]);
        // base − lat: ours −1.0 on A, the paper's +2.0.
        let fx = effects(&e, &pts);
        let wer_a = fx
            .iter()
            .find(|f| f.measure == "wer" && f.group == "A" && f.paper_group == "A")
            .unwrap();
        assert_eq!(wer_a.row, "base");
        assert_eq!(wer_a.verdict(), Verdict::Opposite);
        // A report where it agreed, checked against now: one loss named.
        let agreed = points(&[
            ("base", "a", 22.0, 1000.0),
            ("base", "b", 20.0, 800.0),
            ("lat", "a", 21.0, 980.0),
            ("lat", "b", 19.1, 400.0),
        ]);
        let before = effects(&e, &agreed);
        let out = d.path().join("fidelity");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("effects.csv"), to_csv(&before)).unwrap();
        let keys = agreeing_keys(&out).unwrap();
        assert_eq!(keys.len(), 1, "{keys:?}");
        let lost = lost_agreement(&keys, &fx);
        assert_eq!(lost.len(), 1);
        assert!(lost[0].contains("'base' WER on A"), "{}", lost[0]);
        assert!(lost_agreement(&keys, &before).is_empty());
    }
}
