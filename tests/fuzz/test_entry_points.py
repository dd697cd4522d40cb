"""Every public entry point fed hostile input: only typed ``memory_kernel.errors`` exceptions,
never a raw driver/SQL error, never a partial write (see ``checks.attempt``). Each example
keeps all arguments valid but one (``strategies.fields``), so the attack reaches the code
behind the validators, not only the validators."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from memory_kernel import MemoryKernel, MemoryKernelConfig
from memory_kernel.embeddings import validate_vectors
from memory_kernel.models.context import ContextRequest
from memory_kernel.models.decisions import DecisionInput
from memory_kernel.models.episodes import EpisodeInput
from memory_kernel.models.facts import FactInput
from memory_kernel.models.turns import ToolResult, TurnHandle, TurnInput, TurnOutcome
from tests.fuzz import strategies as s
from tests.fuzz.checks import attempt, construct

AGENT = (s.good_agent, s.agent_ids)
TEXT = (s.good_text, s.text)
OPTIONAL_TEXT = (st.one_of(st.none(), s.good_text), s.text)
UNIT = (s.unit, s.numbers)
K = (s.good_k, st.one_of(st.integers(-5, 5000), s.junk))
ID = (st.uuids(), s.ids)
WHEN = (s.good_when, s.datetimes)


@given(f=s.fields(agent=AGENT, content=TEXT, subject=OPTIONAL_TEXT, confidence=UNIT,
                  meta=(st.just({}), s.metadata)), many=st.booleans())  # fmt: skip
async def test_learn(fuzz_kernel: MemoryKernel, f: dict[str, Any], many: bool) -> None:
    fact = construct(
        "FactInput",
        lambda: FactInput(
            agent_id=f["agent"], content=f["content"], subject=f["subject"],
            confidence=f["confidence"], metadata=f["meta"],
        ),
    )  # fmt: skip
    if fact is None:
        return
    facts = fuzz_kernel.heart.facts
    if many:
        # Any iterable: a generator as well as a list.
        await attempt(fuzz_kernel, "learn_many", lambda: facts.learn_many(f for f in (fact, fact)))  # type: ignore[misc]
    else:
        await attempt(fuzz_kernel, "learn", lambda: facts.learn(fact))  # type: ignore[arg-type]


@given(f=s.fields(agent=AGENT, query=TEXT, k=K, floor=UNIT, fact_id=ID, when=WHEN, limit=K))
async def test_fact_reads(fuzz_kernel: MemoryKernel, f: dict[str, Any]) -> None:
    facts, agent = fuzz_kernel.heart.facts, f["agent"]
    await attempt(
        fuzz_kernel, "facts.search",
        lambda: facts.search(agent, f["query"], k=f["k"], min_confidence=f["floor"]),
    )  # fmt: skip
    await attempt(fuzz_kernel, "facts.history", lambda: facts.history(f["fact_id"], agent_id=agent))
    await attempt(fuzz_kernel, "facts.get", lambda: facts.get(f["fact_id"], agent_id=agent))
    await attempt(fuzz_kernel, "facts.as_of", lambda: facts.as_of(agent, f["when"]))
    await attempt(
        fuzz_kernel, "facts.embed_pending", lambda: facts.embed_pending(agent, limit=f["limit"])
    )


@given(f=s.fields(agent=AGENT, session=AGENT, summary=TEXT, outcome=TEXT,
                  refs=(st.lists(s.good_text, max_size=2), st.lists(s.text, max_size=3)),
                  query=TEXT, k=K))  # fmt: skip
async def test_episodes(fuzz_kernel: MemoryKernel, f: dict[str, Any]) -> None:
    episodes, agent = fuzz_kernel.heart.episodes, f["agent"]
    episode = construct(
        "EpisodeInput",
        lambda: EpisodeInput(agent_id=agent, session_id=f["session"], summary=f["summary"]),
    )
    started = None
    if episode is not None:
        started = await attempt(fuzz_kernel, "episodes.start", lambda: episodes.start(episode))  # type: ignore[arg-type]
    episode_id = started.episode.id if started is not None else uuid.uuid4()  # type: ignore[attr-defined]
    await attempt(
        fuzz_kernel, "episodes.end",
        lambda: episodes.end(
            episode_id, agent_id=agent, outcome=f["outcome"], references=f["refs"]
        ),
    )  # fmt: skip
    await attempt(
        fuzz_kernel, "episodes.search", lambda: episodes.search(agent, f["query"], k=f["k"])
    )
    await attempt(fuzz_kernel, "episodes.get", lambda: episodes.get(episode_id, agent_id=agent))


STAKES = (st.sampled_from(["low", "medium", "high", "critical"]), s.junk)


@given(f=s.fields(agent=AGENT, session=AGENT, description=TEXT, reasoning=OPTIONAL_TEXT,
                  confidence=UNIT, stakes=STAKES, since=WHEN, limit=K, label=OPTIONAL_TEXT,
                  episode=(st.none(), s.ids)))  # fmt: skip
async def test_decisions(fuzz_kernel: MemoryKernel, f: dict[str, Any]) -> None:
    brain, agent, session = fuzz_kernel.brain, f["agent"], f["session"]
    decision = construct(
        "DecisionInput",
        lambda: DecisionInput(
            agent_id=agent, session_id=session, description=f["description"],
            reasoning=f["reasoning"], confidence=f["confidence"], stakes=f["stakes"],
        ),
    )  # fmt: skip
    if decision is not None:
        await attempt(fuzz_kernel, "brain.record", lambda: brain.record(decision))  # type: ignore[arg-type]
    started = await attempt(
        fuzz_kernel, "brain.start",
        lambda: brain.start(agent, session, f["description"], stakes=f["stakes"],
                            frame=f["label"], category=f["label"], episode_id=f["episode"]),
    )  # fmt: skip
    if started is not None:
        await attempt(
            fuzz_kernel, "brain.finalize",
            lambda: brain.finalize(started, agent_id=agent, description=f["reasoning"],  # type: ignore[arg-type]
                                   confidence=f["confidence"], stakes=f["stakes"],
                                   reasoning=f["label"], category=f["label"]),
        )  # fmt: skip
    await attempt(
        fuzz_kernel, "brain.get_recent_decisions",
        lambda: brain.get_recent_decisions(agent, f["since"], limit=f["limit"], session_id=session),
    )  # fmt: skip


@given(f=s.fields(
    agent=AGENT, session=AGENT, message=TEXT,
    frame=(st.sampled_from([None, "decision", "debug", "question"]), s.text),
    signals=(st.just({"stakes": "high"}),
             st.dictionaries(st.sampled_from(["stakes", "x"]), s.junk)),
    response=TEXT, tool=(st.sampled_from(["record_decision", "search"]), s.text),
    args=(st.fixed_dictionaries({"description": s.good_text}),
          st.dictionaries(st.sampled_from(["description", "confidence", "stakes"]), s.junk)),
    turn_id=(st.one_of(st.uuids(), st.none()), s.ids),
))  # fmt: skip
async def test_hooks(fuzz_kernel: MemoryKernel, f: dict[str, Any]) -> None:
    turn = construct(
        "TurnInput",
        lambda: TurnInput(
            agent_id=f["agent"], session_id=f["session"], message=f["message"],
            frame=f["frame"], signals=f["signals"],
        ),
    )  # fmt: skip
    outcome = construct(
        "TurnOutcome",
        lambda: TurnOutcome(
            response_text=f["response"],
            tool_results=[ToolResult(tool_name=f["tool"], arguments=f["args"])],
        ),
    )
    if turn is None:
        return
    ctx = await attempt(fuzz_kernel, "pre_turn", lambda: fuzz_kernel.pre_turn(turn))  # type: ignore[arg-type]
    if ctx is None or outcome is None:
        return
    # The handle crosses a checkpoint: rebuilt from JSON, its turn id hostile or missing.
    wire = ctx.turn.model_dump(mode="json")  # type: ignore[attr-defined]
    if f["turn_id"] is None:
        del wire["turn_id"]
    else:
        wire["turn_id"] = f["turn_id"] if isinstance(f["turn_id"], str) else str(f["turn_id"])
    handle = construct("TurnHandle", lambda: TurnHandle.model_validate(wire))
    if handle is None:
        return
    first = await attempt(fuzz_kernel, "post_turn", lambda: fuzz_kernel.post_turn(handle, outcome))  # type: ignore[arg-type]
    if first is not None:  # a repeat of the handle returns the first result, writes nothing
        again = await attempt(
            fuzz_kernel,
            "post_turn (repeat)",
            lambda: fuzz_kernel.post_turn(handle, outcome),  # type: ignore[arg-type]
        )
        assert again == first


@given(f=s.fields(agent=AGENT, concurrency=(st.integers(1, 3), s.junk)), dry=st.booleans())
async def test_consolidation(fuzz_kernel: MemoryKernel, f: dict[str, Any], dry: bool) -> None:
    await attempt(
        fuzz_kernel, "consolidate", lambda: fuzz_kernel.consolidate(f["agent"], dry_run=dry)
    )
    await attempt(
        fuzz_kernel, "consolidate_all",
        lambda: fuzz_kernel.consolidate_all(concurrency=f["concurrency"], dry_run=True),
    )  # fmt: skip


_SECTIONS = ["storage", "heart", "brain", "context", "consolidation", "bogus"]
_KEYS = ["schema_name", "pool_size", "token_budget", "decay_per_day", "dedup_cosine",
         "embed_timeout_s", "relevance_config", "concurrency", "x"]  # fmt: skip


@given(
    data=st.dictionaries(
        st.sampled_from(_SECTIONS),
        st.one_of(st.dictionaries(st.sampled_from(_KEYS), s.junk, max_size=3), s.junk),
        max_size=3,
    )
)
def test_config(data: dict[str, Any]) -> None:
    construct("config", lambda: MemoryKernelConfig.from_mapping(data))


@given(
    rows=st.integers(0, 4), cols=st.sampled_from([0, 1, 383, 384, 385]),
    poison=st.sampled_from([None, np.nan, np.inf, -np.inf, 1e300]),
)  # fmt: skip
def test_vectors(rows: int, cols: int, poison: float | None) -> None:
    arr = np.ones((rows, cols), dtype=np.float64)
    if poison is not None and arr.size:
        arr.flat[arr.size // 2] = poison
    construct("vectors", lambda: validate_vectors(arr, dim=384, count=2))


@given(
    f=s.fields(
        agent=AGENT, query=TEXT, limit=K, budget=(st.integers(50, 3000), s.junk),
        search_type=(st.sampled_from(["facts", "episodes", "both"]), s.junk),
        mode=(st.sampled_from(["RESPOND", "PLAN", "REFLECT"]), s.text),
    )
)  # fmt: skip
async def test_context(fuzz_kernel: MemoryKernel, f: dict[str, Any]) -> None:
    await attempt(
        fuzz_kernel, "search_memory",
        lambda: fuzz_kernel.search_memory(
            f["agent"], f["query"], search_type=f["search_type"], limit=f["limit"]
        ),
    )  # fmt: skip
    request = construct(
        "ContextRequest",
        lambda: ContextRequest(
            agent_id=f["agent"], message=f["query"], mode=f["mode"], token_budget=f["budget"]
        ),
    )
    if request is not None:
        await attempt(fuzz_kernel, "context.build", lambda: fuzz_kernel.context.build(request))  # type: ignore[arg-type]


@given(f=s.fields(agent=AGENT, memory_id=ID, limit=K,
                  ids=(st.lists(st.uuids(), max_size=3),
                       st.one_of(s.junk, st.lists(s.ids, min_size=1, max_size=3)))))  # fmt: skip
async def test_bookkeeping_and_inspection(fuzz_kernel: MemoryKernel, f: dict[str, Any]) -> None:
    episodes, agent = fuzz_kernel.heart.episodes, f["agent"]
    await attempt(
        fuzz_kernel, "episodes.record_turn",
        lambda: episodes.record_turn(agent_id=agent, episode_id=f["memory_id"]),
    )  # fmt: skip
    await attempt(
        fuzz_kernel, "episodes.record_use",
        lambda: episodes.record_use(agent_id=agent, episode_ids=f["ids"]),
    )  # fmt: skip
    await attempt(
        fuzz_kernel, "brain.get", lambda: fuzz_kernel.brain.get(f["memory_id"], agent_id=agent)
    )
    await attempt(fuzz_kernel, "inspect", lambda: fuzz_kernel.inspect(agent, limit=f["limit"]))


_RECORD = st.fixed_dictionaries({
    "table": st.sampled_from(["facts", "turns", "decisions", "episodes"]),
    "row": st.dictionaries(
        st.sampled_from(["agent_id", "id", "content", "role", "created_at", "status"]), s.junk,
        max_size=6,
    ),
})  # fmt: skip


@given(f=s.fields(agent=AGENT, session=AGENT,
                  ids=(st.lists(st.uuids(), min_size=1, max_size=3),
                       st.one_of(s.junk, st.lists(s.ids, max_size=3))),
                  records=(st.lists(_RECORD, min_size=1, max_size=3),
                           st.one_of(s.junk, st.lists(s.junk, max_size=3)))))  # fmt: skip
async def test_erasure_export_and_import(fuzz_kernel: MemoryKernel, f: dict[str, Any]) -> None:
    agent = f["agent"]
    await attempt(fuzz_kernel, "forget", lambda: fuzz_kernel.forget(agent, f["ids"]))
    await attempt(
        fuzz_kernel, "forget_session", lambda: fuzz_kernel.forget_session(agent, f["session"])
    )
    await attempt(fuzz_kernel, "erase_agent", lambda: fuzz_kernel.erase_agent(agent))
    await attempt(fuzz_kernel, "export_agent", lambda: _drained(fuzz_kernel.export_agent(agent)))
    await attempt(
        fuzz_kernel, "import_agent", lambda: fuzz_kernel.import_agent(f["records"], agent_id=agent)
    )


async def _drained(records: AsyncIterator[object]) -> list[object]:
    return [r async for r in records]
