"""The canonical id policy (``validation.check_agent_id``, docs/integration.md "Ids"): an
agent or session id has one spelling, so look-alikes cannot become distinct, invisible
tenants, and a trailing newline is not silently accepted."""

from __future__ import annotations

import unicodedata

import pytest
from sqlalchemy import text

from memory_kernel import MemoryKernel, ValidationError
from memory_kernel.models.decisions import DecisionInput
from memory_kernel.models.facts import FactInput
from memory_kernel.models.turns import TurnInput
from memory_kernel.validation import check_agent_id

LOOK_ALIKES = {
    "trailing newline": "alice\n",
    "zero-width space": "ali\u200bce",
    "zero-width joiner": "alice\u200d",
    "soft hyphen": "ali\u00adce",
    "word joiner": "\u2060alice",
    "byte order mark": "\ufeffalice",
    "bidi override": "alice\u202e",
    "full-width": "\uff41lice",
    "decomposed accent": "rene\u0301",
    "compatibility ligature": "\ufb01le",
    "no-break space": "ali\u00a0ce",
    "line separator": "alice\u2028",
    "hangul filler": "alice\u3164",
    "variation selector": "alice\ufe0f",
    "tag character": "alice\U000e0041",
    "private use": "alice\ue000",
    "unassigned": "alice\u0378",
    "lone surrogate": "alice\ud800",
    "control": "alice\x7f",
}
CANONICAL = [
    "alice", "agent-01", "user@example.com", "ren\u00e9", "エージェント", "代理人",
    "Алиса", "a" * 200, "🚀rocket", "α.β_γ:δ/ε",
]  # fmt: skip


@pytest.mark.parametrize("value", LOOK_ALIKES.values(), ids=LOOK_ALIKES.keys())
def test_a_look_alike_id_is_refused_everywhere(value: str) -> None:
    with pytest.raises(ValidationError):
        check_agent_id(value)
    with pytest.raises(ValidationError):
        FactInput(agent_id=value, content="The deploy runs on Fridays")
    with pytest.raises(ValidationError):
        TurnInput(agent_id="alice", session_id=value, message="Hi")
    with pytest.raises(ValidationError):
        DecisionInput(agent_id="alice", session_id=value, description="Use Postgres")


@pytest.mark.parametrize("value", CANONICAL)
def test_canonical_ids_pass_unchanged(value: str) -> None:
    assert unicodedata.normalize("NFKC", value) == value
    assert check_agent_id(value) == value


@pytest.mark.parametrize("value", ["", "a" * 201, " ", "a b", 7, None])
def test_empty_long_spaced_or_non_string_ids_are_refused(value: object) -> None:
    with pytest.raises(ValidationError):
        check_agent_id(value)  # type: ignore[arg-type]


async def test_a_look_alike_cannot_open_a_second_tenant(kernel: MemoryKernel) -> None:
    facts = kernel.heart.facts
    await facts.learn(
        FactInput(agent_id="alice", content="Alice deploys on Fridays", explicit=True)
    )
    for value in LOOK_ALIKES.values():
        with pytest.raises(ValidationError):
            await facts.search(value, "deploys", k=3)
        with pytest.raises(ValidationError):
            await kernel.search_memory(value, "deploys")
        with pytest.raises(ValidationError):
            await kernel.consolidate(value)
    assert [h.fact.agent_id for h in await facts.search("alice", "deploys", k=3)] == ["alice"]


async def test_a_stored_id_from_before_the_policy_does_not_stop_consolidate_all(
    kernel: MemoryKernel,
) -> None:
    """A store may hold an id the policy now refuses (written before it): the nightly run
    still consolidates every other agent."""
    await kernel.heart.facts.learn(FactInput(agent_id="alice", content="Alice deploys on Fridays"))
    async with kernel.database.transaction() as conn:
        await conn.execute(
            text(
                "INSERT INTO facts (agent_id, id, content, confidence, status, last_evidence_at,"
                " valid_from, created_at, updated_at) VALUES (:a, gen_random_uuid(),"
                " 'An old fact', 0.5, 'active', now(), now(), now(), now())"
            ),
            {"a": LOOK_ALIKES["zero-width space"]},
        )
    report = await kernel.consolidate_all()
    statuses = {a.agent_id: a.status for a in report.agents}
    assert statuses["alice"] == "done" and LOOK_ALIKES["zero-width space"] in statuses
