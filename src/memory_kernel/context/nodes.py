"""Context nodes: the built-in providers and helpers for host-registered ones.

A provider (``protocols.ContextNodeProvider``) has a ``name`` and ``async fetch(request)``
returning a ``NodeContent``: a titled section of indivisible items in one budget tier. The
engine awaits only the providers of included nodes (invariant 6), concurrently.

Built-in: ``working_memory`` (the caller's recent messages, no I/O), ``gists`` (the caller's
gists, no I/O), and the recall nodes ``facts``, ``episodic_memory``, ``decisions`` and
``turns`` (what was said in past conversations)
(hybrid recall, one connection each, sharing the turn's single query embedding);
``user_traits``, what the user wants, is in ``context.traits``.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from memory_kernel.context.dated import flatten, stamp, within_reach
from memory_kernel.context.excerpt import excerpt
from memory_kernel.context.provenance import few_extracted, said_at
from memory_kernel.context.recaller import Recaller
from memory_kernel.context.replies import ALONE, FOLLOW_UP, REPLY, TOLD, answers, asks
from memory_kernel.context.retrieval import query_words
from memory_kernel.dates import resolve_relative
from memory_kernel.models.context import (
    ContextItem,
    ContextRequest,
    MemoryHit,
    MemorySource,
    NodeContent,
    Tier,
)
from memory_kernel.vectors import Vector

__all__ = [
    "FunctionNode", "GistsNode", "QueryNode", "RecallNode", "WorkingMemoryNode", "format_hit",
]  # fmt: skip

_DESCRIPTION_CHARS = 120  # the seed's decision line: "- [status] desc[:120] (confidence)"


def format_hit(hit: MemoryHit) -> str:
    """How a recalled memory reads in the prompt. What happened carries its date: a turn
    is what someone said on a day, ``[20 May 2023] user: …``, an episode what happened on
    one, ``[20 May 2023] …``; a long one restates its date so that none of its values is
    far from it (``context.dated``). Relative time in a turn or an episode ("yesterday")
    is followed by the date it meant (``dates``). A fact is true until replaced: undated,
    unless a newer recalled fact gives its slot a new value (``context.current``) — or it
    was extracted from a conversation: then it is what was said on a day, and opens with
    that day (``context.provenance``)."""
    if hit.source is MemorySource.DECISION:
        status = hit.outcome or "pending"
        return f"[{status}] {hit.text[:_DESCRIPTION_CHARS]} (confidence: {hit.confidence:.2f})"
    if hit.source in (MemorySource.TURN, MemorySource.EPISODE):
        said = flatten(resolve_relative(hit.text, hit.created_at))
        if hit.source is MemorySource.TURN:
            said = f"{hit.metadata.get('role', 'user')}: {said}"
        return f"{stamp(hit.created_at)} {within_reach(said, hit.created_at)}"
    if hit.replaced_by is not None:  # a value a newer fact replaced (context.current)
        return f"{stamp(hit.created_at)} {within_reach(flatten(hit.text), hit.created_at)}"
    when = said_at(hit)
    if when is not None:
        return f"{stamp(when)} {within_reach(flatten(hit.text), when)}"
    return hit.text


class WorkingMemoryNode:
    """``working_memory``: the recent messages the caller passed (required tier)."""

    name = "working_memory"
    title = "Recent conversation"

    async def fetch(self, request: ContextRequest) -> NodeContent:
        items = tuple(ContextItem(text=m) for m in request.recent_messages if m.strip())
        return NodeContent(node=self.name, title=self.title, tier=Tier.RECENT, items=items)


class GistsNode:
    """``gists``: summaries the caller passed, if any (opportunistic tier)."""

    name = "gists"
    title = "Gists"

    async def fetch(self, request: ContextRequest) -> NodeContent:
        items = tuple(ContextItem(text=g) for g in request.gists or () if g.strip())
        return NodeContent(node=self.name, title=self.title, tier=Tier.STREAMED, items=items)


class QueryNode(ABC):
    """A built-in node the engine fetches with the turn's query and its one vector
    (``fetch_for``: the recall nodes and ``user_traits``), as the passive prefetch does with
    the session's last turns."""

    async def fetch(self, request: ContextRequest, *, vector: Vector | None = None) -> NodeContent:
        content, _ = await self.fetch_for(
            agent_id=request.agent_id, query=request.message, vector=vector
        )
        return content

    @abstractmethod
    async def fetch_for(
        self,
        *,
        agent_id: str,
        query: str,
        vector: Vector | None,
        limit: int | None = None,
        session_id: str | None = None,
    ) -> tuple[NodeContent, int]:
        """The section for ``query``, and how many decisions were left out as repeats."""


