"""Hybrid recall SQL: vector top-k (``storage.search.knn_select``) and Postgres full-text top-k
over facts, episodes, decisions or turns of one agent, merged into ``Candidate`` s with both ranks.

Functions take the caller's connection and never write; every statement filters by
``agent_id`` (invariant 1, partition pruning). Only memories that recall may show are
read: active facts, admitted completed episodes, active decisions, and every turn.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

import numpy as np
from sqlalchemy import (
    ColumnClause,
    ColumnElement,
    Float,
    Select,
    Table,
    Text,
    bindparam,
    cast,
    func,
    literal,
    literal_column,
    select,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.context import statements
from memory_kernel.context.recall import Candidate, with_similarity
from memory_kernel.heart.episodes.policy import AUTOMATIC_OUTCOMES
from memory_kernel.models.context import MemorySource
from memory_kernel.models.enums import AdmissionStatus, EpisodeStatus, FactStatus
from memory_kernel.runtime import off_loop
from memory_kernel.similarity import space_pieces, word_overlap, words
from memory_kernel.storage.search import AnyRow
from memory_kernel.storage.tables import decisions, episodes, facts, turns
from memory_kernel.storage.vector import as_array
from memory_kernel.vectors import Vector

__all__ = [
    "UNRATED",
    "TermStats",
    "WeightedTerm",
    "candidates",
    "preferences",
    "query_words",
    "term_stats",
    "weigh",
]

_CURRENT_FACTS = (FactStatus.ACTIVE.value, FactStatus.PENDING_EMBED.value)
_ENGLISH: ColumnClause[Any] = literal_column("'english'::regconfig")
# A word in over a fifth (idf < ln 5) of more than this many rows selects no candidates.
_COMMON_ROWS = 1000
_COMMON_IDF = math.log(5.0)
#: Sources without a confidence column: they count with a configured default.
UNRATED = frozenset({MemorySource.EPISODE, MemorySource.TURN})


@dataclass(frozen=True, slots=True)
class _Spec:
    table: Table
    columns: tuple[Any, ...]
    # Filters of both searches beyond ``nearest``'s searchable predicate, by min confidence.
    where: Callable[[Any], list[ColumnElement[bool]]]
    # The full-text side's own visibility filter (``nearest`` applies SEARCHABLE itself).
    visible: Callable[[], list[ColumnElement[bool]]]
    to_text: Callable[[AnyRow], str]
    confidence: Callable[[AnyRow, float], float]
    created: str = "created_at"  # the column that dates a memory
    # Columns shown in a hit's metadata beside the row's own ``metadata``.
    extra: tuple[str, ...] = ()


def _columns(table: Table, *own: str) -> tuple[Any, ...]:
    """A source's columns: the id, ``own``, then the metadata and embedding every source has."""
    return (table.c.id, *(table.c[name] for name in own), table.c.metadata, table.c.embedding)


def _fact_where(min_confidence: float) -> list[ColumnElement[bool]]:
    return [facts.c.confidence > min_confidence]


def _episode_text(row: AnyRow) -> str:
    if not row.outcome or row.outcome in AUTOMATIC_OUTCOMES:  # "session ended" says nothing
        return str(row.summary)
    return f"{row.summary} — {row.outcome}"


_SPECS: dict[MemorySource, _Spec] = {
    MemorySource.FACT: _Spec(
        table=facts,
        columns=_columns(facts, "content", "confidence", "created_at"),
        where=_fact_where,
        visible=lambda: [facts.c.status.in_(_CURRENT_FACTS)],
        to_text=lambda r: str(r.content),
        confidence=lambda r, _default: float(r.confidence),
    ),
    MemorySource.EPISODE: _Spec(
        table=episodes,
        columns=_columns(episodes, "summary", "outcome", "started_at"),
        where=lambda _m: [episodes.c.status == EpisodeStatus.COMPLETED.value],
        visible=lambda: [episodes.c.admission == AdmissionStatus.ACTIVE.value],
        to_text=_episode_text,
        confidence=lambda _r, default: default,
        created="started_at",
    ),
    MemorySource.DECISION: _Spec(
        table=decisions,
        columns=_columns(decisions, "description", "outcome", "confidence", "created_at"),
        where=lambda m: [decisions.c.confidence > m],
        visible=lambda: [decisions.c.active.is_(True)],
        to_text=lambda r: str(r.description),
        confidence=lambda r, _default: float(r.confidence),
    ),
    MemorySource.TURN: _Spec(
        table=turns,
        columns=_columns(turns, "content", "role", "session_id", "created_at"),
        where=lambda _m: [],
        visible=lambda: [],
        to_text=lambda r: str(r.content),
        confidence=lambda _r, default: default,
        extra=("role", "session_id"),
    ),
}


def _candidate(source: MemorySource, spec: _Spec, row: AnyRow, default_conf: float) -> Candidate:
    m = row._mapping
    return Candidate(
        source=source,
        id=m["id"],
        text=spec.to_text(row),
        confidence=spec.confidence(row, default_conf),
        created_at=m[spec.created],
        vector=as_array(m["embedding"]),
        outcome=m.get("outcome"),
        metadata={**(m["metadata"] or {}), **{name: m[name] for name in spec.extra}},
    )


