//! The in-domain model (`resources = "in-domain"`): a network trained on the set's own
//! transcripts keeps a confusion out of its output unless the confused spelling is about as
//! plausible in context under the trigram of those transcripts (its internal LM), and the
//! general model with the same confusion rate does not. Only the training text decides.

use ctx_data::bpe::Bpe;
use ctx_data::e2e::TransducerSim;
use ctx_data::registry::CtcAcousticSpec;

/// Phraseology where "to" always follows "cleared" and "two" only counts; "lane" is a known word
/// near "land" that the text never puts after "to".
fn training_text() -> Vec<String> {
    let mut t = vec!["cleared to land".to_string(); 200];
    t.extend(vec!["runway two one".to_string(); 100]);
    t.extend(vec!["left lane".to_string(); 20]);
    t
}

fn knobs(in_domain: bool) -> CtcAcousticSpec {
    let general = CtcAcousticSpec {
        noise: 0.3,
        noise_spread: 0.0,
        confusion: 1.0,
        margin: 6.0,
        acoustic_scale: 1.0,
        confusion_gap: 1.5,
        rare_confusion: 0.0,
        rare_count: 1.0,
        low_resource_confusion: None,
        in_domain_confusion: Some(1.0),
        internal_lm: 1.0,
        in_domain: false,
        seed: 5,
    };
    if in_domain {
        general.in_domain().unwrap()
    } else {
        general
    }
}

/// Of 100 utterances of "cleared to land", how many the model heard with other pieces.
fn misheard(sim: &TransducerSim, bpe: &Bpe) -> usize {
    let said: Vec<String> = ["cleared", "to", "land"].map(String::from).to_vec();
    let truth: Vec<u32> = said
        .iter()
        .flat_map(|w| bpe.encode_word(w))
        .map(|p| bpe.id(&p).unwrap())
        .collect();
    (0..100)
        .filter(|i| {
            let utt = sim.simulate(&format!("u{i}"), &said, 2.0).unwrap();
            utt.heard() != truth
        })
        .count()
}

#[test]
fn the_internal_lm_keeps_implausible_confusions_out_and_the_general_model_does_not() {
    let text = training_text();
    let bpe = Bpe::train(&text, 40).unwrap();
    let vocab = || text.iter().flat_map(|l| l.split_whitespace());
    let sentences = || text.iter().map(String::as_str);
    let build = |in_domain: bool| {
        TransducerSim::new(knobs(in_domain), bpe.clone(), false)
            .with_vocabulary(vocab())
            .with_training_text(sentences())
    };
    // Every word has a confusion event (confusion 1): the general model hears a near spelling
    // ("two" for "to", "lane" for "land") in nearly every utterance; the in-domain model's
    // prior rules those out after "cleared" and "to", so it hears what was said.
    let general = misheard(&build(false), &bpe);
    let in_domain = misheard(&build(true), &bpe);
    assert!(general >= 90, "general model misheard {general} of 100");
    assert!(
        in_domain <= 10,
        "in-domain model misheard {in_domain} of 100"
    );
}

#[test]
fn without_in_domain_knobs_there_is_no_in_domain_model() {
    let mut k = knobs(false);
    k.in_domain_confusion = None;
    assert!(k.in_domain().is_none());
    assert!(!k.in_domain);
    assert!(knobs(true).in_domain);
}
