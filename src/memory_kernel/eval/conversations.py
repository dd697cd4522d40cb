"""Conversations end to end: replay multi-session chats through the public hooks, then ask
each question with ``pre_turn`` in a new session and look for the answer in the context.

Formats (auto-detected): LoCoMo JSON, the authored conversations JSONL, LongMemEval JSON —
see :mod:`memory_kernel.eval.dialogues`.

Replay, one agent per conversation (per LongMemEval instance), sessions in date order, on
a frozen clock set to each session's date and moved 30 s per exchange:

- each user turn: ``ctx = await kernel.pre_turn(TurnInput(agent, session, message))``, then
  ``await kernel.post_turn(ctx.turn, TurnOutcome(response_text=<the reply that follows>))``
  (consecutive turns of one role are joined; a user turn without reply gets ``""``; a
  session opened by the assistant gets a placeholder user message, counted);
- at a session's end ``kernel.end_session(agent_id=..., session_id=...)`` if the kernel has
  one (at 91e673e it had none: nothing was called, the documented flow had no session end);
- nightly: ``kernel.consolidate(agent)`` whenever the clock moves to another day (before
  that day's first session, and before questions asked on a later day).

Questions, each in a new session at its ``question_date`` (else one day after the last
session): ``kernel.pre_turn(TurnInput(..., signals={"token_budget": budget}))``; no
``post_turn`` (there is no answer). The naive baseline (:mod:`memory_kernel.eval.naive`)
fills the same budget from the raw turns with the same embedder. Scores
(:mod:`memory_kernel.eval.answers`) per question type, for both.

Only the public API is used (``memory_kernel``'s exports and ``memory_kernel.testing``), so
the suite measures whatever the hooks do, before and after a rewrite of the internals.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from memory_kernel import (
    Embedder,
    EstimatingTokenCounter,
    MemoryKernel,
    TokenCounter,
    TurnInput,
    TurnOutcome,
)
from memory_kernel.errors import ConfigError
from memory_kernel.eval.answers import ContextText
from memory_kernel.eval.conversation_report import QuestionResult, Replayed, Scores, build_report
from memory_kernel.eval.dialogues import Dialogue, Question, Session, exchanges, load_dataset
from memory_kernel.eval.naive import NaiveStore
from memory_kernel.eval.progress import progress
from memory_kernel.eval.report import SuiteReport
from memory_kernel.eval.store import eval_kernel
from memory_kernel.heart.extraction.rules import RuleExtractor
from memory_kernel.protocols import FactExtractor
from memory_kernel.testing import FrozenClock

__all__ = ["DEFAULT_BUDGET", "OPENING_MESSAGE", "run", "score"]

DEFAULT_BUDGET = 1000
TURN_STEP = timedelta(seconds=30)
#: The user message of an exchange the assistant opened (pre_turn needs a message).
OPENING_MESSAGE = "(the conversation continues)"


def score(question: Question, text: str, counter: TokenCounter) -> Scores:
    """One system's context for one question."""
    ctx = ContextText(text)
    return Scores(
        answer=None if question.abstention else ctx.contains(question.answer),
        coverage=ctx.coverage(question.evidence),
        stale=ctx.stale_as_current(question.answer, question.stale_answers),
        tokens=counter.count(text),
        empty=not text.strip(),
    )


def _id(value: str) -> str:
    return re.sub(r"\s+", "_", value.strip())[:120] or "x"


@dataclass
class _Replay:
    """Drives one kernel through the dialogues; counts what it did."""

    kernel: MemoryKernel
    clock: FrozenClock
    #: Extract each exchange's facts right after it (the kernel's worker is off): the worker
    #: drains on its own wall-clock polls, so which clock time a fact got, and with it what
    #: consolidation decayed, varied from run to run (docs/tuning.md, nineteenth round).
    extracts: bool = False
    done: Replayed = field(default_factory=Replayed)
    actions: Counter[str] = field(default_factory=Counter)
    day: date | None = None

    def start_agent(self) -> None:
        """A new agent: its own days (the next ``move_to`` sets the clock, even backwards)."""
        self.day = None

    async def move_to(self, agent: str, when: datetime) -> None:
        """The clock to ``when`` (never backwards within an agent); consolidate first when
        the day changes."""
        when = max(when, self.clock.now()) if self.day is not None else when
        self.clock.set(when)
        if self.day is not None and when.date() != self.day:
            report = await self.kernel.consolidate(agent)
            self.done.consolidations += 1
            self.done.consolidations_failed += len(report.failed_agents)
            for action, n in report.counts.items():
                self.actions[str(action)] += n
        self.day = when.date()

    async def session(self, agent: str, session: Session, advance: Callable[[int], None]) -> None:
        await self.move_to(agent, session.date)
        session_id = _id(session.session_id)
        self.done.sessions += 1
        self.done.turns += len(session.turns)
        for message, reply in exchanges(session.turns):
            if message is None:
                message = OPENING_MESSAGE
                self.done.openings += 1
            ctx = await self.kernel.pre_turn(
                TurnInput(agent_id=agent, session_id=session_id, message=message)
            )
            await self.kernel.post_turn(ctx.turn, TurnOutcome(response_text=reply))
            if self.extracts:
                await self.kernel.extract_pending(agent)
            self.done.exchanges += 1
            self.clock.advance(TURN_STEP)
            advance(1)
        end: Callable[..., Awaitable[Any]] | None = getattr(self.kernel, "end_session", None)
        if callable(end):
            await end(agent_id=agent, session_id=session_id)
            self.done.session_ends += 1

    async def ask(self, agent: str, session_id: str, question: Question, budget: int) -> str:
        ctx = await self.kernel.pre_turn(
            TurnInput(
                agent_id=agent,
                session_id=session_id,
                message=question.question,
                signals={"token_budget": budget},
            )
        )
        self.clock.advance(TURN_STEP)
        return ctx.text


