"""Stratified K-fold splits: every row is held out exactly once, each fold keeps the label
mix of the whole file, and the split depends only on the labels and the seed."""

from __future__ import annotations

import random
from collections.abc import Sequence

from memory_kernel.errors import ConfigError

__all__ = ["MAX_FOLDS", "check_folds", "stratified_folds"]

MAX_FOLDS = 50


def check_folds(folds: int, rows: int) -> None:
    """Refuse a fold count that cannot hold every fold out on at least one row."""
    if not 2 <= folds <= MAX_FOLDS:
        raise ConfigError(f"--folds {folds}: use 2 to {MAX_FOLDS}")
    if folds > rows:
        raise ConfigError(f"--folds {folds} needs at least {folds} rows; the file has {rows}")


def stratified_folds(labels: Sequence[str], folds: int, seed: int) -> list[list[int]]:
    """The row indices held out by each of ``folds`` folds (each list sorted).

    Per label (in sorted order) the rows are shuffled with ``random.Random(seed)`` and dealt
    round robin, starting where the previous label stopped, so fold sizes differ by at most
    one and each label's count per fold differs by at most one.
    """
    check_folds(folds, len(labels))
    rng = random.Random(seed)
    held: list[list[int]] = [[] for _ in range(folds)]
    position = 0
    for label in sorted(set(labels)):
        members = [i for i, value in enumerate(labels) if value == label]
        rng.shuffle(members)
        for index in members:
            held[position % folds].append(index)
            position += 1
    return [sorted(fold) for fold in held]
