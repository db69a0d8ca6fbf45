"""The Python decoder against the CLI (issue 56): `decode_batch` on an exported quick set gives
`ctxbench decode`'s text and word times byte for byte, and bad inputs raise exceptions that name
the argument. CTXBENCH_BIN is the CLI (make python-test sets it)."""

import numpy as np
import pytest

import ctxbench


def decoder(e, **kw):
    g = e / "graph"
    return ctxbench.CtcDecoder(str(g / "TLG.fst"), str(g / "words.txt"),
                               tokens=str(g / "tokens.txt"), **kw)


def test_decode_batch_gives_the_clis_text_and_times(export):
    e, ids, arrays = export
    # The registry's acoustic scale, given as the CLI's setting of the same name.
    dec = decoder(e, acoustic_scale=2.0)
    assert dec.settings["acoustic_scale"] == 2.0 and dec.settings["beam"] == 15.0
    hyps = dec.decode_batch(arrays, ids)
    want = {}
    for line in open(e / "hyp" / "none.txt"):
        u, _, text = line.rstrip("\n").partition(" ")
        want[u] = text
    assert [h.text for h in hyps] == [want[u] for u in ids]
    assert sum(len(h.words) for h in hyps) > 200
    # The CTM's times, as the CLI writes them (2 decimals).
    ctm = [line.split() for line in open(e / "hyp" / "none.ctm")]
    ours = [[u, "1", f"{w.start:.2f}", f"{w.end - w.start:.2f}", w.word]
            for u, h in zip(ids, hyps) for w in h.words]
    assert ours == ctm
    # One at a time, as decode, the same.
    assert dec.decode(arrays[3]).text == hyps[3].text
    # The last call's seconds, as the CLI splits them: audio = rows × 0.04 s.
    t = dec.timing
    assert abs(t["audio_s"] - arrays[3].shape[0] * 0.04) < 1e-9
    assert t["decode_s"] > 0 and t["check_s"] > 0


def test_arrays_are_read_in_any_layout_and_never_written(export):
    e, ids, arrays = export
    dec = decoder(e, acoustic_scale=2.0)
    want = [h.text for h in dec.decode_batch(arrays[:6])]
    # Fortran order (the same values, columns contiguous) and a strided view: read by value.
    fortran = [np.asfortranarray(a) for a in arrays[:6]]
    assert all(not a.flags.c_contiguous for a in fortran)
    assert [h.text for h in dec.decode_batch(fortran)] == want
    wide = [np.concatenate([a, a], axis=1)[:, : a.shape[1]] for a in arrays[:6]]
    assert all(not a.flags.c_contiguous for a in wide)
    assert [h.text for h in dec.decode_batch(wide)] == want
    # A blank penalty writes the scores: on a copy, never on the caller's array.
    before = arrays[0].copy()
    decoder(e, acoustic_scale=2.0, blank_penalty=3.0).decode(arrays[0])
    assert np.array_equal(arrays[0], before)
    # Decoding twice with one decoder (its search kept between calls) gives the same.
    assert [h.text for h in dec.decode_batch(arrays[:6])] == want


def test_settings_change_the_search(export):
    e, ids, arrays = export
    wide = decoder(e, acoustic_scale=2.0).decode_batch(arrays[:10])
    narrow = decoder(e, acoustic_scale=2.0, beam=1.0, max_active=2, threads=1).decode_batch(arrays[:10])
    assert [h.text for h in wide] != [h.text for h in narrow]
    assert sum(h.cost for h in narrow) > sum(h.cost for h in wide)


BAD = [
    # (what, how to call, exception, words the message must hold)
    ("float64 scores", lambda d, a: d.decode(a[0].astype(np.float64)), TypeError,
     ["log_probs", "float32", "float64"]),
    ("1-D scores", lambda d, a: d.decode(a[0][0]), ValueError, ["log_probs", "2 dimensions"]),
    ("a list, not an array", lambda d, a: d.decode_batch([a[0], [1.0, 2.0]]), TypeError,
     ["log_probs[1]", "numpy array"]),
    ("one column short", lambda d, a: d.decode(a[0][:, :-1].copy()), ValueError,
     ["log_probs[0]", "1024 columns", "graph reads 1025"]),
    ("no frames", lambda d, a: d.decode(a[0][:0]), ValueError, ["has no frames"]),
    ("rows that are no distribution", lambda d, a: d.decode(a[0] + 5.0), ValueError,
     ["log-prob"]),
    ("ids of another length", lambda d, a: d.decode_batch(a[:2], ["x"]), ValueError,
     ["ids", "1 ids for 2 arrays"]),
]


