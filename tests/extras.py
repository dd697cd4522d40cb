"""An optional extra missing: what a fresh interpreter prints when a constructor that needs
it raises ``ConfigError`` (the install hint), as on an install without the extra."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_SRC = Path(__file__).resolve().parents[1] / "src"


def error_without(module: str, imports: str, call: str) -> str:
    """The ``ConfigError`` message of ``call`` (after ``imports``) where ``module`` cannot
    be imported."""
    code = (
        f"import sys; sys.modules[{module!r}] = None\n"
        f"{imports}\n"
        "from memory_kernel.errors import ConfigError\n"
        "try:\n"
        f"    {call}\n"
        "except ConfigError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(_SRC)},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout
