"""The learned fact scorers of a configuration: those in ``HeartConfig.fact_scorer_dir``
(file by file), else the packaged ones fitted with the embedder in use.

The pair scorers read the embedder's cosine, whose scale is the embedder's own (one pair
of sentences has another cosine under each), so weights belong to one embedder. The
package ships a set for the default embedder and one per embedder in
:data:`PACKAGED_FOR`; any other embedder gets the default's set, with a logged warning.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from memory_kernel.embeddings.hybrid import HYBRID_NAME
from memory_kernel.embeddings.sentence_transformers import DEFAULT_MODEL as MINILM
from memory_kernel.errors import ConfigError
from memory_kernel.heart.facts.admission_features import ADMISSION_FEATURES
from memory_kernel.heart.facts.pairs import PAIR_FEATURES
from memory_kernel.heart.facts.query_slot import READ_FEATURES
from memory_kernel.heart.facts.scorer import LinearScorer, load_scorer, packaged

__all__ = ["PACKAGED_FOR", "Scorers", "load_scorers"]

#: Embedder name -> folder under ``heart/facts/weights`` with the set fitted with it (what
#: ``scripts/train_fact_scorers.py --embedder`` wrote); the default embedder's set is the
#: folder itself.
PACKAGED_FOR = {f"st:{MINILM}": "minilm", HYBRID_NAME: "hybrid"}

_log = logging.getLogger(__name__)

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

    @property
    def embedder(self) -> str:
        """The embedder the cosine-reading scorers were fitted with ("" when unknown)."""
        return str(self.update.trained_on.get("embedder", ""))


def load_scorers(directory: str | None, embedder: str = "") -> Scorers:
    """Each scorer from ``directory/<name>.json`` when that file exists, else the packaged
    one fitted with ``embedder`` (the default embedder's when none was shipped for it)."""
    where = Path(directory) if directory else None
    if where is not None and not where.is_dir():
        raise ConfigError(f"heart.fact_scorer_dir {directory!r} is not a directory")
    folder = PACKAGED_FOR.get(embedder, "")
    chosen = {}
    for name, names in _FEATURES.items():
        path = where / f"{name}.json" if where is not None else None
        if path is not None and path.is_file():
            chosen[name] = load_scorer(path, names)
        else:
            chosen[name] = packaged(name, names, folder)
    scorers = Scorers(**chosen)
    if embedder and scorers.embedder not in ("", embedder):
        _log.warning(
            "fact scorers fitted with %s are used with the embedder %s: dedup and supersession "
            "read its cosines on another scale; retrain them (scripts/train_fact_scorers.py "
            "--embedder) and set heart.fact_scorer_dir (docs/tuning.md)",
            scorers.embedder, embedder,
        )  # fmt: skip
    return scorers
