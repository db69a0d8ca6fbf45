//! `ctxbench table`: an experiment's points.csv laid out like the paper's table, in Markdown and
//! LaTeX (booktabs), with the paper's published figures beside ours.

use crate::experiment::{Experiment, Overrides};
use crate::results::Points;
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::path::Path;

/// A rendered table: header blocks, then body lines.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    /// The first column's header.
    pub corner: String,
    /// Column blocks: (label, measure names).
    pub blocks: Vec<(String, Vec<String>)>,
    /// Body: a section line or a row of cells.
    pub body: Vec<Line>,
}

/// One body line of a [`Grid`].
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// A section heading spanning the table.
    Section(String),
    /// A row: its label and one cell per column ("-" when missing).
    Row(String, Vec<String>),
}

/// Display name of a measure.
pub fn measure_name(m: &str) -> &str {
    match m {
        "wer" => "WER",
        "ne_wer" => "NE-WER",
        "u_wer" => "U-WER",
        "fbai_wer" => "WER (score.py)",
        "fbai_u_wer" => "U-WER (score.py)",
        "fbai_b_wer" => "B-WER (score.py)",
        "ne_acc" => "NE-A",
        "precision" => "P",
        "recall" => "R",
        "f1" => "F1",
        "rtfx" => "RTFx",
        "rtfx_am" => "RTFx with AM",
        "am_s" => "AM (s)",
        "audio_s" => "audio (s)",
        "decode_s" => "decode (s)",
        "peak_mem_mb" => "peak MB",
        "graph_states" => "states",
        "graph_arcs" => "arcs",
        "lattice_density" => "arcs/frame",
        "oracle_wer" => "OWER",
        "boosted_arcs" => "boosted arcs/utt",
        "switch_ms" => "switch ms",
        "keywords_in_lm" => "keywords in LM",
        "wl_ngrams" => "WL n-grams",
        "wl_nodes" => "WL trie nodes",
        "wl_build_s" => "WL build (s)",
        other => other,
    }
}

/// A measure formatted as the tables print it.
pub fn format_measure(m: &str, v: f64) -> String {
    match m {
        "rtfx" | "rtfx_am" if v >= 100.0 => format!("{v:.0}"),
        "peak_mem_mb" | "utterances" | "graph_states" | "graph_arcs" | "phrases_kept"
        | "phrases_dropped" | "boosted_arcs" | "contexts" | "keywords_in_lm" | "wl_ngrams"
        | "wl_nodes" | "phrases_duplicate" | "words_c0" | "words_c1_2" | "words_c3_10"
        | "words_c11_100" | "words_c101" => {
            format!("{v:.0}")
        }
        "lattice_density" => format!("{v:.2}"),
        "context_s" | "wl_build_s" => format!("{v:.3}"),
        _ => format!("{v:.1}"),
    }
}

/// Refuses, before anything decodes, an experiment two of whose points would fall in one table
/// cell (two `[[rows]]` with one label and no setting that tells them apart in the table): after
/// the run one of them would have vanished from table.md.
pub fn check_cells(exp: &Experiment, points: &[crate::experiment::Point]) -> Result<()> {
    let mut columns: Vec<String> = vec!["section".into(), "row".into(), "method".into()];
    for p in points {
        for k in p.settings.keys() {
            if !columns.contains(k) {
                columns.push(k.clone());
            }
        }
    }
    let rows = points
        .iter()
        .map(|p| {
            columns
                .iter()
                .map(|c| match c.as_str() {
                    "section" => Some(p.section.clone()),
                    "row" => Some(p.row.clone()),
                    "method" => Some(p.method.to_string()),
                    k => p.settings.get(k).map(|v| v.to_string()),
                })
                .collect()
        })
        .collect();
    grid(exp, &Points { columns, rows })
        .map(|_| ())
        .map_err(|e| anyhow::anyhow!("{}: {e}", exp.path.display()))
}

