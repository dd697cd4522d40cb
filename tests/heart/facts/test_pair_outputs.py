"""The pair rules decide the development pairs exactly as recorded (``pair_outputs.py``): a
change made for speed (caching, precomputing, skipping work whose result is not used) must
not move a single verdict, probability or feature."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.heart.facts.pair_outputs import GOLDEN, digests

_DEV = Path(
    os.environ.get("MEMORY_KERNEL_DEV_DATA", Path(__file__).parents[3] / ".." / "shared/eval/dev")
)


@pytest.mark.skipif(not (_DEV / "dedup_pairs").is_dir(), reason="no development data here")
def test_the_development_pairs_are_decided_as_recorded() -> None:
    expected = json.loads(GOLDEN.read_text("utf-8"))
    found = digests(_DEV)
    changed = sorted(k for k in expected if found.get(k) != expected[k])
    assert set(found) == set(expected)
    assert not changed, (
        f"{len(changed)} of {len(expected)} pair outputs changed (first: {changed[:5]}); "
        "if the change is meant, rewrite them: tests/heart/facts/pair_outputs.py"
    )
