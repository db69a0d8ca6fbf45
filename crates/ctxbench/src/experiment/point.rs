//! One point of an experiment's grid: a row's method (a [`Method`] name, parsed by the
//! catalog) and its resolved settings.

use crate::settings::Settings;
use std::fmt;

/// A method: `baseline` (the default family with no component) or a `+`-joined set of one
/// family's components, e.g. `g-boosting+lattice-biasing` or `ctc-wfst+word-boosting`
/// (DESIGN notes §8); made by [`Catalog::method`], which knows the families.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Method {
    pub(super) family: usize,
    pub(super) parts: Vec<&'static str>,
}

impl Method {
    /// Whether the method includes a component (every method has `common`).
    pub fn has(&self, component: &str) -> bool {
        component == "common" || self.parts.contains(&component)
    }

    /// The position of its family in the [`Catalog`] it was parsed with.
    pub fn family_index(&self) -> usize {
        self.family
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.parts.is_empty() {
            return f.write_str("baseline");
        }
        f.write_str(&self.parts.join("+"))
    }
}

/// One point of the grid: a row at one combination of swept values.
#[derive(Debug, Clone)]
pub struct Point {
    /// The paper's row label.
    pub row: String,
    /// The paper's section label.
    pub section: String,
    /// The method.
    pub method: Method,
    /// Every setting the method reads, resolved.
    pub settings: Settings,
    /// The settings swept at this point (their names), for labels.
    pub swept: Vec<String>,
}

impl Point {
    /// A setting as a string (empty when unset).
    pub fn get(&self, key: &str) -> String {
        self.settings
            .get(key)
            .map_or(String::new(), |v| v.to_string())
    }

    /// A short label: row, then the swept settings.
    pub fn label(&self) -> String {
        let mut s = self.row.clone();
        for k in &self.swept {
            s.push_str(&format!(", {k}={}", self.get(k)));
        }
        s
    }
}
