//! The lists a setup gives its utterances: a set-wide kind's one list (a global list, the
//! test words, other words of the graph) and each utterance's list of a kind.

use crate::pipeline::lists::{dataset_list_of, ListKind};
use crate::pipeline::setup::Setup;
use ctx_core::bias::BiasList;
use ctx_data::dataset::Utterance;
use std::collections::BTreeSet;

/// The list of a set-wide kind (one list for every utterance: a global list, the test words,
/// the other words); `None` for per-utterance kinds.
pub fn set_list(setup: &Setup, kind: &ListKind) -> Option<BiasList> {
    let test_words = || -> BTreeSet<&str> {
        setup
            .dataset
            .utterances
            .iter()
            .flat_map(|u| u.words.iter().map(String::as_str))
            .collect()
    };
    match kind {
        ListKind::File(f) => crate::pipeline::lists::file_list(f)
            .ok()
            .map(|l| crate::pipeline::lists::bias_list_of(&l)),
        ListKind::Plus(own, f) => {
            let own = set_list(setup, own)?;
            let file = crate::pipeline::lists::file_list(f)
                .ok()
                .map(|l| crate::pipeline::lists::bias_list_of(&l))?;
            Some(crate::pipeline::lists::union(own, file))
        }
        // A per-document named list is no set-wide list.
        ListKind::Global(name) if setup.dataset.doc_lists.contains_key(name) => None,
        ListKind::Global(name) => Some(
            setup
                .dataset
                .global_lists
                .get(name)
                .cloned()
                .unwrap_or_default(),
        ),
        ListKind::TestWords => Some(BiasList {
            phrases: test_words()
                .into_iter()
                .map(|w| vec![w.to_string()])
                .collect(),
        }),
        ListKind::OtherWords => {
            let test = test_words();
            let fnv = |w: &str| ctx_core::hash::fnv1a(w.as_bytes());
            let mut other: Vec<&str> = setup
                .graph
                .symbols
                .words
                .iter()
                .map(|(_, w)| w)
                .filter(|w| {
                    !test.contains(w) && !w.starts_with('#') && !w.starts_with('<') && *w != "<eps>"
                })
                .collect();
            other.sort_by_key(|w| (fnv(w), *w));
            other.truncate(test.len());
            Some(BiasList {
                phrases: other.into_iter().map(|w| vec![w.to_string()]).collect(),
            })
        }
        _ => None,
    }
}

/// What tells an utterance's list of `kind` from another's, cheaply: the phrases of its
/// [`ListKind::identity`] (for `KIND+file:PATH` the own list alone), so that a build memoised
/// on it makes a 20,000-phrase union once per distinct own list, not once per utterance.
pub fn list_identity(setup: &Setup, u: &Utterance, kind: &ListKind) -> Vec<Vec<String>> {
    list_of(setup, u, kind.identity()).phrases
}

/// The biasing list of an utterance.
pub fn list_of(setup: &Setup, u: &Utterance, kind: &ListKind) -> BiasList {
    dataset_list_of(&setup.dataset, u, kind)
        .unwrap_or_else(|| set_list(setup, kind).unwrap_or_default())
}
