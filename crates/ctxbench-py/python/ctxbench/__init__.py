"""ctxbench in Python: the CTC WFST decoder of ``ctxbench decode --model ctc`` on arrays.

    import ctxbench
    dec = ctxbench.CtcDecoder.from_lm(labels, "lm.arpa")   # pyctcdecode's build_ctcdecoder habit
    dec = ctxbench.CtcDecoder("TLG.fst", "words.txt", tokens="tokens.txt", beam=15.0)
    hyp = dec.decode(log_probs)            # [T, V] float32 log-probabilities
    print(hyp.text, [(w.word, w.start, w.end) for w in hyp.words])
    hyps = dec.decode_batch([lp1, lp2], contexts=[("zorblax corp", 5.0)])   # hotword phrases

Settings are the CLI's, typed by the same specs (``dec.settings`` lists them). Numpy arrays are
read in place; torch tensors are converted by :func:`as_array`.

    ctxbench.score({"u1": "a b c"}, {"u1": "a x c"})["wer"]    # 33.3..., ctxbench score's figures
"""

import json
import os
import tempfile
import warnings

from . import _ctxbench
from ._ctxbench import Decoder as _Decoder, Hypothesis, NgramLM as _NgramLM, Word, __version__
from ._ctxbench import WordSpotter as _WordSpotter

__all__ = ["CtcDecoder", "WfstDecoder", "Hypothesis", "NgramLM", "Word", "WordSpotter",
           "as_array", "score", "__version__"]


def as_array(x, what="log_probs"):
    """A numpy array of ``x``: numpy arrays as they are (read in place by the decoder); torch
    tensors detached and brought to the host (a CPU float32 tensor shares its memory; a device
    tensor is copied, not read where it is)."""
    if hasattr(x, "detach") and hasattr(x, "cpu") and hasattr(x, "numpy"):
        return x.detach().cpu().numpy()
    return x


class _Decoding:
    """``decode`` / ``decode_batch`` of both decoders: arrays converted by :func:`as_array`."""

    def decode(self, log_probs, contexts=None, nbest=0, lattice=False):
        """The best path of one utterance as a :class:`Hypothesis`; ``contexts`` its phrases
        (strings, or ``(phrase, weight)`` pairs); ``nbest`` > 0 fills ``hyp.nbest`` with that
        many distinct word sequences and costs, ``lattice`` ``hyp.lattice`` (Kaldi text)."""
        return super().decode(as_array(log_probs), contexts, nbest, lattice)

    def decode_batch(self, log_probs, ids=None, contexts=None, nbest=0, lattices=False):
        """The best paths of a list of utterances, in order (the GIL is released);
        ``contexts`` one list of phrases for all, or one list (or ``None``) per utterance;
        ``nbest`` and ``lattices`` as in :meth:`decode`."""
        return super().decode_batch([as_array(x) for x in log_probs], ids, contexts, nbest,
                                    lattices)


class WfstDecoder(_Decoding, _Decoder):
    """A hybrid model's decoder (Kaldi's HCLG), built once: ``graph`` an OpenFst HCLG whose
    input labels are pdf-ids + 1, or transition-ids with ``transition_model`` (final.mdl);
    ``words`` its words table; ``decode`` / ``decode_batch`` on ``[T, pdfs]`` float32
    log-likelihoods (acoustic scale 0.1 and 10 ms frames unless set). ``silence_columns`` are
    the silence pdfs (endpointing); ``score_columns`` the model's width without a final.mdl."""

    def __new__(cls, graph, words, transition_model=None, silence_columns=None,
                score_columns=None, frame_shift=None, **settings):
        return super().__new__(cls, graph=str(graph), words=str(words), model="hybrid",
                               transition_model=None if transition_model is None else str(transition_model),
                               silence_columns=silence_columns, score_columns=score_columns,
                               frame_shift=frame_shift, **settings)


class CtcDecoder(_Decoding, _Decoder):
    """A CTC decoder over a TLG graph, built once; ``decode`` / ``decode_batch`` on
    ``[T, V]`` float32 log-probabilities (numpy arrays or torch tensors), with
    open-vocabulary ``contexts`` (hotword phrases, words outside the LM included)."""

    @classmethod
    def from_lm(cls, labels, lm, blank=None, delimiter=None, lexicon=None, cache_dir="default",
                **settings):
        """A decoder from a CTC model's labels (one per score column: SentencePiece pieces with
        ``▁`` word starts, or characters with a ``|`` or space delimiter) and an ARPA LM, as
        pyctcdecode's ``build_ctcdecoder``: the LM's words are spelled in the labels, the TLG is
        built with the class slot for ``contexts`` and cached in ``cache_dir`` (default
        ``$XDG_CACHE_HOME/ctxbench/graphs``; ``None``: not cached). The blank is the label
        ``""``, ``<blk>``, ``<blank>``, ``<b>``, ``<pad>`` or ``<eps>`` unless ``blank`` names
        its column. ``lexicon`` (Kaldi ``lexicon.txt``: a word and its labels per line) spells
        its words as the model was trained to, in the graph and in contexts; the LM's other
        words are spelled in the fewest labels. ``dec.graph_info`` says which LM words no label
        spelling could make."""
        if cache_dir == "default":
            base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
            cache_dir = os.path.join(base, "ctxbench", "graphs")
        return cls(labels=list(labels), lm=str(lm), blank=blank, delimiter=delimiter,
                   lexicon=None if lexicon is None else str(lexicon), cache_dir=cache_dir,
                   **settings)



