"""learn_many writes one statement per agent: it must leave exactly the state that learning
the same facts one by one leaves, including a stored fact touched several times in one
batch (reinforced, then linked or superseded) and facts created and retired in the batch."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text

from memory_kernel import MemoryKernel
from memory_kernel.heart.facts import service
from memory_kernel.models.episodes import EpisodeInput
from memory_kernel.models.facts import FactInput, LearnAction
from tests.heart.facts.states import fact_events, fact_rows

STORED = [
    ("Kai owns the deploy pipeline.", None),
    ("Our cluster has 12 worker nodes.", None),
    ("Two-factor login is enabled for contractors.", None),
    ("The VPN endpoint is vpn1.example.com.", "vpn"),
    ("Backups run every night at 02:00.", None),
]
SOURCE = uuid.UUID("00000000-0000-4000-8000-000000000001")
BATCH: list[tuple[str, str | None, tuple[uuid.UUID, ...]]] = [
    ("The deploy pipeline is owned by Kai.", None, ()),  # reinforces a stored fact
    ("Kai owns the deploy pipeline.", None, (SOURCE,)),  # ... again, with provenance
    ("Our cluster has 12 worker nodes.", None, ()),  # reinforces a stored fact ...
    ("Our cluster has 16 worker nodes.", None, ()),  # ... which is then superseded
    ("Two-factor login is disabled for contractors.", None, ()),  # contradicts a stored one
    ("Two-factor login is enabled for contractors.", None, ()),  # the linked one again
    ("The VPN endpoint is vpn2.example.com.", "vpn", ()),  # subject supersession
    ("Hello!", None, ()),  # rejected
    ("The VPN endpoint is vpn3.example.com.", " VPN ", ()),  # retires a batch fact
    ("Our cluster has 20 worker nodes.", None, ()),  # retires a batch fact
    ("Backups run every night at 03:00.", None, ()),  # value change of a stored fact
    ("Backups run every night at 03:00.", None, ()),  # reinforces a batch fact
]


def _batch(agent: str) -> list[FactInput]:
    return [FactInput(agent_id=agent, content=c, subject=s, derived_from=d) for c, s, d in BATCH]


async def _learn_stored(kernel: MemoryKernel, agent: str) -> None:
    # derived_from must name the agent's own episodes: both agents get SOURCE, one id, so
    # their rows compare equal.
    started = await kernel.heart.episodes.start(
        EpisodeInput(agent_id=agent, session_id="s", summary="Reviewed the deploy runbook")
    )
    async with kernel.database.transaction() as conn:
        await conn.execute(
            text("UPDATE episodes SET id = :source WHERE agent_id = :agent AND id = :id"),
            {"source": SOURCE, "agent": agent, "id": started.episode.id},
        )
    for content, subject in STORED:
        await kernel.heart.facts.learn(FactInput(agent_id=agent, content=content, subject=subject))


async def test_mixed_batch_leaves_the_state_of_one_by_one(kernel: MemoryKernel) -> None:
    svc = kernel.heart.facts
    await _learn_stored(kernel, "seq")
    await _learn_stored(kernel, "bat")
    one_by_one = [await svc.learn(f) for f in _batch("seq")]
    batched = await svc.learn_many(_batch("bat"))
    summary = [(o.action, len(o.superseded), len(o.contradicts), o.fact.content) for o in batched]
    assert summary == [
        (o.action, len(o.superseded), len(o.contradicts), o.fact.content) for o in one_by_one
    ]
    assert await fact_rows(kernel, "bat") == await fact_rows(kernel, "seq")
    assert await fact_events(kernel, "bat") == await fact_events(kernel, "seq")
    # The script does exercise the merged row update: one stored fact reinforced and then
    # superseded, another reinforced with provenance, one linked as a contradiction.
    actions = [o.action for o in batched]
    assert actions[2] is LearnAction.REINFORCED and actions[3] is LearnAction.SUPERSEDED
    assert actions[4] is LearnAction.CONTRADICTION and actions[7] is LearnAction.REJECTED
    cluster = next(r for r in await fact_rows(kernel, "bat") if r[0] == STORED[1][0])
    assert cluster[1:3] == ("superseded", 2)
    kai = next(r for r in await fact_rows(kernel, "bat") if r[0] == STORED[0][0])
    assert kai[2] == 3 and kai[7] == (str(SOURCE),)


async def test_reinforced_outcome_shows_the_fact_after_the_batch(kernel: MemoryKernel) -> None:
    svc = kernel.heart.facts
    first = await svc.learn(FactInput(agent_id="a", content="Lena reviews all DB migrations."))
    out = await svc.learn_many(
        [FactInput(agent_id="a", content="Lena reviews all DB migrations.") for _ in range(3)]
    )
    assert [o.action for o in out] == [LearnAction.REINFORCED] * 3
    assert {o.fact.id for o in out} == {first.fact.id}
    assert out[-1].fact.evidence_count == 4
    assert out[-1].fact.confidence == pytest.approx(1 - 0.3 * 0.95**3)


async def test_batches_of_several_agents_write_each_agent_apart(kernel: MemoryKernel) -> None:
    svc = kernel.heart.facts
    inputs = [
        FactInput(agent_id=agent, content=f"The {agent} build takes {n} minutes.")
        for n in (5, 7)
        for agent in ("x", "y")
    ]
    out = await svc.learn_many(inputs)
    assert [o.action for o in out] == [LearnAction.ADDED] * 2 + [LearnAction.SUPERSEDED] * 2
    assert [o.superseded for o in out[2:]] == [(out[0].fact.id,), (out[1].fact.id,)]


async def test_learn_many_in_a_callers_unit_leaves_its_planner_settings(
    kernel: MemoryKernel,
) -> None:
    svc = kernel.heart.facts
    async with kernel.database.transaction() as conn:
        show = text("SELECT current_setting('enable_seqscan'), current_setting('hnsw.ef_search')")
        before = (await conn.execute(show)).one()
        await svc.learn_many([])
        await svc.learn_many([FactInput(agent_id="a", content="Ops sync is at 9.")])
        await svc.learn_many([FactInput(agent_id="a", content="Ops sync is at 9.")])
        assert (await conn.execute(show)).one() == before


@pytest.mark.parametrize("chunk", [1, 3])
async def test_a_batch_read_in_chunks_leaves_the_state_of_one_by_one(
    kernel: MemoryKernel, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """learn_many reads its candidates a chunk at a time: a stored fact the batch retired or
    reinforced in an earlier chunk comes back in a later chunk's read and must be taken as
    the batch left it. Two agents interleaved, so a chunk holds reads of both."""
    monkeypatch.setattr(service, "READ_CHUNK", chunk)
    svc = kernel.heart.facts
    for agent in ("seq-x", "seq-y", "bat-x", "bat-y"):
        await _learn_stored(kernel, agent)
    for agent in ("seq-x", "seq-y"):
        for f in _batch(agent):
            await svc.learn(f)
    mixed = [f for pair in zip(_batch("bat-x"), _batch("bat-y"), strict=True) for f in pair]
    await svc.learn_many(mixed)
    for seq, bat in (("seq-x", "bat-x"), ("seq-y", "bat-y")):
        assert await fact_rows(kernel, bat) == await fact_rows(kernel, seq)
        assert await fact_events(kernel, bat) == await fact_events(kernel, seq)


@pytest.mark.parametrize("chunk", [1, 64])
async def test_facts_without_a_vector_are_matched_by_their_words_in_a_batch(
    kernel: MemoryKernel, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """Facts stored without a vector (deferred) are found by their words, in the batch's
    read: a repeat — of a stored fact, or of one earlier in the batch, in another case and
    punctuation — is reinforced, as one-by-one learns do."""
    monkeypatch.setattr(service, "READ_CHUNK", chunk)
    svc = kernel.heart.facts
    stored = ["Kai owns the deploy pipeline.", "The cache holds 20 GB."]
    texts = ["kai owns the DEPLOY pipeline", "Lena runs the Friday retro.", "The cache holds 20 GB",
             "lena runs the friday retro!", "Sam owns billing."]  # fmt: skip
    for agent in ("seq", "bat"):
        for content in stored:
            await svc.learn(FactInput(agent_id=agent, content=content, defer_embedding=True))
    inputs = {
        a: [FactInput(agent_id=a, content=t, defer_embedding=True) for t in texts]
        for a in ("seq", "bat")
    }
    one_by_one = [await svc.learn(f) for f in inputs["seq"]]
    batched = await svc.learn_many(inputs["bat"])
    assert [o.action for o in batched] == [o.action for o in one_by_one]
    assert [o.action for o in batched] == [
        LearnAction.REINFORCED, LearnAction.ADDED, LearnAction.REINFORCED,
        LearnAction.REINFORCED, LearnAction.ADDED,
    ]  # fmt: skip
    assert await fact_rows(kernel, "bat") == await fact_rows(kernel, "seq")
