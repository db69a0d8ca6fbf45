"""NgramLM: NGPU-LM's batched queries from Python, against the ARPA's own numbers (back-off
rule by hand), and its errors."""

import math

import numpy as np
import pytest

import ctxbench
from test_from_lm import ARPA

LN10 = math.log(10)


@pytest.fixture
def lm(tmp_path):
    p = tmp_path / "lm.arpa"
    p.write_text(ARPA)
    return ctxbench.NgramLM(str(p), threads=2)


def test_advance_gives_every_labels_back_off_score(lm):
    assert lm.labels == ["cat", "dog", "god", "cod"]
    assert (lm.vocab_size, lm.order) == (4, 2)
    scores, nxt = lm.advance([lm.bos])
    assert scores.shape == (1, 4) and scores.dtype == np.float32 and nxt.dtype == np.uint32
    # p(cat | <s>) is listed; the others back off from <s> (-0.3) to their unigrams.
    want = np.array([-0.2, -0.3 - 0.6, -0.3 - 0.9, -0.3 - 0.9]) * LN10
    np.testing.assert_allclose(scores[0], want, rtol=1e-6)
    # After "cat", "dog" is listed: the state "cat" reads it at -0.2.
    cat = nxt[0, 0]
    s2, n2 = lm.advance(np.array([cat, lm.bos], dtype=np.int64))
    assert s2[0, 1] == pytest.approx(-0.2 * LN10)
    np.testing.assert_array_equal(s2[1], scores[0])
    # </s>: listed after dog; from <s> backed off.
    dog = n2[0, 1]
    np.testing.assert_allclose(lm.final([dog, lm.bos]), [-0.2 * LN10, (-0.3 - 0.7) * LN10], rtol=1e-6)
    assert lm.sentence(["cat", "dog"]) == pytest.approx(-0.6 * LN10, rel=1e-6)


def test_score_picks_what_advance_gives(lm):
    states = [lm.bos, lm.bos, 0]
    full, nfull = lm.advance(states)
    labels = np.array([[0, 3], [1, 2], [2, 0]])
    s, n = lm.score(states, labels)
    assert s.shape == (3, 2)
    np.testing.assert_array_equal(s, np.take_along_axis(full, labels, axis=1))
    np.testing.assert_array_equal(n, np.take_along_axis(nfull, labels, axis=1))


def test_a_models_labels_may_add_words_the_lm_lacks(tmp_path):
    p = tmp_path / "lm.arpa"
    p.write_text(ARPA)
    lm = ctxbench.NgramLM(str(p), labels=["<blk>", "cat", "dog", "god", "cod", "zebra"])
    assert lm.report["missing_labels"] == 2
    s, _ = lm.advance([lm.bos])
    assert s[0, 1] == pytest.approx(-0.2 * LN10) and s[0, 5] < -100


def test_bad_queries_raise_naming_the_argument(lm, tmp_path):
    with pytest.raises(ValueError, match="states"):
        lm.advance([lm.num_states + 3])
    with pytest.raises(ValueError, match=r"states\[0\]: -1 is not a state"):
        lm.advance(np.array([-1]))
    with pytest.raises(TypeError, match="states: expected a 1-D array"):
        lm.advance("abc")
    with pytest.raises(ValueError, match="labels: 1 rows for 2 states"):
        lm.score([0, 0], np.array([[0]]))
    with pytest.raises(ValueError, match="label .* out of range"):
        lm.score([0], np.array([[9]]))
    with pytest.raises(ValueError, match=r"words\[1\]: 'emu' is not a label"):
        lm.sentence(["cat", "emu"])
    p = tmp_path / "lm.arpa"
    p.write_text(ARPA)
    with pytest.raises(ValueError, match="arpa: .*lm.arpa"):
        ctxbench.NgramLM(str(p), labels=["cat"])
    with pytest.raises(ValueError, match="arpa: .*nope"):
        ctxbench.NgramLM(str(tmp_path / "nope"))
