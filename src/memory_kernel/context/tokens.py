"""Token counting: the default estimator, adapters for real tokenizers, and the per-node
estimates the relevance pipeline spends its recovery budget with."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from memory_kernel.errors import ConfigError
from memory_kernel.protocols import TokenCounter

__all__ = [
    "EncodingTokenCounter",
    "EstimatingTokenCounter",
    "NodeTokenEstimates",
    "tiktoken_counter",
    "truncate",
]


class EstimatingTokenCounter:
    """The default: about four characters per token (the common rule of thumb for English
    BPE vocabularies), and never fewer tokens than words.

    Counting is subadditive (``count(a + b) <= count(a) + count(b)``), so the sum of the
    parts' counts is a safe upper bound of the whole — what budgeted assembly relies on.
    """

    def __init__(self, chars_per_token: float = 4.0) -> None:
        if not chars_per_token > 0:
            raise ConfigError("chars_per_token must be positive")
        self._cpt = chars_per_token

    def count(self, text: str) -> int:
        if not text:
            return 0
        return max(math.ceil(len(text) / self._cpt), len(text.split()))


class EncodingTokenCounter:
    """Any real tokenizer, given its ``encode`` (text → token ids): a tiktoken encoding's
    ``encode``, or ``lambda t: hf_tokenizer.encode(t, add_special_tokens=False)``."""

    def __init__(self, encode: Callable[[str], Sequence[Any]]) -> None:
        self._encode = encode

    def count(self, text: str) -> int:
        return len(self._encode(text)) if text else 0


def tiktoken_counter(encoding: str = "cl100k_base") -> EncodingTokenCounter:
    """A counter over a tiktoken encoding; ``ConfigError`` when tiktoken is not installed."""
    try:
        import tiktoken  # type: ignore[import-not-found]
    except ImportError as exc:
        raise ConfigError("tiktoken is not installed: pip install tiktoken") from exc
    enc = tiktoken.get_encoding(encoding)
    return EncodingTokenCounter(lambda text: enc.encode(text, disallowed_special=()))


class NodeTokenEstimates:
    """Per-node token estimates, measured from what the providers last returned.

    An exponential moving average smooths turn-to-turn variation. A node never measured is
    estimated at the mean of the measured ones (else ``prior``). ``version`` changes on
    every observation so readers can cache.
    """

    def __init__(self, prior: int = 200, *, smoothing: float = 0.5) -> None:
        self._prior = prior
        self._alpha = smoothing
        self._values: dict[str, float] = {}
        self.version = 0

    def observe(self, node: str, tokens: int) -> None:
        old = self._values.get(node)
        self._values[node] = float(tokens) if old is None else old + self._alpha * (tokens - old)
        self.version += 1

    def get(self, node: str) -> int:
        value = self._values.get(node)
        if value is None:
            if not self._values:
                return self._prior
            value = sum(self._values.values()) / len(self._values)
        return math.ceil(value)

    def snapshot(self) -> dict[str, int]:
        return {node: math.ceil(v) for node, v in self._values.items()}


def truncate(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """The longest word-prefix of ``text`` that costs at most ``max_tokens`` (binary search)."""
    parts = text.split(" ")
    lo, hi = 0, len(parts)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if counter.count(" ".join(parts[:mid])) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(parts[:lo])
