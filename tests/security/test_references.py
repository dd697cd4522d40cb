"""References across tenants, or to nothing: every public path that takes the id of a
memory refuses an id that is not the calling agent's with ``NotFoundError``, and writes
nothing (a digest of every table before and after).

Before (issue 23): ``DecisionInput.episode_id``, ``brain.start(episode_id=)`` and
``FactInput.derived_from`` were stored without looking, so bob's decision could point at
alice's episode, and a fact could derive from an episode that never existed.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import pytest

from memory_kernel import MemoryKernel, NotFoundError
from memory_kernel.models.decisions import DecisionInput
from memory_kernel.models.episodes import EpisodeInput
from memory_kernel.models.facts import FactInput
from memory_kernel.models.turns import TurnHandle, TurnInput, TurnOutcome
from tests.conftest import scratch_kernel
from tests.fuzz.checks import digest


@dataclass(frozen=True)
class Owned:
    """Ids of alice's memories, and a turn of bob's."""

    episode: uuid.UUID
    decision: uuid.UUID
    deliberation: uuid.UUID
    fact: uuid.UUID
    bob_turn: TurnHandle


@pytest.fixture(scope="module")
async def ref_kernel(pg_dsn: str) -> AsyncIterator[tuple[MemoryKernel, Owned]]:
    async with scratch_kernel(pg_dsn, "refs") as kernel:
        yield kernel, await _alice(kernel)


async def _alice(kernel: MemoryKernel) -> Owned:
    started = await kernel.heart.episodes.start(
        EpisodeInput(agent_id="alice", session_id="s", summary="Moved billing to Postgres")
    )
    decision = await kernel.brain.record(
        DecisionInput(agent_id="alice", session_id="s", description="Adopt pgvector")
    )
    deliberation = await kernel.brain.start("alice", "s2", "Whether to shard the ledger")
    assert deliberation is not None
    fact = await kernel.heart.facts.learn(
        FactInput(agent_id="alice", content="Alice owns the billing service", explicit=True)
    )
    ctx = await kernel.pre_turn(
        TurnInput(agent_id="bob", session_id="b", message="Shall we cache?", frame="decision")
    )
    return Owned(started.episode.id, decision.id, deliberation, fact.fact.id, ctx.turn)


Call = Callable[[MemoryKernel, Owned, uuid.UUID], Awaitable[object]]


def _fact(ref: uuid.UUID, content: str = "Bob derives the cache policy") -> FactInput:
    return FactInput(agent_id="bob", content=content, explicit=True, derived_from=(ref,))


async def _learn_many(k: MemoryKernel, _o: Owned, ref: uuid.UUID) -> object:
    good = FactInput(agent_id="bob", content="Bob owns the cache service", explicit=True)
    return await k.heart.facts.learn_many([good, _fact(ref)])


async def _post_turn_episode(k: MemoryKernel, o: Owned, ref: uuid.UUID) -> object:
    handle = o.bob_turn.model_copy(update={"episode_id": ref})
    return await k.post_turn(handle, TurnOutcome(response_text="We'll cache it for a day."))


async def _post_turn_decision(k: MemoryKernel, o: Owned, ref: uuid.UUID) -> object:
    handle = o.bob_turn.model_copy(update={"decision_id": ref})
    return await k.post_turn(handle, TurnOutcome(response_text="We'll cache it for a day."))


#: (public path, the kind of alice's memory the reference names, the call).
PATHS: list[tuple[str, str, Call]] = [
    ("brain.record(episode_id=)", "episode",
     lambda k, _o, r: k.brain.record(
         DecisionInput(agent_id="bob", session_id="b", description="Use Redis", episode_id=r))),
    ("brain.start(episode_id=)", "episode",
     lambda k, _o, r: k.brain.start("bob", "b", "Whether to use Redis", episode_id=r)),
    ("learn(derived_from=)", "episode", lambda k, _o, r: k.heart.facts.learn(_fact(r))),
    ("learn_many(derived_from=)", "episode", _learn_many),
    ("brain.finalize", "deliberation",
     lambda k, _o, r: k.brain.finalize(r, agent_id="bob", description="Shard it by region")),
    ("brain.get", "decision", lambda k, _o, r: k.brain.get(r, agent_id="bob")),
    ("episodes.end", "episode",
     lambda k, _o, r: k.heart.episodes.end(r, agent_id="bob", outcome="success")),
    ("episodes.get", "episode", lambda k, _o, r: k.heart.episodes.get(r, agent_id="bob")),
    ("episodes.record_turn", "episode",
     lambda k, _o, r: k.heart.episodes.record_turn(agent_id="bob", episode_id=r)),
    ("facts.get", "fact", lambda k, _o, r: k.heart.facts.get(r, agent_id="bob")),
    ("facts.history", "fact", lambda k, _o, r: k.heart.facts.history(r, agent_id="bob")),
    ("post_turn(TurnHandle.episode_id)", "episode", _post_turn_episode),
    ("post_turn(TurnHandle.decision_id)", "deliberation", _post_turn_decision),
]  # fmt: skip


@pytest.mark.parametrize("target", ["alice's", "nothing"])
@pytest.mark.parametrize(("path", "kind", "call"), PATHS, ids=[p[0] for p in PATHS])
async def test_a_reference_to_another_agent_or_to_nothing_is_refused(
    ref_kernel: tuple[MemoryKernel, Owned], path: str, kind: str, call: Call, target: str
) -> None:
    kernel, owned = ref_kernel
    ref = getattr(owned, kind) if target == "alice's" else uuid.uuid4()
    before = await digest(kernel)
    with pytest.raises(NotFoundError):
        await call(kernel, owned, ref)
    assert await digest(kernel) == before, f"{path} wrote something"


async def test_references_to_the_agents_own_rows_are_kept(
    ref_kernel: tuple[MemoryKernel, Owned],
) -> None:
    kernel, _ = ref_kernel
    mine = await kernel.heart.episodes.start(
        EpisodeInput(agent_id="carol", session_id="c", summary="Planned the Q3 roadmap")
    )
    episode = mine.episode.id
    decision = await kernel.brain.record(
        DecisionInput(agent_id="carol", session_id="c", description="Ship it", episode_id=episode)
    )
    started = await kernel.brain.start("carol", "c2", "Whether to hire", episode_id=episode)
    learned = await kernel.heart.facts.learn(
        FactInput(agent_id="carol", content="Carol plans the roadmap", derived_from=(episode,))
    )
    assert decision.episode_id == episode and started is not None
    assert (await kernel.brain.get(started, agent_id="carol")).episode_id == episode
    assert list(learned.fact.derived_from) == [episode]
