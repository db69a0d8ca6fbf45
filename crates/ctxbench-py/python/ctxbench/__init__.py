"""ctxbench in Python: the CTC WFST decoder of ``ctxbench decode --model ctc`` on arrays.

    import ctxbench
    dec = ctxbench.CtcDecoder("TLG.fst", "words.txt", tokens="tokens.txt", beam=15.0)
    hyp = dec.decode(log_probs)            # [T, V] float32 log-probabilities
    print(hyp.text, [(w.word, w.start, w.end) for w in hyp.words])
    hyps = dec.decode_batch([lp1, lp2])    # threads = the `threads` setting

Settings are the CLI's, typed by the same specs (``dec.settings`` lists them). Torch tensors
are accepted and copied to host float32 arrays (said by :func:`as_array`).
"""

from ._ctxbench import CtcDecoder as _CtcDecoder, Hypothesis, Word, __version__

__all__ = ["CtcDecoder", "Hypothesis", "Word", "as_array", "__version__"]


def as_array(x, what="log_probs"):
    """A numpy array of ``x``: numpy arrays as they are; torch tensors detached and copied to
    the host (the decoder reads host memory; a device tensor is copied, not read in place)."""
    if hasattr(x, "detach") and hasattr(x, "cpu") and hasattr(x, "numpy"):
        return x.detach().cpu().numpy()
    return x


class CtcDecoder(_CtcDecoder):
    """A CTC decoder over a TLG graph, built once; ``decode`` / ``decode_batch`` on
    ``[T, V]`` float32 log-probabilities (numpy arrays or torch tensors)."""

    def decode(self, log_probs):
        """The best path of one utterance as a :class:`Hypothesis`."""
        return super().decode(as_array(log_probs))

    def decode_batch(self, log_probs, ids=None):
        """The best paths of a list of utterances, in order (the GIL is released)."""
        return super().decode_batch([as_array(x) for x in log_probs], ids)
