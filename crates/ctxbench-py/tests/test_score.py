"""`ctxbench.score` is `ctxbench score` (issue 56): the same figures as the CLI's `--json` on the
same files, dicts scored as those files, and bad arguments named."""

import json

import pytest

import ctxbench
from conftest import cli


def test_score_gives_the_clis_json(export, tmp_path):
    e, ids, _ = export
    ref, hyp, ents = e / "data" / "text", e / "hyp" / "none.txt", e / "entities.txt"
    out = tmp_path / "cli.json"
    cli("score", "--ref", str(ref), "--hyp", str(hyp), "--entities", str(ents), "--json", str(out))
    want = json.load(open(out))
    got = ctxbench.score(str(ref), str(hyp), entities=str(ents))
    assert got == want
    assert 5.0 < got["wer"] < 40.0 and got["ne_wer"] is not None
    # The same texts as dicts, and the entities as (CLASS, words) spans.
    refs = dict(l.rstrip("\n").split(" ", 1) for l in open(ref))
    hyps = {}
    for l in open(hyp):
        u, _, t = l.rstrip("\n").partition(" ")
        hyps[u] = t
    spans = {}
    for l in open(ents):
        u, _, rest = l.rstrip("\n").partition("\t")
        spans[u] = [tuple(s[1:].split("] ", 1)) for s in rest.split("|") if s]
    from_dicts = ctxbench.score(refs, hyps, entities=spans)
    for k in ("wer", "ne_wer", "u_wer", "ne_acc", "counts", "ne_counts"):
        assert from_dicts[k] == want[k], k


def test_a_small_case_by_hand():
    r = ctxbench.score({"u1": "a b c d", "u2": "e f"}, {"u1": "a x c d e", "u2": "f"})
    # u1: one substitution, one insertion; u2: one deletion. 3 errors over 6 words.
    c = r["counts"]
    assert c["substitutions"] == 1 and c["insertions"] == 1 and c["deletions"] == 1 and c["ref_words"] == 6
    assert abs(r["wer"] - 50.0) < 1e-9


def test_a_missing_hypothesis_is_a_warning_and_counts_as_deletions():
    with pytest.warns(UserWarning):
        r = ctxbench.score({"u1": "a b", "u2": "c"}, {"u1": "a b"})
    assert r["counts"]["deletions"] == 1 and r["missing_hyps"] == ["u2"]


@pytest.mark.parametrize("kw,needles", [
    ({"fmt": "xml"}, ["fmt", "'xml'", "kaldi, nlp, fbai"]),
    ({"normalize": "lower"}, ["normalize", "exact, fstalign"]),
    ({"refs": {"u 1": "a"}}, ["refs['u 1']", "non-empty word"]),
    ({"hyps": {"u1": "a\nb"}}, ["hyps['u1']", "one line"]),
    ({"refs": "/no/such/ref"}, ["/no/such/ref"]),
])
def test_bad_arguments_are_named(kw, needles):
    args = {"refs": {"u1": "a b"}, "hyps": {"u1": "a b"}}
    args.update(kw)
    with pytest.raises(ValueError) as info:
        ctxbench.score(**args)
    for n in needles:
        assert n in str(info.value), str(info.value)


def test_the_biasing_benchmarks_format_gives_the_clis_json(tmp_path):
    # The committed LibriSpeech biasing subset (Le et al. 2021's files, score.py's figures).
    from pathlib import Path
    d = Path(__file__).resolve().parents[2] / "ctxbench" / "tests" / "data" / "fbai"
    ref, hyp = d / "ref" / "test-clean.tsv", d / "hyp" / "test-clean.b1.rnnt_baseline.tsv"
    out = tmp_path / "cli.json"
    cli("score", "--format", "fbai", "--ref", str(ref), "--hyp", str(hyp), "--json", str(out))
    want = json.load(open(out))
    got = ctxbench.score(str(ref), str(hyp), fmt="fbai")
    assert got == want
    # score.py's own figures for this file (results/…result): B-WER 54 errors of 362 words.
    assert got["b_wer"] == {"ref_words": 362, "subs": 52, "ins": 0, "dels": 2}