@pytest.mark.parametrize("what,call,exc,needles", BAD, ids=[b[0] for b in BAD])
def test_bad_arrays_raise_naming_the_argument(export, what, call, exc, needles):
    e, ids, arrays = export
    with pytest.raises(exc) as info:
        call(decoder(e), arrays)
    for n in needles:
        assert n in str(info.value), str(info.value)


BAD_SETTINGS = [
    ({"beams": 3.0}, TypeError, ["unexpected keyword argument 'beams'", "lattice_beam"]),
    ({"beam": float("nan")}, ValueError, ["beam", "not a finite number"]),
    ({"beam": "wide"}, TypeError, ["beam", "expected a number", "str"]),
    ({"threads": -1}, ValueError, ["threads", "below 0"]),
    ({"endpointing": 1}, TypeError, ["endpointing", "expected a bool"]),
    ({"backend": "tpu"}, ValueError, ["backend", "tpu"]),
    ({"frame_shift": 0.0}, ValueError, ["frame_shift"]),
]


@pytest.mark.parametrize("kw,exc,needles", BAD_SETTINGS, ids=[str(b[0]) for b in BAD_SETTINGS])
def test_bad_settings_raise_naming_the_setting(export, kw, exc, needles):
    e, _, _ = export
    with pytest.raises(exc) as info:
        decoder(e, **kw)
    for n in needles:
        assert n in str(info.value), str(info.value)


def test_a_missing_graph_names_the_file(tmp_path):
    with pytest.raises(ValueError) as info:
        ctxbench.CtcDecoder(str(tmp_path / "nothing.fst"), str(tmp_path / "words.txt"))
    assert "nothing.fst" in str(info.value)


def test_lattices_are_the_clis_and_nbest_lists_start_with_the_best_path(export, tmp_path):
    e, ids, arrays = export
    out = tmp_path / "lat.txt"
    from conftest import cli
    cli("decode", "--registry", str(e / "datasets.toml"), "--dataset", "atco2-sim-1h-files",
        "--methods", "none", "--lattice-out", str(out))
    words = dict(line.split()[::-1] for line in open(e / "graph" / "words.txt"))
    want, cur = {}, None
    for line in open(out):
        f = line.rstrip("\n").split("\t")
        if cur is None:
            cur = f[0]
            want[cur] = [cur]
        elif f == [""]:
            cur = None
            continue
        else:
            if len(f) == 4:
                f[2] = "<eps>" if f[2] == "0" else words[f[2]]
            want[cur].append("\t".join(f))
    hyps = decoder(e, acoustic_scale=2.0).decode_batch(arrays[:8], ids[:8], lattices=True)
    for u, h in zip(ids[:8], hyps):
        assert h.lattice.rstrip("\n").split("\n") == want[u]
        assert h.nbest == []
    dec = decoder(e, acoustic_scale=2.0, endpointing=False)
    for h in dec.decode_batch(arrays[:8], nbest=5):
        assert h.lattice is None
        texts = [t for t, _ in h.nbest]
        costs = [c for _, c in h.nbest]
        assert texts[0] == h.text and costs[0] == pytest.approx(h.cost, abs=1e-3)
        assert len(set(texts)) == len(texts) and costs == sorted(costs)
    assert max(len(h.nbest) for h in dec.decode_batch(arrays[:8], nbest=5)) == 5


def test_one_best_without_lattices_has_the_same_text(export):
    """``lattice=False`` (issue 70): no lattice recorded, the same best path; n-best lists and
    lattices, which need one, are refused naming the argument."""
    e, ids, arrays = export
    with_lat = decoder(e, acoustic_scale=2.0).decode_batch(arrays[:8], ids[:8])
    dec = decoder(e, acoustic_scale=2.0, lattice=False)
    without = dec.decode_batch(arrays[:8], ids[:8])
    assert [h.text for h in without] == [h.text for h in with_lat]
    assert dec.settings["lattice"] is False
    with pytest.raises(ValueError) as info:
        dec.decode(arrays[0], nbest=2)
    assert "nbest" in str(info.value) and "lattice=False" in str(info.value)
    with pytest.raises(ValueError) as info:
        dec.decode_batch(arrays[:1], lattices=True)
    assert "lattice" in str(info.value)
