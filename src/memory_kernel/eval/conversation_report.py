"""The conversations suite's report: ours next to the naive baseline, per question type."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_kernel.eval.answers import DATED_WINDOW_CHARS, PREFIX_CHARS
from memory_kernel.eval.dialogues import ABSTENTION, Dataset, Question
from memory_kernel.eval.report import SuiteReport

__all__ = ["QuestionResult", "Replayed", "Scores", "build_report"]

SYSTEMS = ("ours", "naive")
# Types in this order first (the authored set's, LongMemEval's, LoCoMo's), then any other.
TYPE_ORDER = (
    "knowledge-update",
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "temporal-reasoning",
    "preference",
    "single-hop",
    "multi-hop",
    "temporal",
    "open-domain",
    ABSTENTION,
)


@dataclass(frozen=True)
class Scores:
    """One system's context for one question (``None``: does not apply)."""

    answer: bool | None
    coverage: float | None
    stale: bool | None
    tokens: int
    empty: bool


@dataclass(frozen=True)
class QuestionResult:
    dialogue: str
    question: Question
    ours: Scores
    naive: Scores

    def of(self, system: str) -> Scores:
        return self.ours if system == "ours" else self.naive


@dataclass
class Replayed:
    """What the replay did, and what memory it formed (``(kind, status)`` → count)."""

    sessions: int = 0
    turns: int = 0
    exchanges: int = 0
    openings: int = 0
    consolidations: int = 0
    consolidations_failed: int = 0
    session_ends: int = 0
    formed: Counter[tuple[str, str]] = field(default_factory=Counter)


