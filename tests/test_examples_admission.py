"""``examples/admission.py`` runs (on its own embedded server) and shows the seed's four
admission decisions, each with a reason."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "admission.py"


def test_admission_example_prints_the_four_decisions() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    decisions = re.findall(
        r"-> (ADD|NOT|REPLACE|MERGE)\n\s+similarity (\S+), decided by (\w+): (.+)", done.stdout
    )
    assert [d[0] for d in decisions] == ["ADD", "NOT", "ADD", "REPLACE", "ADD", "MERGE"]
    assert all(d[2] == "rule" and d[3].strip() for d in decisions)
    assert "succeeded where the old one failed" in done.stdout
    assert "the failed run is now superseded" in done.stdout
    assert "search returns 4 runs" in done.stdout
