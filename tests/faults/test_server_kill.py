"""SIGKILL the PostgreSQL server in the middle of ``post_turn``, ``learn_many`` and
``consolidate``, restart it, and check: a call that returned is durable, a call that raised
left all or nothing (never part of its writes), only typed errors reach the caller, and the
same kernel object works again without being reopened.

The default run kills at the first, a middle and the last statement of each call; the
``slow`` variant kills at every statement (``pytest -m slow tests/faults``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from sqlalchemy import func, select

from memory_kernel import FactStatus, MemoryKernel, MemoryKernelError
from memory_kernel.models.consolidation import AgentRunStatus
from memory_kernel.models.facts import FactInput
from memory_kernel.models.turns import TurnInput, TurnOutcome
from memory_kernel.storage.tables import facts, memory_events
from tests.faults.helpers import Killer, killer, restart, signature

pytestmark = pytest.mark.faults

DECISION = (
    "We'll use PostgreSQL with pgvector rather than a separate vector database, because it "
    "keeps transactions and embeddings in one place."
)
Call = Callable[[MemoryKernel, str], Awaitable[object]]
Signature = tuple[tuple[str, int], ...]


def _points(total: int, *, every: bool, few: int = 2) -> list[int]:
    """Every statement, or the middle one and the last (usually COMMIT: the in-doubt case)."""
    return list(range(1, total + 1)) if every else sorted({(total + 1) // 2, total})[-few:]


def _tally(call: str, outcome: object) -> None:
    # Figures for docs/reliability.md (run with -s): which kills raised, which returned.
    print(f"FAULT {call} {'raised' if isinstance(outcome, MemoryKernelError) else 'returned'}")


async def _control(kernel: MemoryKernel, agent: str, call: Call) -> tuple[int, Signature]:
    """Run ``call`` uninterrupted: how many statements it sends and the state it leaves."""
    with killer(kernel) as kill:
        kill.arm(None)
        await call(kernel, agent)
        total = kill.seen
    return total, await signature(kernel, agent)


async def _killed_at(
    kernel: MemoryKernel, agent: str, call: Call, at: int, *, backends: bool = False
) -> tuple[Killer, object | MemoryKernelError]:
    """Run ``call`` with the server killed before its ``at``-th statement, then restart."""
    with killer(kernel, backends=backends) as kill:
        kill.arm(at)
        try:
            outcome: object | MemoryKernelError = await call(kernel, agent)
        except MemoryKernelError as exc:  # anything else (a raw driver error) fails the test
            outcome = exc
    await restart(kernel)
    return kill, outcome


# -- post_turn ---------------------------------------------------------------------------


async def _pre(kernel: MemoryKernel, agent: str) -> object:
    turn = TurnInput(
        agent_id=agent, session_id="s1", message="How should we store embeddings?",
        frame="decision",
    )  # fmt: skip
    return (await kernel.pre_turn(turn)).turn


async def _check_post_turn(kernel: MemoryKernel, *, every: bool, backends: bool) -> int:
    handles: dict[str, object] = {}

    async def post(k: MemoryKernel, agent: str) -> object:
        return await k.post_turn(handles[agent], TurnOutcome(response_text=DECISION))  # type: ignore[arg-type]

    tag = "b" if backends else "p"
    handles[f"ctl-{tag}"] = await _pre(kernel, f"ctl-{tag}")
    before = await signature(kernel, f"ctl-{tag}")
    total, after = await _control(kernel, f"ctl-{tag}", post)
    assert before != after and total >= 3
    for at in _points(total, every=every, few=1 if backends else 2):
        agent = f"pt-{tag}-{at}"
        handles[agent] = await _pre(kernel, agent)
        kill, outcome = await _killed_at(kernel, agent, post, at, backends=backends)
        assert kill.fired
        _tally("post_turn", outcome)
        state = await signature(kernel, agent)
        if isinstance(outcome, MemoryKernelError):
            assert state in (before, after), f"partial post_turn after a kill at {at}"
        else:
            assert state == after, f"post_turn returned but was lost (kill at {at})"
        # The same kernel, not reopened, serves a whole turn again.
        handles[agent + "-again"] = await _pre(kernel, agent + "-again")
        await post(kernel, agent + "-again")
    # Calls that returned before the crashes are all still there (WAL recovery).
    assert await signature(kernel, f"ctl-{tag}") == after
    return total


@pytest.mark.parametrize("backends", [False, True], ids=["postmaster", "all-processes"])
async def test_post_turn_survives_a_server_kill(
    private_kernel: MemoryKernel, backends: bool
) -> None:
    await _check_post_turn(private_kernel, every=False, backends=backends)


@pytest.mark.slow
async def test_post_turn_survives_a_kill_at_every_statement(private_kernel: MemoryKernel) -> None:
    await _check_post_turn(private_kernel, every=True, backends=False)


# -- learn_many --------------------------------------------------------------------------


def _batch(agent: str, n: int) -> list[FactInput]:
    services = ["billing", "search", "auth", "gateway", "ledger", "mailer", "scheduler"]
    return [
        FactInput(
            agent_id=agent,
            subject=f"{services[i % len(services)]} owner {i}",
            content=f"The {services[i % len(services)]} shard {i} is owned by team number {i}",
        )
        for i in range(n)
    ]


async def _check_learn_many(kernel: MemoryKernel, *, size: int, every: bool) -> None:
    async def learn(k: MemoryKernel, agent: str) -> object:
        return await k.heart.facts.learn_many(_batch(agent, size))

    empty = await signature(kernel, f"lm-empty-{size}")
    total, after = await _control(kernel, f"lm-ctl-{size}", learn)
    for at in _points(total, every=every):
        agent = f"lm-{size}-{at}"
        kill, outcome = await _killed_at(kernel, agent, learn, at)
        assert kill.fired
        _tally("learn_many", outcome)
        state = await signature(kernel, agent)
        if isinstance(outcome, MemoryKernelError):
            assert state in (empty, after), f"learn_many left part of its batch (kill at {at})"
        else:
            assert state == after, f"learn_many returned but was lost (kill at {at})"
    # The kernel works again, and what returned before the crashes is durable.
    assert len(await kernel.heart.facts.learn_many(_batch(f"lm-again-{size}", 3))) == 3
    assert await signature(kernel, f"lm-ctl-{size}") == after


async def test_learn_many_survives_a_server_kill(private_kernel: MemoryKernel) -> None:
    await _check_learn_many(private_kernel, size=120, every=False)


async def test_learn_many_over_one_chunk_is_all_or_nothing(private_kernel: MemoryKernel) -> None:
    async def learn(k: MemoryKernel, agent: str) -> object:
        return await k.heart.facts.learn_many(_batch(agent, 1100))

    with killer(private_kernel) as kill:
        kill.arm(None)
        await learn(private_kernel, "lm-chunks-ctl")
        last = kill.seen
    # Killed at the last step (COMMIT), after the first chunk of 1000 was written.
    kill, outcome = await _killed_at(private_kernel, "lm-chunks", learn, last)
    assert kill.fired and isinstance(outcome, MemoryKernelError)
    assert await signature(private_kernel, "lm-chunks") == ()


@pytest.mark.slow
async def test_learn_many_survives_a_kill_at_every_statement(
    private_kernel: MemoryKernel,
) -> None:
    await _check_learn_many(private_kernel, size=40, every=True)


# -- consolidate -------------------------------------------------------------------------


async def _seed_for_consolidation(kernel: MemoryKernel, agent: str) -> None:
    topics = ["deploys", "billing", "oncall", "releases", "backups", "alerts"]
    batch = []
    for i, topic in enumerate(topics * 3):
        batch.append(
            FactInput(
                agent_id=agent,
                content=f"The team reviews {topic} every week on day {i % 5} with the leads",
                defer_embedding=i % 2 == 0,
                explicit=True,
            )
        )
    await kernel.heart.facts.learn_many(batch)


async def _invariants(kernel: MemoryKernel, agent: str) -> None:
    """Invariant 2 after any interruption: every retired fact points somewhere and has an
    audit event; invariant 3: at most one current fact per subject (also a DB index)."""
    async with kernel.database.connection() as conn:
        retired = (
            await conn.execute(
                select(facts.c.id, facts.c.status, facts.c.merged_into, facts.c.superseded_by)
                .where(facts.c.agent_id == agent)
                .where(facts.c.status.in_([FactStatus.MERGED.value, FactStatus.SUPERSEDED.value]))
            )
        ).all()
        audited = set(
            (
                await conn.scalars(
                    select(memory_events.c.memory_id).where(memory_events.c.agent_id == agent)
                )
            ).all()
        )
        pending = await conn.scalar(
            select(func.count()).where(
                facts.c.agent_id == agent, facts.c.status == FactStatus.PENDING_EMBED.value
            )
        )
    for row in retired:
        assert row.merged_into is not None or row.superseded_by is not None, row
        assert row.id in audited, f"fact {row.id} changed status without an audit event"
    assert pending is not None


async def _check_consolidate(kernel: MemoryKernel, *, every: bool) -> None:
    async def consolidate(k: MemoryKernel, agent: str) -> object:
        return await k.consolidate(agent)

    await _seed_for_consolidation(kernel, "co-ctl")
    total, after = await _control(kernel, "co-ctl", consolidate)
    for at in _points(total, every=every, few=1):
        agent = f"co-{at}"
        await _seed_for_consolidation(kernel, agent)
        kill, outcome = await _killed_at(kernel, agent, consolidate, at)
        assert kill.fired
        _tally("consolidate", outcome)
        await _invariants(kernel, agent)
        if not isinstance(outcome, MemoryKernelError):
            status = outcome.agents[0].status  # type: ignore[attr-defined]
            if status is AgentRunStatus.DONE:
                assert await signature(kernel, agent) == after
        # The lock died with the killed session: a rerun is not skipped, and it finishes
        # the work, ending where an uninterrupted run ends.
        rerun = await kernel.consolidate(agent)
        assert rerun.agents[0].status is AgentRunStatus.DONE, rerun
        assert _facts_part(await signature(kernel, agent)) == _facts_part(after)
    assert await signature(kernel, "co-ctl") == after


def _facts_part(state: Signature) -> Signature:
    return tuple(item for item in state if item[0].startswith("facts:"))


async def test_consolidate_survives_a_server_kill(private_kernel: MemoryKernel) -> None:
    await _check_consolidate(private_kernel, every=False)


@pytest.mark.slow
async def test_consolidate_survives_a_kill_at_every_statement(
    private_kernel: MemoryKernel,
) -> None:
    await _check_consolidate(private_kernel, every=True)