/// Our column blocks as (setting value, label): the table's `groups`, else each value of its
/// `group_by` setting in order of appearance, else one unnamed block.
pub fn column_groups(exp: &Experiment, pts: &Points) -> Vec<(String, String)> {
    let spec = &exp.table;
    if !spec.groups.is_empty() {
        return spec
            .groups
            .iter()
            .map(|g| (g.value.clone(), g.label.clone()))
            .collect();
    }
    let Some(g) = &spec.group_by else {
        return vec![(String::new(), String::new())];
    };
    let mut groups: Vec<(String, String)> = Vec::new();
    for i in 0..pts.rows.len() {
        let v = pts.text(i, g).unwrap_or("").to_string();
        if !groups.iter().any(|(x, _)| *x == v) {
            groups.push((v.clone(), v));
        }
    }
    groups
}

/// Lays out the points of an experiment.
pub fn grid(exp: &Experiment, pts: &Points) -> Result<Grid> {
    let spec = &exp.table;
    let measures = &spec.measures;
    let groups = column_groups(exp, pts);
    // Swept settings per row label (the group_by setting is a column, not a row).
    let mut swept: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in exp.points(&Overrides::default())? {
        let e = swept.entry(p.row.clone()).or_default();
        for k in p.swept {
            if Some(&k) != spec.group_by.as_ref() && !e.contains(&k) {
                e.push(k);
            }
        }
    }
    let row_key = |i: usize| -> (String, String) {
        let row = pts.text(i, "row").unwrap_or("").to_string();
        let mut label = row.clone();
        for k in swept.get(&row).into_iter().flatten() {
            label.push_str(&format!(", {k} = {}", pts.text(i, k).unwrap_or("-")));
        }
        (row, label)
    };
    let paper_groups: Vec<String> = {
        let mut v: Vec<String> = Vec::new();
        for p in &exp.paper {
            if !v.contains(&p.group) {
                v.push(p.group.clone());
            }
        }
        v
    };
    // A paper row names its section when two sections share a row label.
    let paper_of = |p: &crate::experiment::PaperRow, section: &str, row: &str| {
        p.row == row && (p.section.is_empty() || p.section == section)
    };
    let paper_cells = |section: &str, row: &str, group: &str| -> Vec<String> {
        let p = exp
            .paper
            .iter()
            .find(|p| paper_of(p, section, row) && p.group == group);
        measures
            .iter()
            .map(|m| {
                p.and_then(|p| p.values.get(m))
                    .map_or("-".into(), |v| format_measure(m, *v))
            })
            .collect()
    };
    let columns_layout = spec.paper_layout == "columns";
    let mut blocks: Vec<(String, Vec<String>)> = groups
        .iter()
        .map(|(_, l)| (l.clone(), measures.clone()))
        .collect();
    if columns_layout {
        for g in &paper_groups {
            let label = if g.is_empty() {
                "paper".to_string()
            } else {
                format!("paper {g}")
            };
            blocks.push((label, measures.clone()));
        }
    }
    // Body: table rows in order of first appearance.
    let mut order: Vec<(String, String, String)> = Vec::new(); // (section, row, label)
    for i in 0..pts.rows.len() {
        let (row, label) = row_key(i);
        let section = pts.text(i, "section").unwrap_or("").to_string();
        if !order.iter().any(|(s, _, l)| *l == label && *s == section) {
            order.push((section, row, label));
        }
    }
    let sections: std::collections::BTreeSet<&str> =
        order.iter().map(|(s, _, _)| s.as_str()).collect();
    let show_sections = sections.len() > 1 || sections.iter().any(|s| !s.is_empty());
    let mut body = Vec::new();
    let mut last_section: Option<String> = None;
    let mut papered: Vec<(String, String)> = Vec::new();
    for (section, row, label) in &order {
        if show_sections && last_section.as_ref() != Some(section) {
            body.push(Line::Section(section.clone()));
            last_section = Some(section.clone());
        }
        let mut cells = Vec::new();
        for (value, glabel) in &groups {
            let mut at = (0..pts.rows.len()).filter(|&i| {
                row_key(i).1 == *label
                    && pts.text(i, "section").unwrap_or("") == section
                    && spec
                        .group_by
                        .as_ref()
                        .is_none_or(|g| pts.text(i, g).unwrap_or("") == value)
            });
            let i = at.next();
            if let Some(j) = at.next() {
                // Two points for one cell: one would vanish from the table.
                bail!(
                    "{}: two points for one table cell — row '{label}'{}{} (its points {} and {}, \
                     in points.csv order): give the [[rows]] distinct labels",
                    exp.id,
                    if section.is_empty() {
                        String::new()
                    } else {
                        format!(", section '{section}'")
                    },
                    if glabel.is_empty() {
                        String::new()
                    } else {
                        format!(", column block '{glabel}'")
                    },
                    i.expect("a first point") + 1,
                    j + 1
                );
            }
            for m in measures {
                cells.push(
                    i.and_then(|i| pts.num(i, m))
                        .map_or("-".into(), |v| format_measure(m, v)),
                );
            }
        }
        let key = (section.clone(), row.clone());
        let first_of_row = !papered.contains(&key);
        if columns_layout {
            for g in &paper_groups {
                if first_of_row {
                    cells.extend(paper_cells(section, row, g));
                } else {
                    cells.extend(measures.iter().map(|_| "-".to_string()));
                }
            }
        }
        body.push(Line::Row(label.clone(), cells));
        if !columns_layout && first_of_row && exp.paper.iter().any(|p| paper_of(p, section, row)) {
            let mut cells = Vec::new();
            for (_, l) in &groups {
                cells.extend(paper_cells(section, row, l));
            }
            body.push(Line::Row("*paper*".into(), cells));
        }
        papered.push(key);
    }
    Ok(Grid {
        corner: exp
            .table
            .row_header
            .clone()
            .unwrap_or_else(|| "Row".to_string()),
        blocks,
        body,
    })
}

