from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

__version__: str

class Word:
    """A decoded word and its time in the utterance (seconds)."""
    word: str
    start: float
    end: float

class Hypothesis:
    """One utterance's best path (and, when asked, its n-best list and lattice)."""
    text: str
    words: List[Word]
    cost: float
    nbest: List[Tuple[str, float]]
    lattice: Optional[str]

def as_array(x: Any, what: str = ...) -> Any: ...

def score(
    refs: Union[Dict[str, str], str],
    hyps: Union[Dict[str, str], str],
    entities: Optional[Union[Dict[str, List[Tuple[str, str]]], str]] = ...,
    fmt: Optional[str] = ...,
    ne_classes: Optional[List[str]] = ...,
    normalize: Optional[str] = ...,
    ne_insertions: Optional[str] = ...,
    strict: bool = ...,
    lenient: bool = ...,
) -> Dict[str, Any]: ...

class WordSpotter:
    """NeMo's CTC-based word spotter over a model's labels, built once from the phrases."""
    def __init__(
        self,
        labels: List[str],
        phrases: Dict[str, List[Union[str, List[int]]]],
        blank: int = ...,
        beam: float = ...,
        context_score: float = ...,
        ali_token_weight: float = ...,
        keyword_threshold: float = ...,
        blank_threshold: float = ...,
        non_blank_threshold: float = ...,
        spot_overlap: float = ...,
        merge_overlap: float = ...,
    ) -> None: ...
    def spot(self, log_probs: Any) -> List[Tuple[str, float, int, int]]: ...
    def decode(self, log_probs: Any) -> str: ...
    def decode_batch(self, log_probs: Sequence[Any]) -> List[str]: ...

class NgramLM:
    """An ARPA LM as NGPU-LM's arrays, queried in batches (natural-log probabilities)."""
    def __init__(self, arpa: str, labels: Optional[List[str]] = ..., threads: int = ...) -> None: ...
    @property
    def labels(self) -> List[str]: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def order(self) -> int: ...
    @property
    def num_states(self) -> int: ...
    @property
    def bos(self) -> int: ...
    @property
    def report(self) -> Dict[str, int]: ...
    def advance(self, states: Any) -> Tuple[Any, Any]: ...
    def score(self, states: Any, labels: Any) -> Tuple[Any, Any]: ...
    def final(self, states: Any) -> Any: ...
    def sentence(self, words: List[str], eos: bool = ...) -> float: ...

class WfstDecoder:
    """A hybrid model's decoder over Kaldi's HCLG (pdf-ids + 1, or transition-ids with final.mdl)."""
    def __init__(
        self,
        graph: str,
        words: str,
        transition_model: Optional[str] = ...,
        silence_columns: Optional[List[int]] = ...,
        score_columns: Optional[int] = ...,
        frame_shift: Optional[float] = ...,
        *,
        beam: float = ...,
        max_active: int = ...,
        lattice_beam: float = ...,
        lattice: bool = ...,
        acoustic_scale: Optional[float] = ...,
        chunk_s: float = ...,
        endpointing: Optional[bool] = ...,
        threads: int = ...,
        backend: str = ...,
        gpu_batch: int = ...,
    ) -> None: ...
    @property
    def settings(self) -> Dict[str, Union[str, float, int, bool]]: ...
    @property
    def blank(self) -> None: ...
    @property
    def timing(self) -> Dict[str, float]: ...
    def decode(
        self, log_probs: Any, contexts: None = ..., nbest: int = ..., lattice: bool = ...
    ) -> Hypothesis: ...
    def decode_batch(
        self, log_probs: Sequence[Any], ids: Optional[List[str]] = ..., contexts: None = ...,
        nbest: int = ..., lattices: bool = ...,
    ) -> List[Hypothesis]: ...

Phrase = Union[str, Tuple[str, float]]
Contexts = Optional[Union[List[Phrase], List[Optional[List[Phrase]]]]]

class CtcDecoder:
    """A CTC decoder over a TLG graph (``ctxbench decode --model ctc``)."""
    def __init__(
        self,
        graph: Optional[str] = ...,
        words: Optional[str] = ...,
        tokens: Optional[str] = ...,
        blank: Optional[int] = ...,
        frame_shift: Optional[float] = ...,
        topology: str = ...,
        labels: Optional[List[str]] = ...,
        lm: Optional[str] = ...,
        delimiter: Optional[int] = ...,
        cache_dir: Optional[str] = ...,
        lexicon: Optional[str] = ...,
        *,
        beam: float = ...,
        max_active: int = ...,
        lattice_beam: float = ...,
        lattice: bool = ...,
        acoustic_scale: Optional[float] = ...,
        chunk_s: float = ...,
        endpointing: Optional[bool] = ...,
        threads: int = ...,
        backend: str = ...,
        gpu_batch: int = ...,
        blank_penalty: float = ...,
        word_insertion_penalty: float = ...,
        open_vocab_weight: float = ...,
        open_vocab_entry: float = ...,
        open_vocab_max_pause: float = ...,
    ) -> None: ...
    @classmethod
    def from_lm(
        cls,
        labels: Sequence[str],
        lm: str,
        blank: Optional[int] = ...,
        delimiter: Optional[int] = ...,
        lexicon: Optional[str] = ...,
        cache_dir: Optional[str] = ...,
        **settings: Any,
    ) -> "CtcDecoder": ...
    @property
    def settings(self) -> Dict[str, Union[str, float, int, bool]]: ...
    @property
    def graph_info(self) -> Dict[str, Union[str, float, int, bool]]: ...
    @property
    def blank(self) -> int: ...
    @property
    def has_slot(self) -> bool: ...
    @property
    def timing(self) -> Dict[str, float]: ...
    def decode(
        self, log_probs: Any, contexts: Optional[List[Phrase]] = ..., nbest: int = ...,
        lattice: bool = ...,
    ) -> Hypothesis: ...
    def decode_batch(
        self,
        log_probs: Sequence[Any],
        ids: Optional[List[str]] = ...,
        contexts: Contexts = ...,
        nbest: int = ...,
        lattices: bool = ...,
    ) -> List[Hypothesis]: ...
