"""Decision gate: replay labelled agent responses as turns through ``pre_turn``/``post_turn``.

Data: JSON lines ``{"id", "frame", "response_text", "tool_names", "label"}`` with ``label``
``decision`` or ``noise``. Each row is one turn in a session of its own (so rows cannot
deduplicate each other) in the row's frame; its tools become ``ToolResult`` s (a
``record_decision`` tool carries the response as its description). A row counts as
*recorded* when its turn stored any active decision.

Metrics: ``noise_rate`` = noise recorded / all recorded; ``decisions_missed`` = decision rows
not recorded (and its share). ``content_*`` replays every row in the ``decision`` frame, so
the frame shortcut is off and only layers 1–3 judge the text: a measure of how the filter
would do if the host's frame selector picked "decision" too often.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from memory_kernel.config import MemoryKernelConfig
from memory_kernel.errors import ConfigError
from memory_kernel.eval.progress import progress
from memory_kernel.eval.report import SuiteReport
from memory_kernel.eval.store import eval_kernel
from memory_kernel.kernel import MemoryKernel
from memory_kernel.models.turns import ToolResult, TurnInput, TurnOutcome, TurnResult
from memory_kernel.protocols import Embedder
from memory_kernel.testing import FrozenClock

__all__ = ["load_rows", "replay_all", "run"]

_LABELS = ("decision", "noise")


def load_rows(path: Path) -> list[dict[str, Any]]:
    rows = []
    try:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if row.get("label") not in _LABELS or not isinstance(row.get("response_text"), str):
                raise ConfigError(f"{path}:{number}: needs response_text and label {_LABELS}")
            rows.append(row)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read decision-gate data from {path}: {exc}") from exc
    if not rows:
        raise ConfigError(f"no rows in {path}")
    return rows


def _outcome(row: dict[str, Any]) -> TurnOutcome:
    tools = []
    for name in row.get("tool_names") or []:
        args = {"description": row["response_text"]} if name == "record_decision" else {}
        tools.append(ToolResult(tool_name=name, arguments=args))
    return TurnOutcome(response_text=row["response_text"], tool_results=tools)


async def _replay(
    kernel: MemoryKernel,
    clock: FrozenClock,
    row: dict[str, Any],
    *,
    agent: str,
    frame: str | None,
) -> TurnResult:
    clock.advance(seconds=1)
    turn = TurnInput(
        agent_id=agent,
        session_id=f"{agent}-{row['id']}",
        message="Please go ahead with the next step.",  # the data set has no user message
        frame=frame,
    )
    ctx = await kernel.pre_turn(turn)
    return await kernel.post_turn(ctx.turn, _outcome(row))


def _why(result: TurnResult) -> str:
    if result.decision is not None or result.explicit:
        return "recorded"
    return f"layer {result.layer}: {result.skipped}: {result.reason}"


def _score(rows: list[dict[str, Any]], results: list[TurnResult]) -> dict[str, Any]:
    recorded = [bool(r.decision is not None or r.explicit) for r in results]
    noise_recorded = sum(
        rec for rec, row in zip(recorded, rows, strict=True) if row["label"] == "noise"
    )
    decisions = [rec for rec, row in zip(recorded, rows, strict=True) if row["label"] == "decision"]
    total = sum(recorded)
    return {
        "recorded": total,
        "noise_recorded": noise_recorded,
        "noise_rate": round(noise_recorded / total, 4) if total else 0.0,
        "decisions_missed": decisions.count(False),
        "missed_rate": round(decisions.count(False) / len(decisions), 4) if decisions else 0.0,
        "wrong": [
            row["id"]
            for rec, row in zip(recorded, rows, strict=True)
            if rec != (row["label"] == "decision")
        ],
    }


def _confusion(rows: list[dict[str, Any]], results: list[TurnResult]) -> list[dict[str, Any]]:
    pairs = list(zip(rows, results, strict=True))
    return [
        {
            "label": label,
            "rows": sum(r["label"] == label for r in rows),
            "recorded": sum(r["label"] == label and _why(x) == "recorded" for r, x in pairs),
            "not recorded": sum(r["label"] == label and _why(x) != "recorded" for r, x in pairs),
        }
        for label in _LABELS
    ]


def _stopped(rows: list[dict[str, Any]], results: list[TurnResult]) -> list[dict[str, Any]]:
    counts = Counter(f"{r['label']} — {_why(x)}" for r, x in zip(rows, results, strict=True))
    return [{"row": k, "count": v} for k, v in sorted(counts.items())]


async def replay_all(
    kernel: MemoryKernel, clock: FrozenClock, rows: list[dict[str, Any]], *, agent: str,
    frame: str | None = None,
) -> list[TurnResult]:  # fmt: skip
    """Replay every row as a turn of ``agent``: in ``frame``, or the row's own frame."""
    results = []
    with progress(f"replaying turns ({agent})", len(rows)) as advance:
        for row in rows:
            chosen = frame or row.get("frame") or None
            results.append(await _replay(kernel, clock, row, agent=agent, frame=chosen))
            advance(1)
    return results


async def run(
    data: Path, embedder: Embedder, *, config: MemoryKernelConfig | None = None
) -> SuiteReport:
    rows = load_rows(data)
    clock = FrozenClock()
    async with eval_kernel(embedder, clock=clock, config=config) as kernel:
        framed = await replay_all(kernel, clock, rows, agent="gate")
        content = await replay_all(kernel, clock, rows, agent="gate-content", frame="decision")
        stats = kernel.stats()
    main, alt = _score(rows, framed), _score(rows, content)
    notes = [
        f"rows {len(rows)}; each row replayed as one turn in its own session",
        f"misclassified (frame as given): {', '.join(main['wrong']) or 'none'}",
        f"misclassified (content only): {', '.join(alt['wrong']) or 'none'}",
        f"kernel.stats(): informational {stats.informational.reasons}, "
        f"quality gate {stats.quality_gate.reasons}, duplicate {stats.duplicate.reasons}",
    ]
    return SuiteReport(
        suite="gate",
        data=str(data),
        embedder=embedder.name,
        metrics={
            "rows": len(rows),
            "recorded": main["recorded"],
            "noise_recorded": main["noise_recorded"],
            "noise_rate": main["noise_rate"],
            "decisions_missed": main["decisions_missed"],
            "missed_rate": main["missed_rate"],
            "content_noise_rate": alt["noise_rate"],
            "content_decisions_missed": alt["decisions_missed"],
        },
        tables={
            "confusion": _confusion(rows, framed),
            "what stopped each row (frame as given)": _stopped(rows, framed),
            "what stopped each row (content only)": _stopped(rows, content),
        },
        notes=notes,
        targets={
            "noise_rate": "0 (seed: < 0.05)",
            "decisions_missed": "<= 1 row",
            "missed_rate": "seed: < 0.05",
        },
    )
