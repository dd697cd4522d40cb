"""``ContextEngine``: decide, fetch only what is needed, dedup, fit the budget.

One ``build(request)``:

1. signals the engine can derive itself are added under the host's (host values win):
   ``prompt_token_count``, ``working_memory_turns``, ``greeting_pattern``;
2. the relevance pipeline decides the included nodes — pure, before any I/O;
3. a fresh passive prefetch of the session serves ``facts``/``episodic_memory``;
4. the query is embedded once, only if an included recall node still needs it;
5. the included providers are awaited concurrently (recall nodes one connection each); a
   provider that raises is left out and reported, the turn goes on;
6. each node's measured size feeds the pipeline's token estimates (for soft recovery);
7. the sections are fitted into the budget (``budget.assemble``) and the report is logged.

Excluded nodes are never fetched (invariant 6): a greeting in ``ACKNOWLEDGE`` costs no
embedding and no database statement.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Iterable
from functools import partial
from typing import Any

from memory_kernel.context import tools
from memory_kernel.context.budget import SOURCE_OVERLAP, assemble, render
from memory_kernel.context.episodes import episode_chars, shorten_episodes
from memory_kernel.context.nodes import (
    GistsNode,
    QueryNode,
    RecallNode,
    WorkingMemoryNode,
    format_hit,
)
from memory_kernel.context.prefetch import Prefetcher
from memory_kernel.context.provenance import without_extracted
from memory_kernel.context.recaller import Recaller, SlotJudges
from memory_kernel.context.relevance import RelevancePipeline
from memory_kernel.context.repeats import Rest
from memory_kernel.context.replies import untold
from memory_kernel.context.rest import rest_of
from memory_kernel.context.retrieval import query_words
from memory_kernel.context.stale import demote_in_sections
from memory_kernel.context.tokens import EstimatingTokenCounter
from memory_kernel.context.traits import TraitsNode, within_share, without_replaced
from memory_kernel.errors import ValidationError
from memory_kernel.models.context import (
    AssembledContext,
    ContextItem,
    ContextReport,
    ContextRequest,
    MemoryHit,
    MemorySource,
    NodeContent,
    SearchType,
    Tier,
)
from memory_kernel.models.turns import TurnInput
from memory_kernel.protocols import ContextNodeProvider, TokenCounter
from memory_kernel.runtime import Runtime

__all__ = [
    "PREFETCHED_NODES",
    "TOOL_RESULTS_NODE",
    "TURNS_NODE",
    "ContextEngine",
    "derive_signals",
    "request_from_turn",
]

_log = logging.getLogger(__name__)

TOOL_RESULTS_NODE = "tool_results"
TURNS_NODE = "turns"
#: A one-line memory costs about this many tokens: a budget holds at most budget / this of
#: them, so recall nodes offer that many (between passive_limit and passive_max_items).
_LINE_TOKENS = 25
#: The nodes passive prefetch recalls ahead of the next turn (the seed's streamed memories,
#: and what the user wants).
PREFETCHED_NODES = ("facts", "episodic_memory", "user_traits")
_GREETING = re.compile(
    r"^\s*(hi|hey|hello|hiya|howdy|yo|sup|hola|morning|evening|good\s+(morning|afternoon|"
    r"evening|night)|thanks|thank\s+you|thx|ok|okay|cool|great|bye|goodbye|see\s+you)\b",
    re.IGNORECASE,
)
_GREETING_MAX_WORDS = 5


def derive_signals(request: ContextRequest, counter: TokenCounter) -> dict[str, Any]:
    """The signals the engine knows without asking the host, overridden by the host's."""
    message = request.message
    derived: dict[str, Any] = {
        "prompt_token_count": counter.count(message),
        "working_memory_turns": sum(1 for m in request.recent_messages if m.strip()),
        "greeting_pattern": bool(_GREETING.match(message))
        and len(message.split(maxsplit=_GREETING_MAX_WORDS)) <= _GREETING_MAX_WORDS,
    }
    derived.update(request.signals)
    return derived


