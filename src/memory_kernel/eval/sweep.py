"""Threshold sweeps behind ``memory-kernel tune``: run a suite once per value of one
threshold and tabulate precision / recall / F1 / accuracy, with the best value.

Every swept suite is a binary decision scored against gold labels, so one table fits all:

- ``dedup``: is the second statement of a pair merged into the first? Default parameter
  ``heart.fact_dedup_similarity`` (the cosine that admits a dedup candidate), run through the
  real ``learn`` pipeline on a fresh schema per value; ``--param cosine`` scores the raw
  cosine alone (how the embedder separates paraphrases, whatever the word rules do).
- ``gate``: is a response recorded as a decision? Every row is replayed in the ``decision``
  frame (the ``content_*`` measure of ``eval gate``): with the frame as given, the frame
  shortcut decides most rows before any threshold is read. Parameter
  ``brain.decision_threshold`` by default (layer 1's cut on the decision classifier's
  probability); ``--param brain.min_description_chars`` sweeps layer 3's length rule.
- ``stsb``: raw cosine against "same meaning" = gold similarity >= 4 of 5 (the annotation
  scale's "mostly equivalent"); it calibrates the cosine thresholds that stand for "same
  thing" (``brain.dedup_cosine``, ``heart.episode_dedup_similarity``, merge thresholds).

``admission`` and ``ku`` are refused: fact admission is rule-based (no threshold) and the
knowledge-update result is a count, not a binary decision. The config is frozen: each value
is applied with ``model_copy(update=...)`` after validating the section, so an out-of-range
value is a ``ConfigError``, never a silently invalid config.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from memory_kernel.config import MemoryKernelConfig
from memory_kernel.errors import ConfigError
from memory_kernel.eval import dedup, gate, stsb
from memory_kernel.eval._metrics import binary_metrics
from memory_kernel.eval.kernel_api import FrozenClock
from memory_kernel.eval.progress import progress
from memory_kernel.eval.report import SuiteReport
from memory_kernel.eval.store import eval_kernel, eval_server
from memory_kernel.protocols import Embedder

__all__ = ["COSINE", "SWEEPS", "SweepSpec", "best_value", "override", "parse_values", "sweep"]

COSINE = "cosine"  # the raw-cosine "parameter": no config field, the embedder alone
STSB_POSITIVE = 4.0
_MAX_VALUES = 200


@dataclass(frozen=True, slots=True)
class SweepSpec:
    param: str  # "section.field" of MemoryKernelConfig, or COSINE
    values: str  # default range, as --values takes it
    objective: str = "f1"


SWEEPS: dict[str, SweepSpec] = {
    "dedup": SweepSpec("heart.fact_dedup_similarity", "0.2:0.9:0.05"),
    "gate": SweepSpec("brain.decision_threshold", "0.1:0.9:0.1"),
    "stsb": SweepSpec(COSINE, "0.3:0.95:0.05"),
}
_REFUSED = {
    "admission": "fact admission is rule-based (heart/facts/admission.py): no threshold to sweep",
    "ku": "the knowledge-update result is a count per pair, not a binary decision to sweep",
    "locomo": "locomo measures recall against a token budget: use `eval locomo --plot`",
}


def parse_values(text: str) -> list[float]:
    """``"start:stop:step"`` (stop included) or ``"a,b,c"``."""
    try:
        if ":" in text:
            start, stop, step = (float(part) for part in text.split(":"))
            if step <= 0 or stop < start:
                raise ValueError("need step > 0 and stop >= start")
            count = round((stop - start) / step) + 1
            values = [round(start + i * step, 6) for i in range(count)]
        else:
            values = sorted({float(part) for part in text.split(",") if part.strip()})
    except ValueError as exc:
        raise ConfigError(f"unreadable --values {text!r}: {exc}") from exc
    if not values or len(values) > _MAX_VALUES:
        raise ConfigError(f"--values {text!r} gives {len(values)} values (1-{_MAX_VALUES})")
    return values


def override(config: MemoryKernelConfig, param: str, value: float) -> MemoryKernelConfig:
    """``config`` with ``section.field`` set to ``value``, validated like a loaded file."""
    section_name, _, field = param.partition(".")
    section = getattr(config, section_name, None)
    if not isinstance(section, BaseModel) or field not in type(section).model_fields:
        raise ConfigError(f"unknown config parameter {param!r} (use section.field)")
    try:
        updated = type(section).model_validate({**section.model_dump(), field: value})
    except PydanticValidationError as exc:
        raise ConfigError(f"{param} = {value}: {exc.errors()[0]['msg']}") from exc
    return config.model_copy(update={section_name: updated})


def best_value(values: Sequence[float], scores: Sequence[float]) -> float:
    """The middle of the longest run of consecutive values reaching the best score: the
    threshold farthest from where the score starts to drop (first run on a tie)."""
    top = max(scores)
    runs: list[list[int]] = []
    for i, score in enumerate(scores):
        if score != top:
            continue
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    longest = max(runs, key=len)  # max keeps the first of equal lengths
    return values[longest[(len(longest) - 1) // 2]]


async def _dedup_decisions(
    data: Path, embedder: Embedder, param: str, values: list[float]
) -> tuple[list[bool], list[list[bool]]]:
    _, pairs = dedup.load_pairs(data)
    if not pairs:
        raise ConfigError(f"no dedup pairs in {data}")
    gold = [p.same for p in pairs]
    if param == COSINE:
        scores = await dedup.cosines(pairs, embedder)
        return gold, [[s >= v for s in scores] for v in values]
    rows = []
    with progress(f"sweeping {param}", len(values)) as advance:
        for value in values:
            cfg = override(MemoryKernelConfig(), param, value)
            outcomes = await dedup.decide(pairs, embedder, config=cfg)
            rows.append(dedup.merged(outcomes))
            advance(1)
    return gold, rows


async def _gate_decisions(
    data: Path, embedder: Embedder, param: str, values: list[float]
) -> tuple[list[bool], list[list[bool]]]:
    rows = gate.load_rows(data)
    predicted = []
    with progress(f"sweeping {param}", len(values)) as advance:
        for value in values:
            clock = FrozenClock()
            cfg = override(MemoryKernelConfig(), param, value)
            async with eval_kernel(embedder, clock=clock, config=cfg) as kernel:
                results = await gate.replay_all(
                    kernel, clock, rows, agent="gate-content", frame="decision"
                )
            predicted.append([gate.recorded(r) for r in results])
            advance(1)
    return [row["label"] == "decision" for row in rows], predicted


async def _stsb_decisions(
    data: Path, embedder: Embedder, param: str, values: list[float]
) -> tuple[list[bool], list[list[bool]]]:
    pairs = stsb.load_pairs(data)
    if not pairs:
        raise ConfigError(f"no STS-B pairs in {data}")
    scores = (await stsb.cosines(pairs, embedder)).tolist()
    gold = [p[0] >= STSB_POSITIVE for p in pairs]
    return gold, [[s >= v for s in scores] for v in values]


def _check_param(suite: str, param: str, grid: list[float]) -> None:
    """Fail before any work: a parameter the suite cannot sweep, or a value out of range."""
    if suite == "stsb" and param != COSINE:
        raise ConfigError("stsb sweeps the raw cosine only (no config field is involved)")
    if suite == "gate" and param == COSINE:
        raise ConfigError("the gate has no raw cosine to sweep: use --param brain.<field>")
    if param != COSINE:
        for value in grid:
            override(MemoryKernelConfig(), param, value)


_DECIDERS = {"dedup": _dedup_decisions, "gate": _gate_decisions, "stsb": _stsb_decisions}


def _field(param: str) -> tuple[float | None, bool]:
    """The default value of ``param`` and whether the field is an integer."""
    if param == COSINE:
        return None, False
    section_name, _, name = param.partition(".")
    section = getattr(MemoryKernelConfig(), section_name)
    value = getattr(section, name)
    is_int = type(section).model_fields[name].annotation is int
    return (float(value) if isinstance(value, int | float) else None), is_int


def _row(param: str, value: float, predicted: list[bool], gold: list[bool]) -> dict[str, Any]:
    m = binary_metrics(predicted, gold)
    shown: float | int = int(value) if _field(param)[1] else value
    return {
        "threshold": shown,
        "precision": m["precision"],
        "recall": m["recall"],
        "f1": m["f1"],
        "accuracy": m["accuracy"],
        "pos": m["tp"] + m["fp"],
        "fp": m["fp"],
        "fn": m["fn"],
    }


async def sweep(
    suite: str,
    data: Path,
    embedder: Embedder,
    *,
    param: str | None = None,
    values: str | None = None,
) -> SuiteReport:
    """Evaluate ``suite`` at every value of one threshold; the report's ``sweep`` table
    has a row per value and its metrics name the best value."""
    if suite in _REFUSED:
        raise ConfigError(f"cannot sweep {suite}: {_REFUSED[suite]}")
    spec = SWEEPS.get(suite)
    if spec is None:
        raise ConfigError(f"unknown suite {suite!r}; sweepable: {', '.join(sorted(SWEEPS))}")
    chosen = param or spec.param
    grid = parse_values(values or spec.values)
    _check_param(suite, chosen, grid)
    async with eval_server():
        gold, predicted = await _DECIDERS[suite](data, embedder, chosen, grid)
    rows = [_row(chosen, v, p, gold) for v, p in zip(grid, predicted, strict=True)]
    return _report(suite, data, embedder, spec, chosen, rows)


def _report(
    suite: str, data: Path, embedder: Embedder, spec: SweepSpec, param: str,
    rows: list[dict[str, Any]],
) -> SuiteReport:  # fmt: skip
    scores = [float(r[spec.objective]) for r in rows]
    best = best_value([float(r["threshold"]) for r in rows], scores)
    best_row = next(r for r in rows if float(r["threshold"]) == best)
    metrics: dict[str, float | int] = {
        "values": len(rows),
        "best_threshold": best,
        f"best_{spec.objective}": best_row[spec.objective],
        "best_precision": best_row["precision"],
        "best_recall": best_row["recall"],
    }
    default, _ = _field(param)
    notes = [f"parameter: {param}; objective: {spec.objective} (best = middle of the widest "
             "range of values reaching the top score)"]  # fmt: skip
    if scores[0] == max(scores) or scores[-1] == max(scores):
        notes.append("the top score reaches an end of the grid: widen --values to see where "
                     "it drops (the best value is the middle of what was measured)")  # fmt: skip
    if default is not None:
        metrics["default_threshold"] = default
        near = min(rows, key=lambda r: abs(float(r["threshold"]) - default))
        notes.append(f"at the default {default:g}: {spec.objective} {near[spec.objective]} "
                     f"(row {near['threshold']})")  # fmt: skip
    if suite == "stsb":
        notes.append(f"positive = gold similarity >= {STSB_POSITIVE:g} of 5")
    if suite == "gate":
        notes.append("every row replayed in the decision frame (content only); "
                     "positive = recorded as a decision")  # fmt: skip
    notes.append("a threshold belongs to one embedder: re-run this sweep after changing it")
    return SuiteReport(
        suite=f"{suite} sweep",
        data=str(data),
        embedder=embedder.name,
        metrics=metrics,
        tables={"sweep": rows},
        notes=notes,
    )