async def candidates(
    conn: AsyncConnection,
    source: MemorySource,
    *,
    agent_id: str,
    query: str,
    vector: Vector | None,
    k: int,
    min_confidence: float,
    terms: Sequence[WeightedTerm] = (),
    default_confidence: float = 0.7,
    exclude_session: str | None = None,
) -> list[Candidate]:
    """Up to ``k`` vector hits and ``k`` full-text hits (merged by id), each with its ranks,
    its cosine to ``vector`` (word overlap with ``query`` when there is no vector) and its
    lexical score over ``terms`` (from :func:`term_stats`). Episodes and turns carry no
    confidence of their own: they count with ``default_confidence``. ``exclude_session``
    leaves out the turns of that session (the host holds them in its window)."""
    spec = _SPECS[source]
    if source in UNRATED and default_confidence <= min_confidence:
        return []
    other_sessions = exclude_session is not None and source is MemorySource.TURN
    by_vector, by_text = _statements(source, other_sessions, len(terms))
    selective = [t for t in terms if not t.too_common]
    params = statements.params(
        agent_id=agent_id, k=k, floor=min_confidence, session=exclude_session, vector=vector,
        weights=[(t.tsquery, t.weight) for t in terms],
        any_word=" | ".join(f"({t.tsquery})" for t in selective),
    )  # fmt: skip
    found: dict[uuid.UUID, Candidate] = {}
    if vector is not None and float(np.linalg.norm(vector)) > 0.0 and k > 0:
        rows = (await conn.execute(by_vector, params)).all()
        for rank, row in enumerate(rows, 1):
            c = _candidate(source, spec, row, default_confidence)
            found[c.id] = replace(
                c, similarity=1.0 - float(row.distance), vector_rank=rank, lexical=_lex(row)
            )
    if not terms:
        return list(found.values())
    # Only very common words: the vector side recalls alone (see WeightedTerm.too_common).
    text_rows = (await conn.execute(by_text, params)).all() if selective else []
    said: set[str] | None = None  # the query's words, tokenised once (the query may be long)
    for rank, row in enumerate(text_rows, 1):
        known = found.get(row.id)
        if known is not None:
            found[row.id] = replace(known, text_rank=rank)
            continue
        c = _candidate(source, spec, row, default_confidence)
        if c.vector is not None and vector is not None:
            c = with_similarity(c, vector)
        else:
            said = await off_loop(len(query), words, query) if said is None else said
            c = replace(c, similarity=word_overlap(said, words(c.text)))
        found[c.id] = replace(c, text_rank=rank, lexical=_lex(row))
    return list(found.values())


async def preferences(
    conn: AsyncConnection, *, agent_id: str, category: str, min_confidence: float, pool: int
) -> list[Candidate]:
    """The agent's current facts of ``category`` (its preferences), newest evidence first, at
    most ``pool`` of them; found by kind, not by a query (``context.traits``)."""
    spec = _SPECS[MemorySource.FACT]
    stmt = (
        select(*spec.columns)
        .where(
            facts.c.agent_id == agent_id,
            facts.c.category == category,
            facts.c.status.in_(_CURRENT_FACTS),
            *_fact_where(min_confidence),
        )
        .order_by(facts.c.last_evidence_at.desc(), facts.c.id)
        .limit(pool)
    )
    return [_candidate(MemorySource.FACT, spec, row, 0.0) for row in await conn.execute(stmt)]


def _lex(row: AnyRow) -> float:
    value = row._mapping.get("lexical")
    return 0.0 if value is None else float(value)


# PostgreSQL's english stop words: they become empty tsqueries (which match nothing and
# make the server emit notices), so they are left out of the per-word terms.
_STOPWORD_LINES = (
    "i me my myself we our ours ourselves you your yours yourself yourselves he him his",
    "himself she her hers herself it its itself they them their theirs themselves what which",
    "who whom this that these those am is are was were be been being have has had having do",
    "does did doing a an the and but if or because as until while of at by for with about",
    "against between into through during before after above below to from up down in out on",
    "off over under again further then once here there when where why how all any both each",
    "few more most other some such no nor not only own same so than too very s t can will",
    "just don should now",
)
_PG_STOPWORDS = frozenset(" ".join(_STOPWORD_LINES).split())
_MAX_TERMS = 24
_WORD = re.compile(r"\w+")


def query_words(query: str) -> list[str]:
    """The query's distinct non-stop words, in order (at most 24), read piece by piece
    (``similarity.space_pieces``) until the 24th: a long message costs what its head costs,
    and one with few distinct words is read in short native calls."""
    found: dict[str, None] = {}
    for piece in space_pieces(query):
        for word in dict.fromkeys(_WORD.findall(piece.lower())):
            if word not in _PG_STOPWORDS and word not in found:
                found[word] = None
                if len(found) == _MAX_TERMS:
                    return list(found)
    return list(found)


