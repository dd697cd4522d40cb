"""Decision gate: replay labelled agent responses as turns through ``pre_turn``/``post_turn``.

Data: JSON lines ``{"id", "frame", "response_text", "tool_names", "label"}`` with ``label``
``decision`` or ``noise`` (extra fields such as ``why`` are ignored). Each row is one turn in
a session of its own (so rows cannot deduplicate each other, and a row's outcome does not
depend on the other rows) in the row's frame; its tools become ``ToolResult`` s (a
``record_decision`` tool carries the response as its description). A row counts as
*recorded* when its turn stored any active decision.

Metrics: ``noise_rate`` = noise recorded / all recorded; ``decisions_missed`` = decision rows
not recorded (and ``missed_rate``, its share). ``content_*`` replays every row in the
``decision`` frame, so the frame shortcut is off and only layers 1–3 judge the text: the
classifier itself, as if the host's frame selector picked "decision" for every turn.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from memory_kernel.config import MemoryKernelConfig
from memory_kernel.errors import ConfigError
from memory_kernel.eval._metrics import Metrics, binary_metrics
from memory_kernel.eval.kernel_api import (
    FrozenClock,
    MemoryKernel,
    ToolResult,
    TurnInput,
    TurnOutcome,
    TurnResult,
)
from memory_kernel.eval.nightly import JudgeLog, consolidate_judged, judge_opened
from memory_kernel.eval.progress import progress
from memory_kernel.eval.report import SuiteReport
from memory_kernel.eval.store import eval_kernel
from memory_kernel.eval.targets import targets_for
from memory_kernel.judges.base import Judge
from memory_kernel.models.consolidation import ConsolidationAction
from memory_kernel.protocols import Embedder

__all__ = [
    "GateDecision",
    "decide",
    "load_rows",
    "objective",
    "recorded",
    "replay_all",
    "run",
    "score",
]

_LABELS = ("decision", "noise")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class GateDecision(NamedTuple):
    """Whether a row was recorded with its frame as given and in the decision frame."""

    framed: bool
    content: bool


def load_rows(path: Path) -> list[dict[str, Any]]:
    rows = []
    try:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if row.get("label") not in _LABELS or not isinstance(row.get("response_text"), str):
                raise ConfigError(f"{path}:{number}: needs response_text and label {_LABELS}")
            if "id" not in row:
                raise ConfigError(f"{path}:{number}: needs an id")
            rows.append(row)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read decision-gate data from {path}: {exc}") from exc
    if not rows:
        raise ConfigError(f"no rows in {path}")
    ids = Counter(str(row["id"]) for row in rows)
    if len(ids) != len(rows):
        raise ConfigError(f"{path}: duplicate ids {[k for k, v in ids.items() if v > 1][:5]}")
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


def recorded(result: TurnResult) -> bool:
    return result.decision is not None or bool(result.explicit)


def _why(result: TurnResult) -> str:
    if recorded(result):
        return "recorded"
    return f"layer {result.layer}: {result.skipped}: {result.reason}"


def _half(rows: Sequence[dict[str, Any]], chosen: Sequence[bool], prefix: str) -> Metrics:
    pairs = list(zip(chosen, rows, strict=True))
    noise = sum(rec for rec, row in pairs if row["label"] == "noise")
    decisions = [rec for rec, row in pairs if row["label"] == "decision"]
    total = sum(chosen)
    return {
        f"{prefix}recorded": total,
        f"{prefix}noise_recorded": noise,
        f"{prefix}noise_rate": round(noise / total, 4) if total else 0.0,
        f"{prefix}decisions_missed": decisions.count(False),
        f"{prefix}missed_rate": round(decisions.count(False) / len(decisions), 4)
        if decisions
        else 0.0,
    }


def score(rows: Sequence[dict[str, Any]], decisions: Sequence[GateDecision]) -> Metrics:
    """The gate's metrics for ``rows`` given what was recorded of each (pure)."""
    return {
        "rows": len(rows),
        **_half(rows, [d.framed for d in decisions], ""),
        **_half(rows, [d.content for d in decisions], "content_"),
    }


def objective(rows: Sequence[dict[str, Any]], decisions: Sequence[GateDecision]) -> float:
    """What a fitted gate threshold maximises: F1 of "recorded" against ``decision`` rows,
    content only (as ``memory-kernel tune gate``)."""
    gold = [row["label"] == "decision" for row in rows]
    return float(binary_metrics([d.content for d in decisions], gold)["f1"])


def _wrong(rows: Sequence[dict[str, Any]], chosen: Sequence[bool]) -> list[str]:
    return [
        str(row["id"])
        for rec, row in zip(chosen, rows, strict=True)
        if rec != (row["label"] == "decision")
    ]


def _confusion(rows: list[dict[str, Any]], results: list[TurnResult]) -> list[dict[str, Any]]:
    pairs = list(zip(rows, results, strict=True))
    return [
        {
            "label": label,
            "rows": sum(r["label"] == label for r in rows),
            "recorded": sum(r["label"] == label and recorded(x) for r, x in pairs),
            "not recorded": sum(r["label"] == label and not recorded(x) for r, x in pairs),
        }
        for label in _LABELS
    ]


