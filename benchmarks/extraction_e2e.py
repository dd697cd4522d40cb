"""The conversations suite with and without the rule extractor's facts learned.

    python benchmarks/extraction_e2e.py --data FILE [--limit N] [--budget 1000] [--off]
    python benchmarks/extraction_e2e.py --data FILE --json out.json

Runs ``memory-kernel eval conversations`` (``memory_kernel.eval.conversations.run``) with
the default embedder; unless ``--off``, each exchange's user message and reply also go
through ``RuleExtractor`` and what it returns is learned (``heart.facts.learn_many``,
admission, dedup and supersession included) right after ``post_turn``, at the exchange's
time. A stand-in for the extraction queue that issue 22 builds (the lead wires the real
path): it measures what the extractor's facts do to the context, not the queue.
"""

from __future__ import annotations

import argparse
import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from rich.console import Console

from memory_kernel import TurnInput, TurnOutcome
from memory_kernel.eval import conversations
from memory_kernel.eval.dialogues import Session, exchanges
from memory_kernel.eval.embedders import close_embedder, embedder_from_name
from memory_kernel.eval.report import print_report, write_json
from memory_kernel.heart.extraction.rules import RuleExtractor
from memory_kernel.models.extraction import ExtractionTurn
from memory_kernel.models.facts import FactInput

_EXTRACTOR = RuleExtractor()


class _ExtractingReplay(conversations._Replay):  # a local measurement
    async def session(self, agent: str, session: Session, advance: Callable[[int], None]) -> None:
        await self.move_to(agent, session.date)
        session_id = conversations._id(session.session_id)
        self.done.sessions += 1
        self.done.turns += len(session.turns)
        for message, reply in exchanges(session.turns):
            if message is None:
                message = conversations.OPENING_MESSAGE
                self.done.openings += 1
            ctx = await self.kernel.pre_turn(
                TurnInput(agent_id=agent, session_id=session_id, message=message)
            )
            await self.kernel.post_turn(ctx.turn, TurnOutcome(response_text=reply))
            await self._learn(agent, session_id, message, reply)
            self.done.exchanges += 1
            self.clock.advance(conversations.TURN_STEP)
            advance(1)
        await self.kernel.end_session(agent_id=agent, session_id=session_id)
        self.done.session_ends += 1

    async def _learn(self, agent: str, session_id: str, message: str, reply: str) -> None:
        said: list[tuple[Literal["user", "assistant"], str]] = [
            ("user", message),
            ("assistant", reply),
        ]
        turns = [
            ExtractionTurn(
                agent_id=agent,
                session_id=session_id,
                turn_id=uuid.uuid4(),
                episode_id=None,
                role=role,
                text=text,
                said_at=self.clock.now(),
            )
            for role, text in said
            if text and text != conversations.OPENING_MESSAGE
        ]
        found = await _EXTRACTOR.extract(turns)
        batch = [
            FactInput(agent_id=agent, content=f.content, subject=f.subject, confidence=f.confidence)
            for facts in found
            for f in facts
        ]
        if batch:
            outcomes = await self.kernel.heart.facts.learn_many(batch)
            for outcome in outcomes:
                self.actions[f"extracted {outcome.action}"] += 1


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--budget", type=int, default=conversations.DEFAULT_BUDGET)
    parser.add_argument("--embedder", default="hashing")
    parser.add_argument("--off", action="store_true", help="the suite as it is, no extraction")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--keep-sources",
        action="store_true",
        help="diagnostic: the budget keeps a turn even when a kept fact says most of its words",
    )
    args = parser.parse_args()
    if args.keep_sources:
        from memory_kernel.context import budget

        defaults = budget.assemble.__kwdefaults__ or {}
        budget.assemble.__kwdefaults__ = {**defaults, "source_overlap": 1.01}
    if not args.off:
        conversations._Replay = _ExtractingReplay  # type: ignore[misc]
    embedder = embedder_from_name(args.embedder)
    try:
        report = await conversations.run(args.data, embedder, budget=args.budget, limit=args.limit)
    finally:
        await close_embedder(embedder)
    print_report(report, Console())
    if args.json:
        write_json(report, args.json)


if __name__ == "__main__":
    asyncio.run(main())