/// The grid as a Markdown table.
pub fn markdown(g: &Grid) -> String {
    // A `|` inside a cell would end it (a row label with one broke the table).
    let md = |t: &str| t.replace('|', "\\|");
    let mut head = vec![md(&g.corner)];
    for (label, ms) in &g.blocks {
        for (j, m) in ms.iter().enumerate() {
            let name = measure_name(m);
            head.push(if j == 0 && !label.is_empty() {
                md(&format!("{label} {name}"))
            } else {
                md(name)
            });
        }
    }
    let width = head.len();
    let mut s = format!("| {} |\n|{}\n", head.join(" | "), "---|".repeat(width));
    for line in &g.body {
        match line {
            Line::Section(t) => {
                s.push_str(&format!("| **{}** |{}\n", md(t), " |".repeat(width - 1)));
            }
            Line::Row(label, cells) => {
                s.push_str(&format!("| {} | {} |\n", md(label), cells.join(" | ")));
            }
        }
    }
    s
}

/// Escapes text for LaTeX.
fn tex(s: &str) -> String {
    let mut o = String::new();
    for c in s.chars() {
        match c {
            '&' | '%' | '$' | '#' | '_' | '{' | '}' => {
                o.push('\\');
                o.push(c);
            }
            '~' => o.push_str("\\textasciitilde{}"),
            '^' => o.push_str("\\textasciicircum{}"),
            '\\' => o.push_str("\\textbackslash{}"),
            '∘' => o.push_str("$\\circ$"),
            '−' => o.push_str("$-$"),
            '*' => {}
            _ => o.push(c),
        }
    }
    o
}

