"""What ``eval --folds`` fits per suite: the rows, their strata and the :class:`Fittable`.

- ``gate``: the decision classifier's weights (``eval/gate_model.py``), trained on the
  training folds, each held-out fold replayed through the hooks with them;
- ``admission``, ``dedup``, ``ku``: the learned fact scorer of the suite (admission,
  duplicate, update), fitted on the training folds plus the other development files the
  shipped scorer learns from (``eval/fact_models.py``); an MRPC file for ``dedup`` sweeps
  ``heart.fact_dedup_similarity`` (the ``tune dedup`` parameter), F1 of merges.

Threshold grids are the ``memory-kernel tune`` defaults plus today's default value, so a
fold may keep the current setting. A learned scorer is the setup's ``model`` (the gate's
is): the harness (``eval/cv.py``) does not change.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memory_kernel.config import MemoryKernelConfig
from memory_kernel.eval import admission, dedup, gate, ku
from memory_kernel.eval._metrics import binary_metrics
from memory_kernel.eval.cv import CvSetup
from memory_kernel.eval.dedup_judge import decide_judged
from memory_kernel.eval.fact_models import Fitted, ScorerClassifier, admission_fit, pair_fit
from memory_kernel.eval.fact_training import LabelledPair
from memory_kernel.eval.fittable import (
    SuiteRules,
    ThresholdClassifier,
)
from memory_kernel.eval.gate_model import FittedGate, LearnedGate
from memory_kernel.eval.sweep import SWEEPS, parse_values
from memory_kernel.judges.base import Judge
from memory_kernel.protocols import Embedder

__all__ = ["SETUPS", "grid_with_default"]


def grid_with_default(suite: str) -> tuple[str, list[float]]:
    """The swept parameter of ``suite`` and its ``tune`` grid with today's default added."""
    spec = SWEEPS[suite]
    section, _, field = spec.param.partition(".")
    default = float(getattr(getattr(MemoryKernelConfig(), section), field))
    return spec.param, sorted({*parse_values(spec.values), default})


def _gate(
    data: Path, embedder: Embedder, judge: Judge | None = None,
    config: MemoryKernelConfig | None = None,
) -> CvSetup[dict[str, Any], FittedGate]:  # fmt: skip
    rows = gate.load_rows(data)
    # With a judge, each held-out fold is judged after its replay.
    model = LearnedGate(embedder, judge=judge, config=config)
    return CvSetup(rows, [str(r["label"]) for r in rows], model, "label (decision / noise)")


def _merge_f1(pairs: Sequence[dedup.Pair], merges: Sequence[bool]) -> float:
    return float(binary_metrics(merges, [p.same for p in pairs])["f1"])


def _dedup_pair(pair: dedup.Pair) -> LabelledPair:
    update = False if pair.same or pair.kind == "unrelated_same_topic" else None
    return LabelledPair(pair.id, pair.a, pair.b, update, pair.same)


def _dedup(
    data: Path, embedder: Embedder, judge: Judge | None = None,
    config: MemoryKernelConfig | None = None,
) -> CvSetup[dedup.Pair, Any]:  # fmt: skip
    kind, pairs = dedup.load_pairs(data)

    async def decide(chosen: Sequence[dedup.Pair], config: MemoryKernelConfig) -> list[bool]:
        if judge is not None:  # each pair learn kept apart consolidated with the judge
            return (await decide_judged(chosen, embedder, judge, config=config))[1]
        return dedup.merged(await dedup.decide(chosen, embedder, config=config))

    rules = SuiteRules(decide=decide, score=dedup.score, key=lambda pair: pair.id)
    labels = ["same" if p.same else "apart" for p in pairs]
    if kind == "pairs":
        fit_rows, note = pair_fit(("duplicate",), data, embedder, _dedup_pair)
        model = ScorerClassifier(
            rules, name="duplicate", fit_rows=fit_rows, note=note, config=config
        )
        return CvSetup(pairs, labels, model, "label (same / apart)")
    param, grid = grid_with_default("dedup")
    threshold_model = ThresholdClassifier(
        rules, param=param, grid=grid, objective=_merge_f1,
        objective_name=SWEEPS["dedup"].objective, objective_detail="merged vs same meaning",
        config=config,
    )  # fmt: skip
    return CvSetup(pairs, labels, threshold_model, "label (same / apart)")


def _admission_row(row: admission.Row) -> tuple[str, bool]:
    return str(row["content"]), row["label"] == "admit"


def _admission(
    data: Path, embedder: Embedder, config: MemoryKernelConfig | None = None
) -> CvSetup[admission.Row, Fitted]:
    rows = admission.load_rows(data)

    async def decide(chosen: Sequence[admission.Row], config: MemoryKernelConfig) -> list[bool]:
        return await admission.decide(chosen, embedder, config)

    rules = SuiteRules(decide=decide, score=admission.score, key=lambda row: str(row["id"]))
    labels = [str(r["label"]) for r in rows]
    fit_rows, note = admission_fit(data, _admission_row)
    model = ScorerClassifier(rules, name="admission", fit_rows=fit_rows, note=note, config=config)
    return CvSetup(rows, labels, model, "label (admit / reject)")


def _ku_pair(pair: ku.KuPair) -> LabelledPair:
    update = pair.label == "update"
    return LabelledPair(pair.id, pair.old_fact, pair.new_fact, update, False, pair.topic)


def _ku(
    data: Path, embedder: Embedder, judge: Judge | None = None,
    config: MemoryKernelConfig | None = None,
) -> CvSetup[ku.KuPair, Fitted]:  # fmt: skip
    pairs = ku.load_pairs(data)

    async def decide(chosen: Sequence[ku.KuPair], config: MemoryKernelConfig) -> list[ku.Checked]:
        # Held out, alone and among every pair of the file (the other folds' facts are the
        # strangers a held-out fact must not be taken for); with a judge, after its nights.
        return await ku.decide_with_shared(chosen, pairs, embedder, config, judge)

    rules = SuiteRules(decide=decide, score=ku.score_with_shared, key=lambda pair: pair.id)
    labels = [p.label for p in pairs]
    # Write time (the update scorer) and read time (the read scorer) are fitted together.
    fit_rows, note = pair_fit(("update", "read"), data, embedder, _ku_pair)
    model = ScorerClassifier(
        rules, name="update and read", fit_rows=fit_rows, note=note, config=config
    )
    return CvSetup(pairs, labels, model, "label (update / distinct)")


SETUPS: dict[str, Callable[..., CvSetup[Any, Any]]] = {
    "gate": _gate,
    "dedup": _dedup,
    "admission": _admission,
    "ku": _ku,
}