class WordSpotter(_WordSpotter):
    """NVIDIA NeMo's CTC-based word spotter (CTC-WS, Andrusenko et al. 2024), built once from
    the model's ``labels`` (``▁`` starts a word; ``blank`` its column) and ``phrases``, a dict
    phrase → spellings (each a string of pieces separated by spaces, or label ids; several:
    NeMo's spelling variants, ``{"gpu": ["▁gpu", "▁g ▁p ▁u"]}``). ``spot(log_probs)`` gives
    ``(phrase, score, first frame, last frame)`` tuples, ``decode(log_probs)`` the greedy text
    with the spots merged in, ``decode_batch`` a list of them; ``log_probs`` ``[T, V]`` float32
    (numpy, or torch tensors converted). Settings: NeMo's script's defaults."""

    def spot(self, log_probs):
        return super().spot(as_array(log_probs))

    def decode(self, log_probs):
        return super().decode(as_array(log_probs))

    def decode_batch(self, log_probs):
        return super().decode_batch([as_array(x) for x in log_probs])


class NgramLM(_NgramLM):
    """An ARPA LM as NGPU-LM's arrays (004 §2.2), queried in batches: ``advance(states)`` gives
    every label's ln-probability and next state from each state (``[B, V]`` numpy arrays),
    ``score(states, labels)`` chosen labels' (``labels`` ``[B, K]``), ``final(states)`` the
    ``</s>`` scores. ``states`` are 1-D int arrays, lists or torch tensors (converted to numpy;
    wrap results with ``torch.from_numpy``). Start from ``lm.bos``."""

    def advance(self, states):
        return super().advance(_ids(states))

    def score(self, states, labels):
        import numpy as np
        return super().score(_ids(states), np.asarray(as_array(labels), dtype=np.int64))

    def final(self, states):
        return super().final(_ids(states))


def _ids(x):
    """State ids as a numpy array (torch tensors converted; lists kept)."""
    x = as_array(x)
    if hasattr(x, "dtype") and getattr(x, "ndim", 1) == 1 and x.dtype.kind in "iu" and x.dtype.itemsize == 8:
        return x
    if hasattr(x, "dtype") and x.dtype.kind in "iu":
        import numpy as np
        return np.asarray(x, dtype=np.int64)
    return x


def _text_file(x, folder, name):
    """A path as it is; a dict `{utterance id: text}` written as a Kaldi `text` file."""
    if not isinstance(x, dict):
        return str(x)
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as f:
        for utt, text in x.items():
            if not isinstance(utt, str) or not utt or any(c.isspace() for c in utt):
                raise ValueError(f"{name}[{utt!r}]: an utterance id is a non-empty word")
            if not isinstance(text, str) or "\n" in text or "\r" in text:
                raise ValueError(f"{name}[{utt!r}]: the text is one line of words")
            f.write(f"{utt} {text}\n")
    return path


def _entities_file(x, folder):
    """A path as it is; a dict `{utterance id: [(CLASS, "the words"), ...]}` written as the
    CLI's entity file (`utt<TAB>[CLASS] words|[CLASS] words`)."""
    if x is None or not isinstance(x, dict):
        return None if x is None else str(x)
    path = os.path.join(folder, "entities")
    with open(path, "w", encoding="utf-8") as f:
        for utt, spans in x.items():
            parts = []
            for i, span in enumerate(spans):
                if not (isinstance(span, tuple) and len(span) == 2):
                    raise ValueError(f"entities[{utt!r}][{i}]: expected (CLASS, words)")
                cls, words = span
                parts.append(f"[{cls}] {words}")
            f.write(f"{utt}\t{'|'.join(parts)}\n")
    return path


def score(refs, hyps, entities=None, fmt=None, ne_classes=None, normalize=None,
          ne_insertions=None, strict=False, lenient=False):
    """WER, NE-WER, U-WER, NE-A (and for ``fmt="fbai"`` the benchmark's WER, U-WER, B-WER) of
    hypotheses against references: ``ctxbench score``'s own code and figures (its ``--json``
    as a dict). ``refs``/``hyps`` are dicts ``{utterance id: text}`` or paths (Kaldi text
    files, ``.nlp`` folders, the fbai benchmark's files); ``entities`` a dict
    ``{utterance id: [(CLASS, words), ...]}`` or the CLI's entity file. Warnings (missing or
    extra hypotheses) are Python warnings."""
    with tempfile.TemporaryDirectory() as d:
        r = _text_file(refs, d, "refs")
        h = _text_file(hyps, d, "hyps")
        e = _entities_file(entities, d)
        out = os.path.join(d, "score.json")
        said = _ctxbench.score_files(r, h, out, fmt=fmt, entities=e, ne_classes=ne_classes,
                                     normalize=normalize, ne_insertions=ne_insertions,
                                     strict=strict, lenient=lenient)
        for w in said:
            warnings.warn(w)
        with open(out, encoding="utf-8") as f:
            return json.load(f)