async def _dialogue(
    replay: _Replay, n: int, dialogue: Dialogue, embedder: Embedder, counter: TokenCounter,
    budget: int, texts: list[dict[str, Any]] | None = None,
) -> list[QuestionResult]:  # fmt: skip
    agent = _id(f"conv{n}-{dialogue.dialogue_id}")
    replay.start_agent()
    naive = NaiveStore(embedder, counter)
    await naive.add(dialogue)
    steps = sum(len(exchanges(s.turns)) for s in dialogue.sessions) + len(dialogue.questions)
    results = []
    with progress(f"{dialogue.dialogue_id}", steps) as advance:
        for session in dialogue.sessions:
            await replay.session(agent, session, advance)
        after = (dialogue.sessions[-1].date if dialogue.sessions else replay.clock.now()) + (
            timedelta(days=1)
        )
        for q_n, question in enumerate(dialogue.questions, 1):
            await replay.move_to(agent, question.date or after)
            ours = await replay.ask(agent, _id(f"{agent}-question-{q_n}"), question, budget)
            theirs = await naive.context(question.question, budget)
            if texts is not None:
                texts.append(_context_row(dialogue.dialogue_id, question, ours, theirs))
            results.append(
                QuestionResult(
                    dialogue=dialogue.dialogue_id,
                    question=question,
                    ours=score(question, ours, counter),
                    naive=score(question, theirs, counter),
                )
            )
            advance(1)
    formed = await replay.kernel.inspect(agent, limit=1)
    for count in formed.counts:
        replay.done.formed[(str(count.kind), count.status)] += count.count
    return results


def _context_row(dialogue: str, question: Question, ours: str, naive: str) -> dict[str, Any]:
    """One line of ``--contexts``: the question, its answers and both contexts."""
    return {
        "dialogue": dialogue,
        "qid": question.qid,
        "type": question.type,
        "question": question.question,
        "answer": question.answer,
        "stale_answers": list(question.stale_answers),
        "ours": ours,
        "naive": naive,
    }


_EXTRACTORS: dict[str, Callable[[], FactExtractor | None]] = {
    "none": lambda: None,
    "rules": RuleExtractor,
}


async def run(
    data: Path, embedder: Embedder, *, budget: int = DEFAULT_BUDGET, limit: int | None = None,
    contexts: Path | None = None, extractor: str = "none",
) -> SuiteReport:  # fmt: skip
    """The suite (``memory-kernel eval conversations``); ``contexts``: also write each
    question's two contexts there, one JSON object a line (to read why a question fails);
    ``extractor``: ``none`` (the default kernel's), ``rules`` (``RuleExtractor``) or
    ``openai:<model>@<base_url>`` (``ChatExtractor``, set from ``MEMORY_KERNEL_EXTRACTOR_*``):
    facts extracted from the turns through the queue, drained after each exchange."""
    if extractor.startswith("openai:"):
        from memory_kernel.eval.embedders import extractor_from_name

        async with extractor_from_name(extractor) as chat:
            return await _run(data, embedder, budget, limit, contexts, chat)
    if extractor not in _EXTRACTORS:
        raise ConfigError(
            f"--extractor must be one of {', '.join(_EXTRACTORS)} or openai:<model>@<base_url>"
        )
    return await _run(data, embedder, budget, limit, contexts, _EXTRACTORS[extractor]())


async def _run(
    data: Path, embedder: Embedder, budget: int, limit: int | None, contexts: Path | None,
    chosen: FactExtractor | None,
) -> SuiteReport:  # fmt: skip
    if budget < 1:
        raise ConfigError("--budget must be at least 1 token")
    if limit is not None and limit < 1:
        raise ConfigError("--limit must be at least 1 conversation")
    dataset = load_dataset(data, limit=limit)
    if not dataset.dialogues:
        raise ConfigError(f"no conversations in {data}")
    counter = EstimatingTokenCounter()
    first = min((s.date for d in dataset.dialogues for s in d.sessions), default=None)
    clock = FrozenClock(first)
    results: list[QuestionResult] = []
    texts: list[dict[str, Any]] | None = None if contexts is None else []
    config: dict[str, object] = {"extraction": {"worker": False}}
    async with eval_kernel(embedder, clock=clock, config=config, extractor=chosen) as kernel:
        has_end_session = callable(getattr(kernel, "end_session", None))
        replay = _Replay(kernel, clock, extracts=chosen is not None)
        with progress("conversations", len(dataset.dialogues)) as advance:
            for n, dialogue in enumerate(dataset.dialogues, 1):
                results += await _dialogue(replay, n, dialogue, embedder, counter, budget, texts)
                advance(1)
    if contexts is not None and texts is not None:
        lines = "".join(json.dumps(row) + "\n" for row in texts)
        await asyncio.to_thread(contexts.write_text, lines, encoding="utf-8")
    return build_report(
        data=data,
        embedder=embedder.name,
        dataset=dataset,
        budget=budget,
        results=results,
        replayed=replay.done,
        actions=replay.actions,
        has_end_session=has_end_session,
    )
