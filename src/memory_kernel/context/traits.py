"""``user_traits``: what the user wants, on every turn that includes the node.

A preference holds for every later conversation whatever it is about ("I like
evidence-based info" answers "What should I read to prepare for labour?", which shares none
of its words), so it is found by kind — the current facts of category ``PREFERENCE``, from
the extractor or a host's ``learn`` — not by the query's words, then ranked for the query.
Its lines claim the budget before the recalled memories (``Tier.PROFILE``), within a share
of it (``within_share``): at 300 tokens three preferences took the room of the memories that
answered (docs/tuning.md, twentieth round).
"""

from __future__ import annotations

from collections.abc import Sequence

from memory_kernel.context.budget import line
from memory_kernel.context.nodes import QueryNode, format_hit
from memory_kernel.context.recaller import Recaller
from memory_kernel.models.context import ContextItem, NodeContent, Tier
from memory_kernel.protocols import TokenCounter
from memory_kernel.vectors import Vector

__all__ = ["TraitsNode", "within_share", "without_replaced"]


class TraitsNode(QueryNode):
    """``user_traits``: the agent's current preference facts, the best ``limit`` for the
    query (see the module)."""

    name = "user_traits"
    title = "What the user wants"

    def __init__(self, recaller: Recaller, *, limit: int) -> None:
        self._recaller = recaller
        self._limit = limit

    async def fetch_for(
        self,
        *,
        agent_id: str,
        query: str,
        vector: Vector | None,
        limit: int | None = None,
        session_id: str | None = None,
    ) -> tuple[NodeContent, int]:
        """As ``RecallNode.fetch_for`` (the engine and the prefetch call both alike); the
        node shows its own few whatever the ``limit``, from every session."""
        hits = (
            await self._recaller.preferences(
                agent_id=agent_id, query=query, vector=vector, limit=self._limit
            )
            if self._limit
            else []
        )
        items = tuple(ContextItem(text=format_hit(h), hit=h) for h in hits)
        return NodeContent(node=self.name, title=self.title, tier=Tier.PROFILE, items=items), 0


def within_share(
    section: NodeContent, *, budget: int, share: float, counter: TokenCounter
) -> NodeContent:
    """A ``Tier.PROFILE`` section cut to ``share`` of the turn's ``budget``: its lines in
    order while they fit, the first always (the budget still decides whether even it fits).
    Any other section as it is."""
    if section.tier is not Tier.PROFILE:
        return section
    room, used = share * budget, 0
    kept: list[ContextItem] = []
    for item in section.items:
        used += counter.count(line(item) + "\n")  # what the budget charges for it
        if kept and used > room:
            break
        kept.append(item)
    return section.model_copy(update={"items": tuple(kept)})


def without_replaced(sections: Sequence[NodeContent]) -> list[NodeContent]:
    """``sections`` without the profile lines that a newer recalled fact replaced (another
    node's recall judged the pair, ``context.current``: "I like my coffee with oat milk" /
    "I've switched to drinking my coffee black"): what the user wanted before is not what
    they want, and the recall that read the newer value shows both, dated."""
    replaced = {
        i.hit.id for s in sections for i in s.items if i.hit is not None and i.hit.replaced_by
    }
    if not replaced:
        return list(sections)
    return [
        s.model_copy(
            update={"items": tuple(i for i in s.items if i.hit is None or i.hit.id not in replaced)}
        )
        if s.tier is Tier.PROFILE
        else s
        for s in sections
    ]