/// The grid as a LaTeX booktabs tabular.
pub fn latex(g: &Grid) -> String {
    let ncols = 1 + g.blocks.iter().map(|(_, m)| m.len()).sum::<usize>();
    let mut spec = String::from("l");
    for (_, ms) in &g.blocks {
        spec.push(' ');
        spec.push_str(&"r".repeat(ms.len()));
    }
    let mut s = format!("\\begin{{tabular}}{{{spec}}}\n\\toprule\n");
    if g.blocks.iter().any(|(l, _)| !l.is_empty()) {
        let mut line = String::new();
        let mut rules = String::new();
        let mut col = 2;
        for (label, ms) in &g.blocks {
            line.push_str(&format!(
                " & \\multicolumn{{{}}}{{c}}{{{}}}",
                ms.len(),
                tex(label)
            ));
            rules.push_str(&format!("\\cmidrule(lr){{{}-{}}}", col, col + ms.len() - 1));
            col += ms.len();
        }
        s.push_str(&format!("{line} \\\\\n{rules}\n"));
    }
    let mut head = vec![tex(&g.corner)];
    for (_, ms) in &g.blocks {
        head.extend(ms.iter().map(|m| tex(measure_name(m))));
    }
    s.push_str(&format!("{} \\\\\n\\midrule\n", head.join(" & ")));
    for line in &g.body {
        match line {
            Line::Section(t) => s.push_str(&format!(
                "\\multicolumn{{{ncols}}}{{l}}{{\\textit{{{}}}}} \\\\\n",
                tex(t)
            )),
            Line::Row(label, cells) => {
                let label = if label == "*paper*" {
                    "\\quad\\textit{paper}".to_string()
                } else {
                    tex(label)
                };
                let cells: Vec<String> = cells.iter().map(|c| tex(c)).collect();
                s.push_str(&format!("{label} & {} \\\\\n", cells.join(" & ")));
            }
        }
    }
    s.push_str("\\bottomrule\n\\end{tabular}\n");
    s
}

/// The command that made a results folder, from its run.json.
fn command(exp: &Experiment, dir: &Path) -> String {
    let mut c = format!("ctxbench run {}", exp.path.display());
    if let Ok(text) = std::fs::read_to_string(dir.join("run.json")) {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
            for o in v["overrides"].as_array().into_iter().flatten() {
                if let Some(o) = o.as_str() {
                    c.push_str(&format!(" --set {o}"));
                }
            }
        }
    }
    c
}

