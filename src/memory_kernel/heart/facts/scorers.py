"""The learned fact scorers of a configuration: the packaged ones, or those in
``HeartConfig.fact_scorer_dir`` (file by file)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memory_kernel.errors import ConfigError
from memory_kernel.heart.facts.admission_features import ADMISSION_FEATURES
from memory_kernel.heart.facts.pairs import PAIR_FEATURES
from memory_kernel.heart.facts.query_slot import READ_FEATURES
from memory_kernel.heart.facts.scorer import LinearScorer, load_scorer, packaged

__all__ = ["Scorers", "load_scorers"]

_FEATURES = {
    "update": PAIR_FEATURES, "duplicate": PAIR_FEATURES, "admission": ADMISSION_FEATURES,
    "read": READ_FEATURES,
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Scorers:
    update: LinearScorer
    duplicate: LinearScorer
    admission: LinearScorer
    read: LinearScorer  # the read-time update scorer (``read_resolution``)


def load_scorers(directory: str | None) -> Scorers:
    """Each scorer from ``directory/<name>.json`` when that file exists, else packaged."""
    where = Path(directory) if directory else None
    if where is not None and not where.is_dir():
        raise ConfigError(f"heart.fact_scorer_dir {directory!r} is not a directory")
    chosen = {}
    for name, names in _FEATURES.items():
        path = where / f"{name}.json" if where is not None else None
        if path is not None and path.is_file():
            chosen[name] = load_scorer(path, names)
        else:
            chosen[name] = packaged(name, names)
    return Scorers(**chosen)