class RecallNode(QueryNode):
    """A recall node: ``facts``, ``episodic_memory``, ``decisions`` or ``turns``."""

    def __init__(
        self,
        name: str,
        title: str,
        source: MemorySource,
        recaller: Recaller,
        *,
        limit: int,
        min_confidence: float,
        fills: bool = True,
        excerpt_chars: int | None = None,
    ) -> None:
        self.name = name
        #: Whether the node offers more than ``limit`` memories when the budget has room.
        self.fills = fills
        # Turns longer than this are shown as their part about the query (None: whole).
        self._excerpt_chars = excerpt_chars
        self.title = title
        self.source = source
        self._recaller = recaller
        self._limit = limit
        self._min_confidence = min_confidence

    async def fetch_for(
        self,
        *,
        agent_id: str,
        query: str,
        vector: Vector | None,
        limit: int | None = None,
        session_id: str | None = None,
    ) -> tuple[NodeContent, int]:
        """The section (at most ``limit`` items, default the node's; beyond the node's own
        limit — for turns from the first — each about the query: at least
        ``fill_similarity_ratio`` as similar as the best), and how many decisions were
        removed as near-duplicates. The turns node leaves out the turns of
        ``session_id``: they are the conversation the host is having, in its own window."""
        result = await self._recaller.recall(
            self.source,
            agent_id=agent_id,
            query=query,
            vector=vector,
            limit=self._limit if limit is None or not self.fills else max(self._limit, limit),
            min_confidence=self._min_confidence,
            # The seed's top few memories always; beyond them (and for turns, raw and many,
            # from the first) only what is about the query (``recall.relevant_fill``).
            keep=0 if self.source is MemorySource.TURN else self._limit,
            exclude_session=session_id,
        )
        hits = few_extracted(result.hits, self._limit)
        items = await self._items(agent_id, hits, query)
        content = NodeContent(node=self.name, title=self.title, tier=Tier.STREAMED, items=items)
        return content, result.deduplicated

    async def _items(
        self, agent_id: str, hits: list[MemoryHit], query: str
    ) -> tuple[ContextItem, ...]:
        if self.source is not MemorySource.TURN or self._excerpt_chars is None:
            return tuple(ContextItem(text=format_hit(h), hit=h) for h in hits)
        # A long turn shows the part of it about the query (the hit keeps the whole text).
        wanted = query_words(query)
        shown = [excerpt(h.text, wanted, max_chars=self._excerpt_chars) for h in hits]
        # A turn that asks is shown with the turn that answered it; one that is followed
        # by a question about it, with that question and its answer (context.replies).
        whole = [said == h.text.strip() for h, said in zip(hits, shown, strict=True)]
        following = await self._recaller.replies(
            agent_id=agent_id,
            turn_ids=[
                h.id for h, said, w in zip(hits, shown, whole, strict=True) if w or asks(said)
            ],
            count=FOLLOW_UP,
        )
        items = []
        for hit, said, w in zip(hits, shown, whole, strict=True):
            told = answers(said, following.get(hit.id, []), max_chars=self._excerpt_chars, whole=w)
            if told:
                # The hit stays the recalled turn's; it carries the replies and the line
                # without them, for a distilled memory drafted from them (replies.untold).
                alone = format_hit(hit.model_copy(update={"text": said}))
                said = " → ".join([said, *(f"{t.role}: {t.content.strip()}" for t in told)])
                reply = "\n".join(t.content for t in told)
                meta = {**hit.metadata, REPLY: reply, ALONE: alone, TOLD: [str(t.id) for t in told]}
                hit = hit.model_copy(update={"metadata": meta})
            shown_hit = hit.model_copy(update={"text": said})
            items.append(ContextItem(text=format_hit(shown_hit), hit=hit))
        return tuple(items)


TextSource = Callable[[ContextRequest], Iterable[str] | Awaitable[Iterable[str]]]


class FunctionNode:
    """A host node from a function: ``FunctionNode("identity_context", "Identity",
    lambda req: ["You are Nous, ..."])``. The function may be async; each string it returns
    is one item. ``tier`` decides how the budget treats it (default: ``SYSTEM``, fills)."""

    def __init__(self, name: str, title: str, source: TextSource, *, tier: Tier = Tier.SYSTEM):
        self.name = name
        self.title = title
        self.tier = tier
        self._source = source

    async def fetch(self, request: ContextRequest) -> NodeContent:
        produced: Any = self._source(request)
        if inspect.isawaitable(produced):
            produced = await produced
        items = tuple(ContextItem(text=str(t)) for t in produced if str(t).strip())
        return NodeContent(node=self.name, title=self.title, tier=self.tier, items=items)