/// Writes `table.md` and `table.tex` into `dir`; returns the Markdown.
pub fn write_tables(exp: &Experiment, pts: &Points, dir: &Path) -> Result<String> {
    let g = grid(exp, pts)?;
    let mut md = String::new();
    if !exp.title.is_empty() {
        md.push_str(&format!("# {}\n\n", exp.title));
    }
    if !exp.description.is_empty() {
        md.push_str(&exp.description);
        md.push_str("\n\n");
    }
    md.push_str(&format!("Command: `{}`.\n\n", command(exp, dir)));
    md.push_str(&markdown(&g));
    for p in &exp.plots {
        md.push_str(&format!("\n![{}](plot-{}.png)\n", p.title, p.name));
    }
    ctx_core::io::write_atomic(&dir.join("table.md"), |w| w.write_all(md.as_bytes()))?;
    // The folder's README (what a reader browsing results/ sees first): the same page, and what
    // the other files are.
    let readme = format!(
        "{md}\n## Files\n\n\
         - `points.csv`, `points.parquet`: one row per point, every setting and measure (the \
         results contract, docs/design.md §8)\n\
         - `table.md`, `table.tex`: this table (Markdown; LaTeX with booktabs)\n\
         - `run.json`: the machine, code version, git commit and seconds of the run\n\
         - `points/`: one JSON per finished point, keyed by its settings, data and code version \
         (what a rerun reuses; not committed)\n"
    );
    ctx_core::io::write_atomic(&dir.join("README.md"), |w| w.write_all(readme.as_bytes()))?;
    let tex_text = format!(
        "% {} — generated by `{}`\n{}",
        exp.title,
        command(exp, dir),
        latex(&g)
    );
    ctx_core::io::write_atomic(&dir.join("table.tex"), |w| w.write_all(tex_text.as_bytes()))?;
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(layout: &str) -> (tempfile::TempDir, Experiment, Points) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("experiments/t.toml");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(
            &p,
            format!(
                r#"
title = "T"
[sweep]
dataset = ["a", "b"]
[table]
group_by = "dataset"
groups = [{{ value = "a", label = "A" }}, {{ value = "b", label = "B" }}]
measures = ["wer", "rtfx"]
paper_layout = "{layout}"
[[rows]]
row = "base"
section = "S"
[[rows]]
row = "lat"
section = "S"
method = "lattice-biasing"
bias_list = "gt"
[[paper]]
row = "lat"
group = "B"
wer = 9.5
"#
            ),
        )
        .unwrap();
        let exp = Experiment::load(&p, crate::methods::catalog()).unwrap();
        let csv = "row,section,dataset,wer,rtfx\nbase,S,a,10.04,1234.5\nbase,S,b,20.0,99.94\nlat,S,a,9.0,\nlat,S,b,19.96,50\n";
        std::fs::write(d.path().join("points.csv"), csv).unwrap();
        let pts = Points::read(d.path()).unwrap();
        (d, exp, pts)
    }

    #[test]
    fn columns_layout_puts_ours_by_group_then_the_paper() {
        let (_d, exp, pts) = setup("columns");
        let g = grid(&exp, &pts).unwrap();
        let labels: Vec<&str> = g.blocks.iter().map(|b| b.0.as_str()).collect();
        assert_eq!(labels, ["A", "B", "paper B"]);
        assert_eq!(g.body[0], Line::Section("S".into()));
        let row =
            |s: &str, c: &[&str]| Line::Row(s.into(), c.iter().map(|x| x.to_string()).collect());
        assert_eq!(
            g.body[1],
            row("base", &["10.0", "1234", "20.0", "99.9", "-", "-"])
        );
        assert_eq!(
            g.body[2],
            row("lat", &["9.0", "-", "20.0", "50.0", "9.5", "-"])
        );
        let md = markdown(&g);
        assert!(
            md.starts_with("| Row | A WER | RTFx | B WER | RTFx | paper B WER | RTFx |\n"),
            "{md}"
        );
        let tex = latex(&g);
        assert!(tex.contains("\\multicolumn{2}{c}{paper B}"), "{tex}");
        assert!(tex.contains("\\cmidrule(lr){6-7}"), "{tex}");
        assert!(
            tex.contains("lat & 9.0 & - & 20.0 & 50.0 & 9.5 & - \\\\"),
            "{tex}"
        );
    }

    #[test]
    fn rows_layout_puts_the_paper_under_our_row() {
        let (_d, exp, pts) = setup("rows");
        let g = grid(&exp, &pts).unwrap();
        assert_eq!(g.blocks.len(), 2);
        let paper: Vec<&Line> = g
            .body
            .iter()
            .filter(|l| matches!(l, Line::Row(n, _) if n == "*paper*"))
            .collect();
        assert_eq!(paper.len(), 1);
        let row =
            |s: &str, c: &[&str]| Line::Row(s.into(), c.iter().map(|x| x.to_string()).collect());
        assert_eq!(g.body[3], row("*paper*", &["-", "-", "9.5", "-"]));
    }

    #[test]
    fn two_points_for_one_cell_are_refused_and_pipes_are_escaped() {
        let (d, exp, _) = setup("columns");
        // Two points with row 'lat' in block A (two [[rows]] sharing a label): one would vanish.
        let csv = "row,section,dataset,wer,rtfx\nbase,S,a,10.0,1\nlat,S,a,9.0,2\nlat,S,a,8.0,3\n";
        std::fs::write(d.path().join("points.csv"), csv).unwrap();
        let e = grid(&exp, &Points::read(d.path()).unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("row 'lat'") && e.contains("block 'A'") && e.contains("points 2 and 3"),
            "{e}"
        );
        let g = Grid {
            corner: "Row".into(),
            blocks: vec![(String::new(), vec!["wer".into()])],
            body: vec![Line::Row("a | b".into(), vec!["1.0".into()])],
        };
        assert!(
            markdown(&g).contains("| a \\| b | 1.0 |"),
            "{}",
            markdown(&g)
        );
    }

    #[test]
    fn latex_escapes_special_characters() {
        assert_eq!(tex("G+lat_1 & 50% ∘ x"), "G+lat\\_1 \\& 50\\% $\\circ$ x");
    }
}
