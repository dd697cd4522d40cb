"""``MemoryKernel``: the one facade. It opens the store, wires the parts and delegates."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncGenerator, Generator, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from memory_kernel.brain import Brain
from memory_kernel.cognitive.hooks import CognitiveLayer
from memory_kernel.config import MemoryKernelConfig
from memory_kernel.consolidation import Consolidator, EmbeddingWorker
from memory_kernel.consolidation.phases import ProgressCallback
from memory_kernel.context.engine import ContextEngine
from memory_kernel.embeddings import default_embedder
from memory_kernel.erasure import ErasureService
from memory_kernel.errors import ConfigError
from memory_kernel.export import export_agent
from memory_kernel.heart import Heart
from memory_kernel.heart.episodes.sweeper import EpisodeSweeper
from memory_kernel.heart.extraction.worker import ExtractionWorker
from memory_kernel.inspection import AgentInspection, inspect_agent
from memory_kernel.judges.base import Judge
from memory_kernel.models.consolidation import ConsolidationReport
from memory_kernel.models.context import MemoryHit, SearchType
from memory_kernel.models.decisions import GateStats
from memory_kernel.models.episodes import EpisodeEnd
from memory_kernel.models.erasure import ErasureReport
from memory_kernel.models.extraction import ExtractionReport
from memory_kernel.models.imports import ImportReport
from memory_kernel.models.turns import TurnContext, TurnHandle, TurnInput, TurnOutcome, TurnResult
from memory_kernel.protocols import (
    CheckedClock,
    Clock,
    Embedder,
    EpisodeSummariser,
    FactExtractor,
    SystemClock,
)
from memory_kernel.restore.service import Records, import_agent
from memory_kernel.runtime import Runtime
from memory_kernel.storage.database import Database, ServerInfo
from memory_kernel.storage.embedded import EmbeddedServer
from memory_kernel.storage.indexer import IndexWorker

__all__ = ["MemoryKernel"]

_log = logging.getLogger(__name__)


class MemoryKernel:
    """Long-term memory for one or many agents, over PostgreSQL + pgvector.

    Open it with ``async with MemoryKernel.open() as kernel:`` (or ``kernel = await
    MemoryKernel.open()`` and ``await kernel.close()``). Without a DSN it starts an embedded
    PostgreSQL with pgvector in a per-user data directory.
    """

    def __init__(
        self,
        *,
        database: Database,
        embedder: Embedder,
        config: MemoryKernelConfig,
        clock: Clock,
        judge: Judge | None = None,
        extractor: FactExtractor | None = None,
        summariser: EpisodeSummariser | None = None,
    ) -> None:
        self.config = config
        self.embedder = embedder
        self.clock = clock
        self._db = database
        # Every part reads time through the runtime: a bad reading fails there, typed.
        checked = clock if isinstance(clock, CheckedClock) else CheckedClock(clock)
        self._runtime = Runtime(
            db=database, embedder=embedder, clock=checked, config=config, judge=judge,
            extractor=extractor, summariser=summariser,
        )  # fmt: skip
        #: Facts and episodes.
        self.heart = Heart(self._runtime)
        #: Decisions.
        self.brain = Brain(self._runtime)
        #: Relevance masks, lazy node fetch, recall and budgeted assembly.
        self.context = ContextEngine(self._runtime, slot_judges=self.heart.facts.slot_judge)
        self._erasure = ErasureService(
            database,
            summary_chars=config.heart.episode_summary_chars,
            embed=self._runtime.embed_or_none,
            erased=self.context.prefetch.discard,
            rewrite=self.heart.episodes.written_summary,
        )
        self._cognitive = CognitiveLayer(self._runtime, self.heart, self.brain, self.context)
        self._consolidator = Consolidator(
            self._runtime, self.heart.facts, self.heart.episodes, self.heart.extraction, self.brain
        )
        # Embeds pending_embed facts in the background; started by open(), stopped by close().
        self._embedding_worker = EmbeddingWorker(self._runtime, self.heart.facts)
        # Moves staged facts/episodes into their HNSW index; started by open() too.
        self._index_worker = IndexWorker(database)
        # Drains the extraction queue (facts from the turns); started by open() too.
        self._extraction_worker = ExtractionWorker(
            self.heart.extraction, config.extraction.worker_poll_s
        )
        # Ends idle episodes between nightly runs; started by open() too.
        self._episode_sweeper = EpisodeSweeper(self.heart.episodes, config.heart.episode_sweep_s)
        self._closed = False

    @classmethod
    def open(
        cls,
        dsn: str | None = None,
        *,
        embedder: Embedder | None = None,
        config: MemoryKernelConfig | None = None,
        data_dir: str | Path | None = None,
        clock: Clock | None = None,
        judge: Judge | None = None,
        extractor: FactExtractor | None = None,
        summariser: EpisodeSummariser | None = None,
    ) -> _Opening:
        """Open a store: ``dsn`` (or ``MEMORY_KERNEL_DSN``), else the embedded server.

        On open the pgvector extension is created if missing, the schema is migrated to
        head, and the embedder is checked against the one the store was built with. The
        ``clock`` is checked on open and at every reading: a naive datetime, or one outside
        the years 1900-9000, raises ``ConfigError`` (``protocols.CheckedClock``).
        ``extractor`` finds facts in the turns (``protocols.FactExtractor``; e.g.
        ``ChatExtractor``), off the hot path: ``post_turn`` queues the turns, a background
        worker, ``consolidate`` and :meth:`extract_pending` drain the queue.
        ``summariser`` writes an ended episode's summary (``protocols.EpisodeSummariser``;
        e.g. ``ChatSummariser``) instead of the extractive one, which stays the fallback.
        """
        return _Opening(
            cls,
            dsn=dsn,
            embedder=embedder,
            config=config,
            data_dir=None if data_dir is None else Path(data_dir),
            clock=clock,
            judge=judge,
            extractor=extractor,
            summariser=summariser,
        )

    async def pre_turn(self, turn: TurnInput) -> TurnContext:
        """Before the LLM call: start/reuse the episode, maybe deliberate, build the context."""
        return await self._cognitive.pre_turn(turn)

    async def post_turn(self, turn: TurnHandle, outcome: TurnOutcome) -> TurnResult:
        """After the LLM call: record the decision through the gate, update the episode."""
        return await self._cognitive.post_turn(turn, outcome)

    async def end_session(self, agent_id: str, session_id: str) -> list[EpisodeEnd]:
        """The session ended: its episode gets a summary from its turns and goes through
        admission (ADD / NOT / REPLACE / MERGE). Without this call the episode ends once
        idle for ``HeartConfig.episode_idle_end_s`` (``consolidate``, ``end_idle_episodes``)."""
        return await self.heart.episodes.end_session(agent_id, session_id)

    async def end_idle_episodes(self, agent_id: str) -> list[EpisodeEnd]:
        """End the agent's episodes that saw no turn for ``episode_idle_end_s`` (as
        ``end_session`` does); ``consolidate`` does it too."""
        return await self.heart.episodes.end_idle(agent_id)

    async def extract_pending(
        self, agent_id: str | None = None, *, limit: int = 1000
    ) -> ExtractionReport:
        """Extract facts from up to ``limit`` queued turns now — of ``agent_id``, or of every
        agent — for hosts that drain the queue themselves (``ExtractionConfig.worker`` off)
        or must see the facts at once. Failed turns stay queued for a retry."""
        return await self.heart.extraction.drain(agent_id, limit=limit)

    async def retry_parked_extractions(self, agent_id: str) -> int:
        """Queue the agent's parked turns (those that failed every allowed extraction
        attempt, ``inspect(agent).extraction.parked``) again; returns how many."""
        return await self.heart.extraction.retry_parked(agent_id)

    async def search_memory(
        self,
        agent_id: str,
        query: str,
        *,
        search_type: SearchType | str = SearchType.BOTH,
        limit: int = 5,
    ) -> list[MemoryHit]:
        """The agent's active recall tool: facts, episodes and/or past turns for ``query``."""
        return await self.context.search_memory(
            agent_id, query, search_type=search_type, limit=limit
        )

    async def forget(self, agent_id: str, memory_ids: Iterable[uuid.UUID | str]) -> ErasureReport:
        """Erase these memories of the agent — facts, episodes, turns, decisions, by the ids
        ``search_memory``, ``inspect``, ``export_agent`` and the hooks return — and what
        derives from them: a fact's earlier versions, the facts extracted from a turn and
        the decision it gave the text of; the turn's episode is summarised again without it
        (docs/privacy.md). One transaction; an id that is no memory of the agent raises
        ``NotFoundError`` and nothing is erased."""
        return await self._erasure.forget(agent_id, memory_ids)

    async def forget_session(self, agent_id: str, session_id: str) -> ErasureReport:
        """Erase one conversation: its turns, episodes and decisions, and the facts extracted
        from it or remembered in it."""
        return await self._erasure.forget_session(agent_id, session_id)

    async def erase_agent(self, agent_id: str) -> ErasureReport:
        """Erase everything the agent has (memories, audit trail, queues, its partitions)."""
        return await self._erasure.erase_agent(agent_id)

    def export_agent(
        self, agent_id: str, *, vectors: bool = False
    ) -> AsyncGenerator[dict[str, Any], None]:
        """Everything stored about the agent, from one snapshot: ``{"table", "row"}`` records
        of its facts (every version), episodes, decisions, turns and audit trail, JSON-ready
        (``memory-kernel export``; docs/privacy.md). Consume it to the end or close it."""
        return export_agent(self._db, agent_id, vectors=vectors)

    async def import_agent(self, records: Records, *, agent_id: str | None = None) -> ImportReport:
        """Write one agent's export (``export_agent``'s records, or its JSON Lines parsed)
        into this store, as ``agent_id`` when given: an agent with no memories yet. One
        transaction; each vector made again by this kernel's embedder (docs/privacy.md)."""
        return await import_agent(self._db, self._runtime.embed_each, records, agent_id=agent_id)

    def tool_schemas(self, *, forget: bool = False) -> list[dict[str, Any]]:
        """JSON function schemas (common tool-calling shape) for the agent's memory tools;
        ``forget``: also ``forget_memory``, which the host runs with :meth:`forget`."""
        return self.context.tool_schemas(forget=forget)

    def stats(self) -> GateStats:
        """Counters of the decision gate since open: what each layer rejected and why."""
        return self._cognitive.stats()

    async def inspect(self, agent_id: str, *, limit: int = 10) -> AgentInspection:
        """What a developer needs when an agent "forgot" something: counts by status, the
        newest facts with their supersession chains, rejected decisions with reasons and the
        last context reports (``memory-kernel inspect --agent``)."""
        return await inspect_agent(self._db, agent_id, limit=limit)

    async def consolidate(
        self, agent_id: str, *, dry_run: bool = False, progress: ProgressCallback | None = None
    ) -> ConsolidationReport:
        """Nightly maintenance of one agent: extract facts from its queued turns, end idle
        episodes, embed pending facts, evidence and decay, contradictions, duplicate
        merging, deprecation. Skipped (and reported) when another worker is consolidating
        the same agent."""
        return await self._consolidator.consolidate(agent_id, dry_run=dry_run, progress=progress)

    async def consolidate_all(
        self,
        *,
        concurrency: int | None = None,
        dry_run: bool = False,
        progress: ProgressCallback | None = None,
    ) -> ConsolidationReport:
        """:meth:`consolidate` for every agent, ``concurrency`` at a time; any number of
        workers on any number of machines may run it at once."""
        return await self._consolidator.consolidate_all(
            concurrency=concurrency, dry_run=dry_run, progress=progress
        )

    @property
    def database(self) -> Database:
        """The storage handle (for the library's own parts, benchmarks and the CLI)."""
        return self._db

    @property
    def embedded_server(self) -> EmbeddedServer | None:
        """The embedded server this kernel started, if it started one."""
        return self._db.server

    async def info(self) -> ServerInfo:
        """PostgreSQL and pgvector versions, schema revision and the stored embedder."""
        return await self._db.server_info()

    async def close(self) -> None:
        """Release the connections, and stop the embedded server if this kernel started it."""
        if self._closed:
            return
        self._closed = True
        await self._embedding_worker.stop()
        await self._extraction_worker.stop()
        await self._episode_sweeper.stop()
        await self._index_worker.stop()
        await self.context.close()
        await self._db.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