def _stopped(rows: list[dict[str, Any]], results: list[TurnResult]) -> list[dict[str, Any]]:
    counts = Counter(f"{r['label']} — {_why(x)}" for r, x in zip(rows, results, strict=True))
    return [{"row": k, "count": v} for k, v in sorted(counts.items())]


async def replay_all(
    kernel: MemoryKernel, clock: FrozenClock, rows: Sequence[dict[str, Any]], *, agent: str,
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


class _Replayed(NamedTuple):
    framed: list[TurnResult]
    content: list[TurnResult]
    counters: str
    #: With a judge: what each row ended as after the nightly runs, and what it was asked.
    judged: list[GateDecision] | None = None
    log: JudgeLog | None = None


async def _replay_both(
    rows: Sequence[dict[str, Any]],
    embedder: Embedder,
    config: MemoryKernelConfig | None,
    judge: Judge | None = None,
) -> _Replayed:
    """Every row replayed with its frame as given and in the decision frame, on one fresh
    kernel; a line of the gate's counters; with ``judge``, both agents then consolidated
    until the judge has read their uncertain band (``brain.review``)."""
    clock = FrozenClock()
    async with eval_kernel(embedder, clock=clock, config=config, judge=judge) as kernel:
        framed = await replay_all(kernel, clock, rows, agent="gate")
        content = await replay_all(kernel, clock, rows, agent="gate-content", frame="decision")
        stats = kernel.stats()
        counters = (
            f"kernel.stats(): informational {stats.informational.reasons}, "
            f"quality gate {stats.quality_gate.reasons}, duplicate {stats.duplicate.reasons}"
        )
        if judge is None:
            return _Replayed(framed, content, counters)
        log = JudgeLog(_JUDGED)
        for agent in ("gate", "gate-content"):
            await consolidate_judged(kernel, agent, log, _JUDGED)
        judged = [
            GateDecision(
                await _recorded_in(kernel, "gate", row),
                await _recorded_in(kernel, "gate-content", row),
            )
            for row in rows
        ]
    return _Replayed(framed, content, counters, judged, log)


_JUDGED = {
    "judge_rejected": ConsolidationAction.DECISIONS_REJECTED,
    "judge_restored": ConsolidationAction.DECISIONS_RESTORED,
}


async def _recorded_in(kernel: MemoryKernel, agent: str, row: dict[str, Any]) -> bool:
    """Whether the row's session holds an active decision (as ``recorded`` of its result)."""
    found = await kernel.brain.get_recent_decisions(
        agent, _EPOCH, limit=1, session_id=f"{agent}-{row['id']}"
    )
    return bool(found)


async def decide(
    rows: Sequence[dict[str, Any]],
    embedder: Embedder,
    config: MemoryKernelConfig | None = None,
    judge: Judge | None = None,
) -> list[GateDecision]:
    """What was recorded of each row (frame as given, content only); with ``judge``, after
    the nightly runs in which it read layer 1's uncertain band."""
    replayed = await _replay_both(rows, embedder, config, judge)
    if replayed.judged is not None:
        return replayed.judged
    pairs = zip(replayed.framed, replayed.content, strict=True)
    return [GateDecision(recorded(f), recorded(c)) for f, c in pairs]


async def run(
    data: Path,
    embedder: Embedder,
    *,
    config: MemoryKernelConfig | None = None,
    judge: str | Judge | None = None,
) -> SuiteReport:
    """The suite; with ``judge`` (``openai:<model>@<base_url>``, or a judge object), the
    gate's figures are those after the nightly runs in which it read layer 1's uncertain
    band (``ConsolidationConfig.judge_decision_band``)."""
    rows = load_rows(data)
    async with judge_opened(judge) as chosen:
        replayed = await _replay_both(rows, embedder, config, chosen)
    framed, content = replayed.framed, replayed.content
    main, alt = [recorded(r) for r in framed], [recorded(r) for r in content]
    notes = [f"rows {len(rows)}; each row replayed as one turn in its own session"]
    extra: Metrics = {}
    if replayed.judged is not None and replayed.log is not None:
        before = score(rows, [GateDecision(f, c) for f, c in zip(main, alt, strict=True)])
        notes.append(
            "with a judge: each agent consolidated until the judge read layer 1's uncertain "
            f"band; before it: noise {before['noise_rate']} (content only "
            f"{before['content_noise_rate']}), missed {before['decisions_missed']} (content "
            f"only {before['content_decisions_missed']})"
        )
        notes += replayed.log.notes()
        main = [d.framed for d in replayed.judged]
        alt = [d.content for d in replayed.judged]
        extra = dict(replayed.log.counts)
    metrics = {**score(rows, [GateDecision(f, c) for f, c in zip(main, alt, strict=True)]), **extra}
    notes += [
        f"misclassified (frame as given): {', '.join(_wrong(rows, main)) or 'none'}",
        f"misclassified (content only): {', '.join(_wrong(rows, alt)) or 'none'}",
        replayed.counters,
    ]
    return SuiteReport(
        suite="gate",
        data=str(data),
        embedder=embedder.name,
        metrics=metrics,
        tables={
            "confusion": _confusion(rows, framed),
            "what stopped each row (frame as given)": _stopped(rows, framed),
            "what stopped each row (content only)": _stopped(rows, content),
        },
        notes=notes,
        targets=targets_for("gate", metrics),
    )
