"""WfstDecoder: a hybrid model's HCLG (Kaldi transition-ids and final.mdl) decoded from Python
gives `ctxbench decode`'s words and times on an exported set; its errors name the argument."""

import numpy as np
import pytest

import ctxbench
from conftest import cli


@pytest.fixture(scope="module")
def hclg(tmp_path_factory):
    e = tmp_path_factory.mktemp("hclg")
    cli("export", "--dataset", "atco2-sim-1h", "--quick", "--kind", "hclg", "--transition-ids",
        "--format", "npy", "--limit", "20", "--out", str(e))
    cli("decode", "--registry", str(e / "datasets.toml"), "--dataset", "atco2-sim-1h-files",
        "--methods", "none", "--hyp-dir", str(e / "hyp"))
    ids = [line.split()[0] for line in open(e / "data" / "text")]
    return e, ids, [np.load(e / "scores" / f"{u}.npy") for u in ids]


def decoder(e, **kw):
    g = e / "graph"
    # The registry's frame shift, acoustic scale and silence pdf, as the CLI reads them.
    return ctxbench.WfstDecoder(g / "HCLG.fst", g / "words.txt", transition_model=g / "final.mdl",
                                silence_columns=[0], frame_shift=0.03, acoustic_scale=0.5, **kw)


def test_hclg_with_transition_ids_gives_the_clis_words_and_times(hclg):
    e, ids, arrays = hclg
    dec = decoder(e)
    assert dec.blank is None and dec.settings["acoustic_scale"] == 0.5
    hyps = dec.decode_batch(arrays, ids)
    want = dict(line.rstrip("\n").partition(" ")[::2] for line in open(e / "hyp" / "none.txt"))
    assert [h.text for h in hyps] == [want[u] for u in ids]
    ctm = [line.split() for line in open(e / "hyp" / "none.ctm")]
    ours = [[u, "1", f"{w.start:.2f}", f"{w.end - w.start:.2f}", w.word]
            for u, h in zip(ids, hyps) for w in h.words]
    assert ours == ctm
    # Kaldi's default acoustic scale (0.1) is another search: some text changes.
    kaldi = ctxbench.WfstDecoder(e / "graph" / "HCLG.fst", e / "graph" / "words.txt",
                                 transition_model=e / "graph" / "final.mdl", frame_shift=0.03)
    assert kaldi.settings["acoustic_scale"] == pytest.approx(0.1)
    assert [h.text for h in kaldi.decode_batch(arrays)] != [h.text for h in hyps]


def test_hybrid_errors_name_the_argument(hclg):
    e, ids, arrays = hclg
    g = e / "graph"
    with pytest.raises(ValueError, match="the scores have 7 columns"):
        decoder(e).decode(arrays[0][:, :7].copy())
    with pytest.raises(ValueError, match="the blank penalty is a CTC setting"):
        decoder(e, blank_penalty=1.0)
    with pytest.raises(ValueError, match="transition_model: .*nope.mdl"):
        ctxbench.WfstDecoder(g / "HCLG.fst", g / "words.txt", transition_model=g / "nope.mdl")
    with pytest.raises(ValueError, match="contexts: the graph has no class slot"):
        decoder(e).decode(arrays[0], contexts=["lufthansa"])
    with pytest.raises(TypeError, match="score_columns: the transition model's pdf count"):
        ctxbench.WfstDecoder(g / "HCLG.fst", g / "words.txt", transition_model=g / "final.mdl",
                             score_columns=10)


def test_a_word_insertion_penalty_charges_every_word_of_a_hybrid_graph(hclg):
    e, ids, arrays = hclg
    plain = decoder(e).decode_batch(arrays, ids)
    charged = decoder(e, word_insertion_penalty=3.0).decode_batch(arrays, ids)
    # The best path costs at least as much (every path pays 3 per word), and exactly its
    # own 3 per word more when the words stay the same.
    for p, c in zip(plain, charged):
        assert c.cost >= p.cost - 1e-3
        if c.text == p.text:
            assert c.cost == pytest.approx(p.cost + 3.0 * len(p.words), abs=1e-2)
    assert sum(len(h.words) for h in charged) < sum(len(h.words) for h in plain)