@dataclass(frozen=True, slots=True)
class TermStats:
    """Document frequencies of query words among an agent's visible rows of one table."""

    rows: int
    terms: dict[str, tuple[str, int]]  # word -> (its tsquery as text, document frequency)


@dataclass(frozen=True, slots=True)
class WeightedTerm:
    tsquery: str  # a tsquery in text form, as Postgres printed it
    weight: float  # inverse document frequency
    rows: int = 0  # how many of the agent's rows contain it (document frequency)

    @property
    def too_common(self) -> bool:
        """Contained in more than a fifth of the agent's rows, and in over a thousand: it
        barely tells rows apart, and selecting candidates by it means scoring and sorting
        most of the agent's memories, a cost that grows with the store. It still counts in
        the score of rows the other words (or the vector side) found."""
        return self.rows > _COMMON_ROWS and self.weight < _COMMON_IDF


async def term_stats(
    conn: AsyncConnection,
    source: MemorySource,
    *,
    agent_id: str,
    words: Sequence[str],
    min_confidence: float,
    count_rows: bool = True,
) -> TermStats:
    """N and each word's document frequency in one statement (a GIN index scan per word).
    N scans all the agent's visible rows (growing with the store): ``count_rows=False``
    leaves it out (``rows`` is then -1) for a caller that knows it already.

    The words travel as one array parameter, so the statement has one shape whatever their
    number: built and compiled once per source, not once per word count (SQLAlchemy
    compiled one subquery per word: event-loop time on every call, and much more the first
    time a word count was seen)."""
    params = {"agent": agent_id, "floor": min_confidence, "words": list(words)}
    if not words:
        rows = await conn.scalar(_rows_statement(source), params) if count_rows else -1
        return TermStats(rows=int(rows or 0), terms={})
    found = (await conn.execute(_stats_statement(source, count_rows), params)).all()
    terms = {r.word: (str(r.tsquery), int(r.df)) for r in found}
    return TermStats(rows=int(found[0].n), terms=terms)


def _visible(spec: _Spec) -> list[ColumnElement[bool]]:
    """The agent's rows the full-text side may see (bound: ``agent``, ``floor``)."""
    table = spec.table
    floor = bindparam("floor", type_=Float)
    return [table.c.agent_id == bindparam("agent", type_=Text), *spec.visible(), *spec.where(floor)]


@cache
def _rows_statement(source: MemorySource) -> Select[Any]:
    spec = _SPECS[source]
    return select(func.count()).select_from(spec.table).where(*_visible(spec))


@cache
def _stats_statement(source: MemorySource, count_rows: bool) -> Select[Any]:
    """Per word of ``:words`` (in order): the word, its tsquery as text and its document
    frequency; and N (or -1) on every row."""
    spec = _SPECS[source]
    table = spec.table
    given = (
        func.unnest(bindparam("words", type_=ARRAY(Text)))
        .table_valued("word", with_ordinality="n")
        .render_derived(name="w")
    )
    tsq = func.plainto_tsquery(_ENGLISH, given.c.word)
    df = (
        select(func.count())
        .select_from(table)
        .where(*_visible(spec), table.c.search_tsv.bool_op("@@")(tsq))
        .scalar_subquery()
    )
    rows = _rows_statement(source).scalar_subquery() if count_rows else literal(-1)
    return select(
        given.c.word,
        cast(tsq, Text).label("tsquery"),
        df.label("df"),
        rows.label("n"),
    ).order_by(given.c.n)


def weigh(stats: TermStats, words: Sequence[str]) -> list[WeightedTerm]:
    """BM25's inverse document frequency ``ln(1 + (N - df + 0.5) / (df + 0.5))`` per word
    (``ts_rank`` has none: a name in half of the memories would outweigh the one rare word
    that matters). Words no row contains, or that Postgres reduces to nothing, are left out.
    N is never taken below a word's df (a reused N may predate the rows that hold the word),
    so every weight is positive: a query word never counts against a memory holding it."""
    weighted = []
    for word in words:
        tsquery, df = stats.terms.get(word, ("", 0))
        if tsquery and df > 0:
            rows = max(stats.rows, df)
            idf = math.log(1.0 + (rows - df + 0.5) / (df + 0.5))
            weighted.append(WeightedTerm(tsquery, idf, df))
    return weighted


@cache
def _statements(
    source: MemorySource, other_sessions: bool, terms: int
) -> tuple[Select[Any], Select[Any]]:
    """The vector and the full-text statement of ``source`` for ``terms`` weighted words
    (``other_sessions``: the turns of ``:session`` left out), built once."""
    spec = _SPECS[source]
    filters = spec.where(bindparam("floor", type_=Float))
    if other_sessions and source is MemorySource.TURN:
        filters.append(turns.c.session_id != bindparam("session", type_=Text))
    return (
        statements.vector_search(spec.table, spec.columns, filters, terms),
        statements.text_search(spec.table, spec.columns, [*spec.visible(), *filters], terms),
    )
