//! The seam of the biasing components that act during the search (boosters on each stream):
//! a family holds a list of them (its `SEARCH`), and reads, checks, keys, builds and reports
//! every one the same way. A new booster is a module of `methods/components` implementing
//! [`SearchComponent`] and one line in a family's list (docs/design.md §8).

use crate::experiment::Component;
use crate::pipeline::{DecodeSettings, Setup};
use crate::settings::{SettingSpec, Settings};
use anyhow::Result;
use ctx_data::dataset::Dataset;
use std::collections::BTreeMap;
use wfst_search::Booster;

/// What a search component built for a group: a booster per utterance and its figures.
pub struct Built {
    /// Per utterance, in dataset order.
    pub boosters: Vec<Booster>,
    /// Seconds spent building them: the lists arrive with their utterances, so this counts in
    /// RTFx (the `context_s` measure).
    pub build_s: f64,
    /// Measures it adds to every point of its group (points.csv columns, [`crate::experiment::MEASURES`]).
    pub measures: BTreeMap<&'static str, f64>,
    /// Phrases of its lists kept and dropped (a word outside the vocabulary), when its lists
    /// are phrases: the `phrases_kept` / `phrases_dropped` measures.
    pub phrases: Option<(f64, f64)>,
    /// What it built, for the reader of a single decode.
    pub report: String,
}

/// What a search component reads while it builds.
pub struct BuildContext<'a> {
    /// The group's setup (dataset, graph).
    pub setup: &'a Setup,
    /// The decoder settings (beam, threads).
    pub decode: &'a DecodeSettings,
}

/// A biasing component acting during the search (see the module docs).
pub trait SearchComponent: Sync {
    /// Its name in method strings and what it does.
    fn component(&self) -> Component;
    /// Its settings (a `settings_block!`'s specs).
    fn specs(&self) -> &'static [SettingSpec];
    /// Whether a point turns it on (its list is set).
    fn on(&self, s: &Settings) -> Result<bool>;
    /// Checks a point's values (closed choices, ranges).
    fn check(&self, s: &Settings) -> Result<()>;
    /// Checks the lists it names against the dataset (a global list must exist).
    fn check_lists(&self, ds: &Dataset, s: &Settings) -> Result<()>;
    /// What decoding depends on of it (`key=value;...`).
    fn key(&self, s: &Settings) -> Result<String>;
    /// Its boosters for every utterance of the group (`None` when the point does not turn it
    /// on).
    fn build(&self, cx: &BuildContext<'_>, s: &Settings) -> Result<Option<Built>>;
}

/// The components of a family's search list, as the experiment parser lists components.
pub fn components_of(list: &[&dyn SearchComponent]) -> Vec<Component> {
    list.iter().map(|c| c.component()).collect()
}

/// Their settings, in list order.
pub fn specs_of(list: &[&dyn SearchComponent]) -> Vec<SettingSpec> {
    list.iter()
        .flat_map(|c| c.specs().iter().copied())
        .collect()
}

/// What every component of `list` a point turns on built, in list order.
pub fn build_all(
    list: &[&dyn SearchComponent],
    cx: &BuildContext<'_>,
    s: &Settings,
) -> Result<Vec<Built>> {
    let mut out = Vec::new();
    for c in list {
        if let Some(b) = c.build(cx, s)? {
            out.push(b);
        }
    }
    Ok(out)
}

/// Checks every component of `list` (values) for a point.
pub fn check_all(list: &[&dyn SearchComponent], s: &Settings) -> Result<()> {
    list.iter().try_for_each(|c| c.check(s))
}

/// Checks every component's lists against the dataset.
pub fn check_lists_all(list: &[&dyn SearchComponent], ds: &Dataset, s: &Settings) -> Result<()> {
    list.iter().try_for_each(|c| c.check_lists(ds, s))
}

/// The decode-key part of every component.
pub fn key_all(list: &[&dyn SearchComponent], s: &Settings) -> String {
    list.iter()
        .map(|c| c.key(s).unwrap_or_default())
        .collect::<Vec<_>>()
        .join(";")
}
