//! The steps every decoding experiment runs, top to bottom: dataset and graph ([`setup`]) →
//! acoustic scores and batched decoding ([`search`], wfst-search) → rescoring and output
//! ([`output`], lattice-rescorer) → scoring ([`scoring`], ctx-core metrics). What only one biasing
//! component needs lives with it in `methods/components`.

pub mod files_checks;
pub mod label_graph;
pub mod lists;
pub mod memory;
pub mod otf_lm;
pub mod output;
pub mod scoring;
pub mod search;
pub mod setup;
pub mod utterance_lists;

pub use lists::{dataset_list_of, static_list, ListFile, ListKind, OpenList};
pub use memory::{peak_mem_mb, reset_peak_mem};
pub use otf_lm::OtfGBoost;
pub use output::{
    active_tokens, best_hyps, best_timed, endpoints, lattice_bias, lattice_bias_timed,
    lattice_density, nbest_oracle_wer, oracle_wer, output, targets, timed_words, Output, TimedWord,
};
pub use scoring::score_dataset;
pub use search::{
    decode, decode_indexed, decode_indexed_with, decode_with, searched_graph, spell_all,
    spell_word, spell_words, Contexts, DecodeRun, DecodeSettings, OpenWords, SearchGraph,
    SearchInputs, Searcher,
};
pub use setup::{
    checked_csr, checked_csr_mapped, ctc_blank_column, ctc_knobs, Acoustic, ScoreRules, Setup,
    SetupOptions, StaticBoost,
};
pub use utterance_lists::{list_of, set_list};