class _Opening:
    """What ``MemoryKernel.open`` returns: await it, or use it as an async context manager."""

    def __init__(self, cls: type[MemoryKernel], **options: Any) -> None:
        self._cls = cls
        self._options = options
        self._kernel: MemoryKernel | None = None

    def __await__(self) -> Generator[Any, None, MemoryKernel]:
        return _open(self._cls, **self._options).__await__()

    async def __aenter__(self) -> MemoryKernel:
        self._kernel = await _open(self._cls, **self._options)
        return self._kernel

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._kernel is not None:
            await self._kernel.close()


async def _open(
    cls: type[MemoryKernel],
    *,
    dsn: str | None,
    embedder: Embedder | None,
    config: MemoryKernelConfig | None,
    data_dir: Path | None,
    clock: Clock | None,
    judge: Judge | None,
    extractor: FactExtractor | None,
    summariser: EpisodeSummariser | None,
) -> MemoryKernel:
    config = config or MemoryKernelConfig()
    embedder = embedder or default_embedder()
    clock = clock or SystemClock()
    _check_plugins(embedder=embedder, judge=judge, extractor=extractor, summariser=summariser)
    now = CheckedClock(clock).now()  # a broken clock fails here, before any server starts
    database = await Database.open(dsn, config.storage, data_dir=data_dir)
    try:
        await database.bind_embedder(embedder.name, embedder.dim, now)
    except BaseException:
        await database.close()
        raise
    _log.info(
        "memory-kernel open",
        extra={"schema": config.storage.schema_name, "embedded": database.server is not None},
    )
    kernel = cls(
        database=database, embedder=embedder, config=config, clock=clock, judge=judge,
        extractor=extractor, summariser=summariser,
    )  # fmt: skip
    if config.consolidation.embed_worker:
        kernel._embedding_worker.start()
    if config.storage.index_worker:
        kernel._index_worker.start()
    if config.extraction.worker and kernel.heart.extraction.extractor is not None:
        kernel._extraction_worker.start()
    if config.heart.episode_sweep_s > 0:
        kernel._episode_sweeper.start()
    return kernel