def _mean(values: Sequence[float | bool | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return round(sum(present) / len(present), 4) if present else None


# What each table column and headline metric reads from a system's scores of a question.
_PICKS: dict[str, Callable[[Scores], Any]] = {
    "answer": lambda s: s.answer,
    "evidence": lambda s: s.coverage,
    "stale": lambda s: s.stale,
    "tokens": lambda s: s.tokens,
}
_HEADLINE_NAMES = ("answer_in_context", "evidence_coverage", "stale_as_current", "tokens_mean")


def _empty(s: Scores) -> bool:
    return s.empty


def _column(
    results: Sequence[QuestionResult], system: str, pick: Callable[[Scores], Any]
) -> float | None:
    return _mean([pick(r.of(system)) for r in results])


def _row(name: str, results: Sequence[QuestionResult], show: set[str]) -> dict[str, Any]:
    row: dict[str, Any] = {"type": name, "n": len(results)}
    for metric, pick in _PICKS.items():
        if metric in show:
            for system in SYSTEMS:
                value = _column(results, system, pick)
                if metric == "tokens" and value is not None:
                    value = round(value)
                row[f"{metric} {system}"] = value
    row["empty ours"] = _column(results, "ours", _empty)
    return row


def _types(results: Sequence[QuestionResult]) -> list[str]:
    seen = {r.question.type for r in results}
    return [t for t in TYPE_ORDER if t in seen] + sorted(seen - set(TYPE_ORDER))


def _headline(results: Sequence[QuestionResult], budget: int) -> dict[str, float | int]:
    metrics: dict[str, float | int] = {
        "questions_scored": sum(not r.question.abstention for r in results),
        "abstention_questions": sum(r.question.abstention for r in results),
        "evidence_questions": sum(bool(r.question.evidence) for r in results),
        "stale_questions": sum(bool(r.question.stale_answers) for r in results),
    }
    picks = [*zip(_HEADLINE_NAMES, _PICKS.values(), strict=True), ("empty_context", _empty)]
    for name, pick in picks:
        for system in SYSTEMS:
            value = _column(results, system, pick)
            if value is not None:
                metrics[f"{system}_{name}"] = value
    metrics["ours_over_budget"] = sum(r.ours.tokens > budget for r in results)
    return metrics


def _detail(result: QuestionResult) -> dict[str, Any]:
    q = result.question
    row: dict[str, Any] = {"dialogue": result.dialogue, "qid": q.qid, "type": q.type}
    for system in SYSTEMS:
        s = result.of(system)
        row |= {
            f"{system}_answer": s.answer,
            f"{system}_coverage": s.coverage,
            f"{system}_stale": s.stale,
            f"{system}_tokens": s.tokens,
        }
    return row


def _notes(dataset: Dataset, embedder: str, replayed: Replayed, has_end_session: bool) -> list[str]:
    notes = [
        f"format: {dataset.format}; embedder: {embedder} for memory-kernel and the naive "
        "baseline alike",
        "ours: the hooks only (pre_turn/post_turn per exchange, consolidate when the day "
        "changes, questions as pre_turn in a new session with signals.token_budget); naive: "
        "every raw turn '[8 May 2023] role: text', cosine top turns filling the same budget "
        "(the last one cut to fit)",
        "answer in context: the normalised gold answer (casefold, punctuation → space, "
        "articles dropped) occurs as whole words in the normalised context, its last word "
        "perhaps plural, a day in either order ('July 2, 2023' as '2 July 2023'); abstention "
        "questions are not scored for it (their rows show tokens and empty contexts)",
        f"evidence coverage: an evidence turn is covered when its normalised text, or its "
        f"first {PREFIX_CHARS} normalised characters, occur in the context",
        "stale as current (knowledge-update with stale answers): a stale answer in the "
        f"context and not the current one, or a stale answer not within {DATED_WINDOW_CHARS} "
        "characters after a date mention (2023-08-11, 2023/05/20, 8 May, May 8 2023, "
        "May 2023); stale strings inside the current answer are ignored",
        "session end: kernel.end_session called at each session's end"
        if has_end_session
        else "session end: the kernel has no end_session, so nothing is called (the "
        "documented flow); the hooks' episodes stay ongoing",
        "questions are asked in order on one agent: a question's pre_turn may store the "
        "question itself (an episode), which later questions may then see",
    ]
    if replayed.openings:
        notes.append(
            f"{replayed.openings} sessions opened by the assistant were replayed with the "
            "placeholder user message '(the conversation continues)'"
        )
    for reason, count in sorted(dataset.skipped.items()):
        notes.append(f"skipped {reason}: {count}")
    return notes


def build_report(
    *, data: Path, embedder: str, dataset: Dataset, budget: int,
    results: Sequence[QuestionResult], replayed: Replayed, actions: Counter[str],
    has_end_session: bool,
) -> SuiteReport:  # fmt: skip
    metrics: dict[str, float | int] = {
        "conversations": len(dataset.dialogues),
        "sessions": replayed.sessions,
        "turns_replayed": replayed.turns,
        "exchanges": replayed.exchanges,
        "assistant_openings": replayed.openings,
        "consolidations": replayed.consolidations,
        "consolidations_failed": replayed.consolidations_failed,
        "session_end_calls": replayed.session_ends,
        "questions": len(results),
        "questions_skipped": sum(
            n for k, n in dataset.skipped.items() if k.startswith("questions")
        ),
        "token_budget": budget,
    }
    metrics |= _headline(results, budget)
    for (kind, status), count in sorted(replayed.formed.items()):
        metrics[f"formed_{kind}_{status}"] = count
    show = {"answer", "tokens"}
    if any(r.question.evidence for r in results):
        show.add("evidence")
    if any(r.question.stale_answers for r in results):
        show.add("stale")
    by_type = [
        _row(kind, [r for r in results if r.question.type == kind], show)
        for kind in _types(results)
    ]
    by_type.append(_row("all", results, show))
    formed = [
        {"kind": kind, "status": status, "count": count}
        for (kind, status), count in sorted(replayed.formed.items())
    ] + [
        {"kind": "consolidation", "status": action, "count": n}
        for action, n in sorted(actions.items())
    ]
    return SuiteReport(
        suite="conversations",
        data=str(data),
        embedder=embedder,
        metrics=metrics,
        tables={"ours vs naive by question type": by_type, "memory formed": formed},
        details={"questions": [_detail(r) for r in results]},
        notes=_notes(dataset, embedder, replayed, has_end_session),
    )