def request_from_turn(turn: TurnInput, **overrides: Any) -> ContextRequest:
    """The engine's request for a hook's ``TurnInput``. ``classification``,
    ``returning_from_silence`` and ``token_budget`` may ride in ``turn.signals`` (hosts that
    have no separate place for them); ``overrides`` win over everything."""
    signals = dict(turn.signals)
    classification = signals.pop("classification", None)
    values: dict[str, Any] = {
        "agent_id": turn.agent_id,
        "session_id": turn.session_id,
        "message": turn.message,
        "mode": turn.mode,
        "signals": signals,
        "classification": classification if isinstance(classification, dict) else {},
        "returning_from_silence": bool(signals.pop("returning_from_silence", False)),
        "recent_messages": list(turn.recent_messages),
        "token_budget": signals.pop("token_budget", None),
    }
    values.update(overrides)
    return ContextRequest(**values)


class ContextEngine:
    """``kernel.context``: builds each turn's memory context.

    ``relevance``: a :class:`RelevancePipeline` (default: ``ContextConfig.relevance_config``
    or the packaged default, falling back to include-everything if it cannot be loaded).
    ``token_counter``: default :class:`EstimatingTokenCounter`. ``providers``: host nodes.
    ``slot_judges``: for a query, whether a newer recalled fact gives an older one's slot a
    new value (the kernel passes ``FactService.slot_judge``): two current values of one slot
    among the recalled facts then read newest first (``context.current``).
    """

    def __init__(
        self,
        runtime: Runtime,
        *,
        relevance: RelevancePipeline | None = None,
        token_counter: TokenCounter | None = None,
        providers: Iterable[ContextNodeProvider] = (),
        slot_judges: SlotJudges | None = None,
    ) -> None:
        cfg = runtime.config.context
        self._rt = runtime
        self.counter: TokenCounter = token_counter or EstimatingTokenCounter()
        self.recaller = Recaller(runtime, judges=slot_judges)
        self._base = relevance or RelevancePipeline.load(cfg.relevance_config)
        self._providers: dict[str, Any] = {}
        for builtin in (
            WorkingMemoryNode(),
            GistsNode(),
            self._recall_node("facts", "Known facts", MemorySource.FACT),
            self._recall_node("episodic_memory", "Past episodes", MemorySource.EPISODE),
            self._recall_node("decisions", "Related decisions", MemorySource.DECISION),
            self._recall_node(TURNS_NODE, "From past conversations", MemorySource.TURN),
            TraitsNode(self.recaller, limit=cfg.traits_limit),
        ):
            self._providers[builtin.name] = builtin
        for provider in providers:
            self._providers[provider.name] = provider
        self.relevance = self._base.over(self._providers)
        self.prefetch = Prefetcher(
            self._prefetch_fetch,
            clock=runtime.clock,
            ttl_s=cfg.prefetch_ttl_s,
            max_sessions=cfg.prefetch_max_sessions,
            max_tasks=cfg.prefetch_max_tasks,
        )

    # -- providers ------------------------------------------------------------------------

    def _recall_node(self, name: str, title: str, source: MemorySource) -> RecallNode:
        cfg = self._rt.config.context
        return RecallNode(
            name,
            title,
            source,
            self.recaller,
            limit=cfg.passive_limit,
            min_confidence=cfg.passive_min_confidence,
            # Facts and turns fill the budget; an episode is a session's gist and decisions
            # are deduplicated to the newest few: the seed's top few of each.
            fills=source in (MemorySource.FACT, MemorySource.TURN),
            excerpt_chars=cfg.turn_excerpt_chars,
        )

    @property
    def nodes(self) -> tuple[str, ...]:
        """The nodes that have a provider, most important first."""
        return self.relevance.nodes

    def register(self, provider: ContextNodeProvider, *, replace: bool = False) -> None:
        """Add a host node (identity, tools, skills, world state…)."""
        name = provider.name
        if not isinstance(name, str) or not name or name == TOOL_RESULTS_NODE:
            raise ValidationError(f"invalid context node name {name!r}")
        if name in self._providers and not replace:
            raise ValidationError(f"context node {name!r} is already registered")
        self._providers[name] = provider
        self.relevance = self._base.over(self._providers)

    def unregister(self, name: str) -> None:
        self._providers.pop(name, None)
        self.relevance = self._base.over(self._providers)

    # -- the turn -------------------------------------------------------------------------

    async def build(self, request: ContextRequest) -> AssembledContext:
        """The turn's budgeted context (see the module docstring for the steps)."""
        budget = request.token_budget or self._rt.config.context.token_budget
        tool_tokens = sum(self.counter.count(t) for t in request.tool_results)
        inclusion = self.relevance.compute(
            mode=request.mode,
            signals=derive_signals(request, self.counter),
            classification=request.classification,
            returning_from_silence=request.returning_from_silence,
            token_budget_remaining=budget - tool_tokens,
        )
        wanted = [n for n in inclusion.report.included if n in self._providers]
        sections, prefetched = self._from_prefetch(request, wanted)
        fetched, failed, deduplicated = await self._fetch(
            request, wanted, sections, self._offer(budget)
        )
        for section in fetched:
            sections[section.node] = section
            self.relevance.estimates.observe(section.node, self.counter.count(render([section])))
        # A session's gist in a small budget: its part about the query (context.episodes).
        cfg = self._rt.config.context
        gist = episode_chars(budget, cfg.episode_budget_share)
        words = query_words(request.message)
        sections = {n: shorten_episodes(s, words, gist) for n, s in sections.items()}
        # What a current fact replaced is ranked under it and noted (context.stale).
        ordered = demote_in_sections([sections[n] for n in wanted if n in sections])
        # What the user wants: not what a newer recalled fact replaced, and within its share
        # of the budget (context.traits).
        share = partial(within_share, budget=budget, share=cfg.traits_budget_share)
        ordered = [share(s, counter=self.counter) for s in without_replaced(ordered)]
        if not cfg.extracted_facts_shown:
            # An extracted fact is said by the turn it came from (context.provenance).
            ordered = without_extracted(ordered)
        # A reply shown with its question yields to a memory drafted from it (context.replies).
        ordered = untold(ordered)
        if request.tool_results:
            ordered.append(_tool_section(request.tool_results))
        fitted = assemble(ordered, budget=budget, counter=self.counter, rest=self._rest(words))
        report = ContextReport(
            inclusion=inclusion.report,
            fetched=tuple(s.node for s in fetched),
            failed=tuple(failed),
            prefetch_used=prefetched,
            decisions_deduplicated=deduplicated,
            items_dropped=fitted.items_dropped,
            tokens_by_tier=fitted.tokens_by_tier,
            tokens_by_node=fitted.tokens_by_node,
            tokens_used=fitted.tokens_used,
            token_budget=budget,
        )
        _log.info(
            "context built: %d/%d tokens, nodes=[%s], near-duplicates left out: %d",
            fitted.tokens_used,
            budget,
            ", ".join(s.node for s in fitted.sections),
            fitted.duplicates,
            extra={"context_report": report.model_dump(mode="json", exclude={"inclusion"})},
        )
        return AssembledContext(
            text=fitted.text,
            sections=tuple(fitted.sections),
            hits=tuple(fitted.hits),
            report=report,
        )

    def _rest(self, query: list[str]) -> Rest:
        """A recalled turn shown as what its kept summary left out (``context.rest``)."""
        return partial(
            rest_of,
            query_words=query,
            max_chars=self._rt.config.context.turn_excerpt_chars,
            bar=SOURCE_OVERLAP,
            render=format_hit,
        )

    def _from_prefetch(
        self, request: ContextRequest, wanted: list[str]
    ) -> tuple[dict[str, NodeContent], bool]:
        if request.session_id is None or not any(n in wanted for n in PREFETCHED_NODES):
            return {}, False
        entry = self.prefetch.take(request.agent_id, request.session_id)
        if entry is None:
            return {}, False
        served = {n: s for n, s in entry.sections.items() if n in wanted}
        return served, bool(served)

    def _offer(self, budget: int) -> int:
        """How many memories each recall node offers for ``budget``: enough to fill it with
        one-line memories, so the budget is spent by relevance across the nodes."""
        cfg = self._rt.config.context
        return min(cfg.passive_max_items, max(cfg.passive_limit, budget // _LINE_TOKENS))

    async def _fetch(
        self,
        request: ContextRequest,
        wanted: list[str],
        ready: dict[str, NodeContent],
        offer: int | None = None,
    ) -> tuple[list[NodeContent], list[str], int]:
        todo = [self._providers[n] for n in wanted if n not in ready]
        vector = None
        if any(isinstance(p, QueryNode) for p in todo):
            vector = await self.recaller.embed_query(request.message)

        async def one(provider: Any) -> tuple[NodeContent, int] | None:
            try:
                if isinstance(provider, QueryNode):
                    return await provider.fetch_for(
                        agent_id=request.agent_id,
                        query=request.message,
                        vector=vector,
                        limit=offer,
                        session_id=request.session_id,
                    )
                content = await provider.fetch(request)
                if not isinstance(content, NodeContent) or content.node != provider.name:
                    raise TypeError("fetch must return a NodeContent with the provider's name")
                return content, 0
            except Exception:  # a host node must not break the turn
                _log.exception("context node %r failed; left out of this turn", provider.name)
                return None

        results = await asyncio.gather(*(one(p) for p in todo))
        fetched = [r[0] for r in results if r is not None]
        failed = [p.name for p, r in zip(todo, results, strict=True) if r is None]
        return fetched, failed, sum(r[1] for r in results if r is not None)

    # -- passive prefetch -----------------------------------------------------------------

    def schedule_prefetch(self, *, agent_id: str, session_id: str, turns: list[str]) -> bool:
        """After ``post_turn``: recall for the session's next turn from its last two turns."""
        return self.prefetch.schedule(agent_id=agent_id, session_id=session_id, turns=turns[-2:])

    async def _prefetch_fetch(self, agent_id: str, query: str) -> dict[str, NodeContent]:
        nodes = [p for n in PREFETCHED_NODES if isinstance(p := self._providers.get(n), QueryNode)]
        vector = await self.recaller.embed_query(query)
        offer = self._offer(self._rt.config.context.token_budget)
        results = await asyncio.gather(
            *(
                p.fetch_for(agent_id=agent_id, query=query, vector=vector, limit=offer)
                for p in nodes
            )
        )
        return {content.node: content for content, _ in results}

    # -- active tool ----------------------------------------------------------------------

    async def search_memory(
        self,
        agent_id: str,
        query: str,
        *,
        search_type: SearchType | str = SearchType.BOTH,
        limit: int = 5,
    ) -> list[MemoryHit]:
        """The agent's explicit recall (confidence > ``active_min_confidence``)."""
        return await tools.search_memory(
            self.recaller,
            agent_id=agent_id,
            query=query,
            search_type=search_type,
            limit=limit,
            min_confidence=self._rt.config.context.active_min_confidence,
        )

    @staticmethod
    def tool_schemas(*, forget: bool = False) -> list[dict[str, Any]]:
        return tools.tool_schemas(forget=forget)

    async def close(self) -> None:
        """Cancel background prefetches (call before closing the database)."""
        await self.prefetch.close()


def _tool_section(results: list[str]) -> NodeContent:
    items = tuple(ContextItem(text=r) for r in results if r.strip())
    return NodeContent(
        node=TOOL_RESULTS_NODE, title="Memory search results", tier=Tier.TOOL, items=items
    )
