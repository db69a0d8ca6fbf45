"""WordSpotter: NeMo's CTC-based word spotter from Python, on the hand-made case the Rust tests
derive by hand (crates/ctc-ws/tests/nemo_rules.rs), and its errors."""

import numpy as np
import pytest

import ctxbench

LABELS = ["<blk>", "▁a", "▁b", "c", "d"]
# Greedy reads ▁a (frame 0), ▁b (2), c (3): "a bc"; "bd" spotted over frames 2-3 scores 4.3.
LP = np.array([
    [-3.0, -0.1, -9.0, -9.0, -9.0],
    [-0.1, -9.0, -9.0, -9.0, -9.0],
    [-2.0, -9.0, -0.2, -9.0, -9.0],
    [-1.0, -9.0, -9.0, -0.5, -1.5],
    [-0.05, -9.0, -9.0, -9.0, -9.0],
], dtype=np.float32)


def test_a_spot_replaces_the_greedy_word_it_beats():
    ws = ctxbench.WordSpotter(LABELS, {"bd": ["▁b d"]})
    (phrase, score, start, end), = ws.spot(LP)
    assert (phrase, start, end) == ("bd", 2, 3)
    assert score == pytest.approx(4.3, abs=1e-5)
    assert ws.decode(LP) == "a bd"
    # Spellings as label ids, and a batch (a Fortran-ordered copy is read right too).
    ws2 = ctxbench.WordSpotter(LABELS, {"bd": [[2, 4]]})
    assert ws2.decode_batch([LP, np.asfortranarray(LP)]) == ["a bd", "a bd"]


def test_without_the_context_score_the_greedy_words_win():
    ws = ctxbench.WordSpotter(LABELS, {"bd": ["▁b d"]}, context_score=0.0)
    assert ws.spot(LP) == []
    assert ws.decode(LP) == "a bc"


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"phrases\['bd'\]\[0\]: piece 'x'"):
        ctxbench.WordSpotter(LABELS, {"bd": ["▁b x"]})
    with pytest.raises(ValueError, match="blank_threshold"):
        ctxbench.WordSpotter(LABELS, {"bd": ["▁b d"]}, blank_threshold=2.0)
    with pytest.raises(ValueError, match="blank: 9"):
        ctxbench.WordSpotter(LABELS, {"bd": ["▁b d"]}, blank=9)
    ws = ctxbench.WordSpotter(LABELS, {"bd": ["▁b d"]})
    with pytest.raises(ValueError, match="log_probs: log-probabilities have 3 columns"):
        ws.spot(LP[:, :3].copy())
    with pytest.raises(TypeError, match="float32"):
        ws.spot(LP.astype(np.float64))
