//! What the experiment parser knows of the method families: their components and settings
//! ([`Catalog`]), and method names ([`Method`]: `baseline` or a family's components
//! `+`-joined).

use super::point::{Method, Point};
use crate::settings::{Block, Common, SettingSpec};
use crate::settings::{Settings, Value};
use anyhow::{anyhow, bail, Result};
use std::collections::BTreeMap;
use std::fmt;

/// A part of a method name (`g-boosting`, `word-boosting`, ...).
#[derive(Debug, Clone, Copy)]
pub struct Component {
    /// Its name in method strings and in the `component` of its settings.
    pub name: &'static str,
    /// What it does.
    pub doc: &'static str,
}

/// What the experiment parser knows of a method family: its names and settings, and how its
/// settings are checked. The runnable side (setup, decoding) extends it in `methods`; the
/// families are handed to the parser in a [`Catalog`], never imported from here.
pub trait FamilySpec: Sync {
    /// Its name (error messages, `ctxbench settings`).
    fn name(&self) -> &'static str;
    /// The component every method of the family names (`None`: the default family, whose
    /// method with no component is `baseline`).
    fn marker(&self) -> Option<&'static str>;
    /// Its components, in the canonical order of method names.
    fn components(&self) -> Vec<Component>;
    /// Its settings (each owned by one of its components, the blocks of
    /// [`crate::settings_block!`] in order), in points.csv column order.
    fn settings(&self) -> Vec<SettingSpec>;
    /// Checks its settings' values (closed choices, ranges); `what` names the row and file.
    fn check(&self, s: &Settings, what: &str) -> Result<()>;
}

/// The method families an experiment may name, the default (`baseline`) first, and every
/// setting in points.csv column order (the common ones, then each family's).
///
/// Two families may share a component (`word-boosting`) and a setting (`word_boost`): a setting
/// declared by several families is one column, read by a method when it has any of its owners'
/// components; an owner may also be a family's name (every method of that family reads it).
pub struct Catalog {
    families: Vec<&'static dyn FamilySpec>,
    settings: Vec<SettingSpec>,
    /// Setting → the components (or family names) that read it.
    owners: BTreeMap<&'static str, Vec<&'static str>>,
}

impl fmt::Debug for Catalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.families.iter().map(|x| x.name()).collect();
        f.debug_struct("Catalog").field("families", &names).finish()
    }
}

impl Catalog {
    /// A catalog of these families (the first one runs `baseline`).
    pub fn new(families: Vec<&'static dyn FamilySpec>) -> Self {
        let mut settings: Vec<SettingSpec> = Vec::new();
        let mut owners: BTreeMap<&'static str, Vec<&'static str>> = BTreeMap::new();
        let all = Common::SPECS
            .iter()
            .copied()
            .chain(families.iter().flat_map(|f| f.settings()));
        for sp in all {
            let o = owners.entry(sp.name).or_default();
            if o.is_empty() {
                settings.push(sp);
            }
            if !o.contains(&sp.component) {
                o.push(sp.component);
            }
        }
        Catalog {
            families,
            settings,
            owners,
        }
    }

    /// Whether method `m` reads setting `key` (it has one of the setting's owners).
    pub fn reads(&self, m: &Method, key: &str) -> bool {
        let fam = self.families[m.family].name();
        self.owners
            .get(key)
            .is_some_and(|o| o.iter().any(|c| m.has(c) || *c == fam))
    }

    /// The components (or family names) that read a setting, for messages.
    pub(crate) fn owners_of(&self, key: &str) -> String {
        self.owners.get(key).map_or(String::new(), |o| o.join(", "))
    }

    /// Every setting, in the column order of points.csv.
    pub fn settings(&self) -> &[SettingSpec] {
        &self.settings
    }

    /// The spec of a setting.
    pub fn setting(&self, name: &str) -> Option<&SettingSpec> {
        self.settings.iter().find(|s| s.name == name)
    }