_PLUGINS: dict[str, type[Any]] = {
    "embedder": Embedder,
    "extractor": FactExtractor,
    "summariser": EpisodeSummariser,
}
# A judge may answer admission (``admit``), consolidation's facts (``resolve``) or layer 1's
# band (``review_decisions``), or all through a generic batched call (``complete_json``):
# any one makes it a judge.
_JUDGE_CALLS = ("admit", "resolve", "review_decisions", "complete_json")


def _check_plugins(*, judge: object, **plugins: object) -> None:
    """A plug-in that is not what its parameter takes (a string, a class instead of an
    instance, another kind of plug-in) is a ``ConfigError`` at open, not a failure at the
    first turn, night or episode end that calls it."""
    for name, plugin in plugins.items():
        wanted = _PLUGINS[name]
        if plugin is not None and (isinstance(plugin, type) or not isinstance(plugin, wanted)):
            raise ConfigError(f"{name} must be a {wanted.__name__} instance, got {plugin!r}")
    if judge is not None and (
        isinstance(judge, type) or not any(callable(getattr(judge, c, None)) for c in _JUDGE_CALLS)
    ):
        raise ConfigError(
            f"judge must be a Judge instance (with one of {', '.join(_JUDGE_CALLS)}), got {judge!r}"
        )
