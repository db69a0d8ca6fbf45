//! The tables' prose states figures its table holds: every effect a description quotes as
//! `A → B` names two cells of the experiment's committed results/<id>/table.md (ours or the
//! paper's rows). A table rerun without its prose updated fails here.

use std::collections::BTreeSet;
use std::path::Path;

/// The cells of a Markdown table page, bold and italics stripped.
fn cells(table_md: &str) -> BTreeSet<String> {
    table_md
        .lines()
        .filter(|l| l.starts_with('|'))
        .flat_map(|l| l.split('|'))
        .map(|c| c.trim().trim_matches('*').to_string())
        .collect()
}

/// Every `A → B` (or `A -> B`) of two decimal numbers in `text`.
fn arrows(text: &str) -> Vec<(String, String)> {
    let number = |s: &str, from_end: bool| -> String {
        let it: Vec<char> = if from_end {
            s.chars().rev().collect()
        } else {
            s.chars().collect()
        };
        let n: String = it
            .into_iter()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let n = if from_end {
            n.chars().rev().collect()
        } else {
            n
        };
        n.trim_matches('.').to_string()
    };
    let mut out = Vec::new();
    for arrow in ["→", "->"] {
        let mut rest = text;
        let mut before = String::new();
        while let Some(i) = rest.find(arrow) {
            before.push_str(&rest[..i]);
            let a = number(before.trim_end(), true);
            let after = rest[i + arrow.len()..].trim_start();
            let b = number(after, false);
            if a.contains('.') && b.contains('.') {
                out.push((a, b));
            }
            before.clear();
            rest = &rest[i + arrow.len()..];
        }
    }
    out
}

#[test]
fn arrows_are_found_in_prose() {
    assert_eq!(
        arrows("WER 15.5 → 13.0 at 6, NE-WER 18.6 -> 11.9; 3 → 4 and x → 2.0"),
        [
            ("15.5".to_string(), "13.0".to_string()),
            ("18.6".to_string(), "11.9".to_string())
        ]
    );
}

#[test]
fn every_quoted_effect_is_in_its_table() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut checked = 0;
    let mut wrong = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(root.join("experiments"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    for f in files {
        let id = f.file_stem().unwrap().to_string_lossy().into_owned();
        let table = root.join("results").join(&id).join("table.md");
        let Ok(md) = std::fs::read_to_string(&table) else {
            continue;
        };
        let doc: toml::Value = toml::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let desc = doc
            .get("description")
            .and_then(|d| d.as_str())
            .unwrap_or("");
        let have = cells(&md);
        for (a, b) in arrows(desc) {
            checked += 1;
            for n in [&a, &b] {
                if !have.contains(n.as_str()) {
                    wrong.push(format!(
                        "{id}: '{a} → {b}' quotes {n}, not a cell of its table"
                    ));
                }
            }
        }
    }
    assert!(checked >= 10, "only {checked} quoted effects found");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
