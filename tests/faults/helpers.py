"""Fault injection helpers: kill the embedded server mid-call, restart it, compare states.

A fault test owns a PRIVATE embedded server (never the session's shared one): it kills the
postmaster with SIGKILL from inside the kernel's own ``before_cursor_execute`` event, so
"in the middle of a call" means "just before its Nth SQL statement is sent".
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psutil
from sqlalchemy import event, func, select

from memory_kernel import MemoryKernel
from memory_kernel.storage.embedded import EmbeddedServer
from memory_kernel.storage.tables import decisions, episodes, facts, memory_events


def server_of(kernel: MemoryKernel) -> EmbeddedServer:
    server = kernel.embedded_server
    assert server is not None, "fault tests need a kernel that owns an embedded server"
    return server


def kill_server(server: EmbeddedServer, *, backends: bool = False) -> None:
    """SIGKILL the postmaster (and, with ``backends``, every backend: a power cut of the
    process tree) and wait until it is dead."""
    pid = server.pid
    assert pid is not None
    postmaster = psutil.Process(pid)
    victims = [postmaster, *(postmaster.children() if backends else [])]
    for process in victims:
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_running(p) for p in victims):
        time.sleep(0.005)


def _running(process: psutil.Process) -> bool:
    try:
        return bool(process.status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


@dataclass
class Killer:
    """Kills the server just before the ``at``-th statement or COMMIT (1-based) after arming."""

    server: EmbeddedServer
    at: int | None = None
    backends: bool = False
    seen: int = 0
    fired: bool = False
    statements: list[str] = field(default_factory=list)

    def arm(self, at: int | None) -> None:
        self.at, self.seen, self.fired, self.statements = at, 0, False, []

    def __call__(self, *args: Any) -> None:
        self._step(str(args[2]).split(None, 1)[0].upper())

    def on_commit(self, *_args: Any) -> None:
        # COMMIT is not a cursor statement; killing just before it is the in-doubt case.
        self._step("COMMIT")

    def _step(self, statement: str) -> None:
        self.seen += 1
        self.statements.append(statement)
        if self.at is not None and self.seen == self.at and not self.fired:
            self.fired = True
            kill_server(self.server, backends=self.backends)


@contextmanager
def killer(kernel: MemoryKernel, *, backends: bool = False) -> Iterator[Killer]:
    """A :class:`Killer` listening on the kernel's engine for the duration of the block."""
    armed = Killer(server_of(kernel), backends=backends)
    engine = kernel.database.engine.sync_engine
    event.listen(engine, "before_cursor_execute", armed)
    event.listen(engine, "commit", armed.on_commit)
    try:
        yield armed
    finally:
        event.remove(engine, "before_cursor_execute", armed)
        event.remove(engine, "commit", armed.on_commit)


async def restart(kernel: MemoryKernel) -> None:
    """Bring the server back (the kernel itself is not reopened)."""
    await server_of(kernel).ensure_running()


async def signature(kernel: MemoryKernel, agent_id: str) -> tuple[tuple[str, int], ...]:
    """What an agent's memory looks like, independent of ids and timestamps: row counts by
    table and status, audit events by kind, and episode turn counters."""
    counts: Counter[str] = Counter()
    async with kernel.database.connection() as conn:
        for label, stmt in _signature_queries(agent_id):
            for key, n in (await conn.execute(stmt)).all():
                counts[f"{label}:{key}"] += int(n)
    return tuple(sorted(counts.items()))


_TURNS = func.coalesce(episodes.c.metadata["turns"].astext, "0")
_EPISODE_STATE = func.concat(episodes.c.status, "/", episodes.c.admission)
_DECISION_STATE = func.concat(decisions.c.active, "/", decisions.c.finalized)


def _signature_queries(agent_id: str) -> list[tuple[str, Any]]:
    return [
        (
            "facts",
            select(facts.c.status, func.count())
            .where(facts.c.agent_id == agent_id)
            .group_by(facts.c.status),
        ),
        (
            "episodes",
            select(_EPISODE_STATE, func.count())
            .where(episodes.c.agent_id == agent_id)
            .group_by(_EPISODE_STATE),
        ),
        (
            "turns",
            select(_TURNS, func.count()).where(episodes.c.agent_id == agent_id).group_by(_TURNS),
        ),
        (
            "decisions",
            select(_DECISION_STATE, func.count())
            .where(decisions.c.agent_id == agent_id)
            .group_by(_DECISION_STATE),
        ),
        (
            "events",
            select(memory_events.c.event, func.count())
            .where(memory_events.c.agent_id == agent_id)
            .group_by(memory_events.c.event),
        ),
    ]
