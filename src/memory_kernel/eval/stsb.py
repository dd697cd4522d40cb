"""STS Benchmark: Spearman correlation of the embedder's cosine with human similarity."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from memory_kernel.embeddings import embed_checked
from memory_kernel.errors import ConfigError
from memory_kernel.eval.progress import progress
from memory_kernel.eval.report import SuiteReport
from memory_kernel.protocols import Embedder

__all__ = ["cosines", "load_pairs", "run", "spearman"]

_CHUNK = 256  # sentences per embedding call: a progress step


def load_pairs(path: Path) -> list[tuple[float, str, str]]:
    """Rows of ``genre, file, year, id, score, s1, s2[, ...]`` (tab-separated, unquoted)."""
    pairs = []
    try:
        with path.open(encoding="utf-8") as handle:
            for row in csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
                if len(row) >= 7:
                    pairs.append((float(row[4]), row[5], row[6]))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read STS-B data from {path}: {exc}") from exc
    return pairs


def _ranks(values: np.ndarray) -> np.ndarray:
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = np.arange(len(values), dtype=np.float64)
    # Average the ranks of ties, as Spearman's rho requires.
    for value in np.unique(values):
        tied = values == value
        if tied.sum() > 1:
            ranks[tied] = ranks[tied].mean()
    return ranks


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = _ranks(np.asarray(a, dtype=np.float64)), _ranks(np.asarray(b, dtype=np.float64))
    return float(np.corrcoef(ra, rb)[0, 1])


async def cosines(pairs: list[tuple[float, str, str]], embedder: Embedder) -> np.ndarray:
    """The embedder's cosine of each pair (the vectors are unit length)."""
    texts = [p[1] for p in pairs] + [p[2] for p in pairs]
    parts = []
    with progress("embedding sentences", len(texts)) as advance:
        for start in range(0, len(texts), _CHUNK):
            chunk = texts[start : start + _CHUNK]
            parts.append(await embed_checked(embedder, chunk, timeout=None))
            advance(len(chunk))
    vectors = np.concatenate(parts)
    left, right = vectors[: len(pairs)], vectors[len(pairs) :]
    scores: np.ndarray = np.einsum("ij,ij->i", left, right)
    return scores


async def run(data: Path, embedder: Embedder) -> SuiteReport:
    pairs = load_pairs(data)
    if not pairs:
        raise ConfigError(f"no STS-B pairs in {data}")
    gold = np.array([p[0] for p in pairs])
    scores = await cosines(pairs, embedder)
    return SuiteReport(
        suite="stsb",
        data=str(data),
        embedder=embedder.name,
        metrics={"pairs": len(pairs), "spearman": round(spearman(scores, gold), 4)},
    )