    /// The family that runs a method.
    pub fn family(&self, m: &Method) -> &'static dyn FamilySpec {
        self.families[m.family]
    }

    /// A checked point: only the settings its method reads are kept (so the key of a point
    /// does not change with settings it ignores), the required ones must be there, and every
    /// value is checked (common ones here, the family's by the family); `what` names the place.
    /// Experiment grids and `ctxbench decode` make their points through it.
    pub fn point(&self, mut p: Point, what: &str) -> Result<Point> {
        p.settings.retain(|k, _| self.reads(&p.method, k));
        let fam = self.family(&p.method);
        for sp in self.settings.iter().filter(|sp| sp.required) {
            let needed = self.owners[sp.name].iter().any(|c| p.method.has(c));
            if needed && !p.settings.contains_key(sp.name) {
                bail!("{what}: '{}' is not set", sp.name);
            }
        }
        Common::read(&p.settings)
            .and_then(|c| c.check())
            .map_err(|e| anyhow!("{what}: {e}"))?;
        fam.check(&p.settings, what)?;
        Ok(p)
    }

    /// Built-in defaults (a setting without one is unset unless given, e.g. `noise`).
    pub fn defaults(&self) -> Settings {
        self.settings
            .iter()
            .filter_map(|sp| Some((sp.name.to_string(), (sp.default)()?)))
            .collect()
    }

    /// The known settings, for error messages.
    pub(crate) fn known(&self) -> String {
        self.settings
            .iter()
            .map(|s| s.name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Parses a method name; the components are kept in their family's canonical order.
    pub fn method(&self, s: &str) -> Result<Method> {
        if s == "baseline" {
            return Ok(Method {
                family: 0,
                parts: Vec::new(),
            });
        }
        let fams = &self.families;
        let known = || {
            let mut names = vec!["baseline"];
            for f in fams {
                for c in f.components() {
                    if !names.contains(&c.name) {
                        names.push(c.name);
                    }
                }
            }
            names.join(", ")
        };
        let mut parts: Vec<&str> = Vec::new();
        for p in s.split('+') {
            let p = p.trim();
            if !fams
                .iter()
                .any(|f| f.components().iter().any(|c| c.name == p))
            {
                bail!(
                    "unknown method '{p}' ({}, or several of one family joined with '+')",
                    known()
                );
            }
            if parts.contains(&p) {
                bail!("method '{s}' names {p} twice");
            }
            parts.push(p);
        }
        // The families that have every part; of those, the ones whose marker is named.
        let has_all = |f: &&'static dyn FamilySpec| {
            parts
                .iter()
                .all(|p| f.components().iter().any(|c| c.name == *p))
        };
        let with_all: Vec<usize> = (0..fams.len()).filter(|&i| has_all(&fams[i])).collect();
        let marked: Vec<usize> = with_all
            .iter()
            .copied()
            .filter(|&i| fams[i].marker().is_none_or(|m| parts.contains(&m)))
            .collect();
        let family = match (marked.as_slice(), with_all.as_slice()) {
            ([f], _) => *f,
            ([], [f, ..]) => {
                let m = fams[*f]
                    .marker()
                    .expect("an unmarked family is always kept");
                bail!("method '{s}': components of the {m} family need '{m}' (write {m}+{s})");
            }
            ([], []) => {
                let of = |p: &str| {
                    fams.iter()
                        .find(|f| f.components().iter().any(|c| c.name == p))
                        .map_or("?", |f| f.name())
                };
                let names: Vec<&str> = parts.iter().map(|p| of(p)).collect();
                let two: Vec<&str> = names.iter().fold(Vec::new(), |mut v, n| {
                    if !v.contains(n) {
                        v.push(*n);
                    }
                    v
                });
                bail!(
                    "method '{s}' joins components of two families ({})",
                    two.join(" and ")
                );
            }
            (several, _) => {
                let names: Vec<&str> = several.iter().map(|&i| fams[i].name()).collect();
                bail!("method '{s}' is ambiguous: families {}", names.join(", "));
            }
        };
        let comps = fams[family].components();
        let mut parts: Vec<(usize, &'static str)> = parts
            .iter()
            .map(|p| {
                let ci = comps
                    .iter()
                    .position(|c| c.name == *p)
                    .expect("has all parts");
                (ci, comps[ci].name)
            })
            .collect();
        parts.sort();
        Ok(Method {
            family,
            parts: parts.into_iter().map(|(_, n)| n).collect(),
        })
    }

    /// Checks that `key` is a setting and that method `m` reads it.
    pub(crate) fn check_method(&self, m: &Method, key: &str, what: &str) -> Result<()> {
        let spec = self
            .setting(key)
            .ok_or_else(|| anyhow!("{what}: unknown setting '{key}' (known: {})", self.known()))?;
        if !self.reads(m, spec.name) {
            bail!(
                "{what}: method {m} has no setting '{key}' (it belongs to {})",
                self.owners_of(key)
            );
        }
        Ok(())
    }

    /// Reads settings from a TOML table, checking every key and type; `what` names the place.
    pub(crate) fn read_settings(&self, t: &toml::Table, what: &str) -> Result<Settings> {
        let mut s = Settings::new();
        for (k, v) in t {
            let spec = self.setting(k).ok_or_else(|| {
                anyhow!("{what}: unknown setting '{k}' (known: {})", self.known())
            })?;
            let v = Value::from_toml(v, spec.ty).map_err(|e| anyhow!("{what}: '{k}': {e}"))?;
            s.insert(k.clone(), v);
        }
        Ok(s)
    }

    /// Reads a sweep table (setting → array of values), checking every key and type.
    pub(crate) fn read_sweep(
        &self,
        t: &toml::Table,
        what: &str,
    ) -> Result<Vec<(String, Vec<Value>)>> {
        let mut out = Vec::new();
        for (k, v) in t {
            let spec = self.setting(k).ok_or_else(|| {
                anyhow!("{what}: unknown setting '{k}' (known: {})", self.known())
            })?;
            let arr = v
                .as_array()
                .ok_or_else(|| anyhow!("{what}: '{k}' must be an array of values"))?;
            if arr.is_empty() {
                bail!("{what}: '{k}' sweeps over no values");
            }
            let vals = arr
                .iter()
                .map(|x| Value::from_toml(x, spec.ty).map_err(|e| anyhow!("{what}: '{k}': {e}")))
                .collect::<Result<Vec<_>>>()?;
            out.push((k.clone(), vals));
        }
        Ok(out)
    }
}
