"""A task group whose failure is one documented error, not an ``ExceptionGroup``.

``asyncio.TaskGroup`` raises ``ExceptionGroup`` when a child fails, and ``except
MemoryKernelError`` does not catch a group: a host that followed docs/integration.md
("Errors to catch") saw memory take its agent down when the server died during
``pre_turn``. :func:`task_group` raises one exception instead: the group's most meaningful
library error (:func:`primary_error`), the others named in its notes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from memory_kernel.errors import (
    ConfigError,
    ConnectionFailedError,
    MemoryKernelError,
    StorageError,
)

__all__ = ["primary_error", "task_group"]


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    """The group's exceptions, nested groups flattened, in order, each once."""
    found: list[BaseException] = []
    stack: list[BaseException] = [group]
    while stack:
        exc = stack.pop()
        if isinstance(exc, BaseExceptionGroup):
            stack.extend(reversed(exc.exceptions))
        elif all(exc is not seen for seen in found):
            found.append(exc)
    return found


def _rank(exc: BaseException) -> int:
    """Lower is more meaningful. An unreachable server explains every other failure of the
    moment (a bare ``StorageError`` then is often a connection left half-way: a symptom); a
    broken clock fails every part at once; then what the caller can act on (bad input, a
    missing id, a conflict to retry); a generic database error last."""
    if isinstance(exc, ConnectionFailedError):
        return 0
    if isinstance(exc, ConfigError):
        return 1
    if isinstance(exc, MemoryKernelError) and type(exc) is not StorageError:
        return 2
    if isinstance(exc, MemoryKernelError):
        return 3
    return 4


def primary_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception to raise for ``group``.

    The most meaningful ``MemoryKernelError`` (first of its rank, see :func:`_rank`), with a
    note naming each other exception. A group of nothing but other exceptions (a bug, an
    exception of a host's code) becomes a ``MemoryKernelError`` caused by the first, since
    the library raises only its own errors (``memory_kernel.errors``). ``KeyboardInterrupt``,
    ``SystemExit`` and cancellation are never wrapped: they are returned as they are.
    """
    leaves = _leaves(group)
    for exc in leaves:
        if not isinstance(exc, Exception):
            return exc
    chosen = min(leaves, key=_rank)  # min keeps the first of equal rank
    if not isinstance(chosen, MemoryKernelError):
        wrapped = MemoryKernelError(f"unexpected {type(chosen).__name__}: {chosen}")
        wrapped.__cause__ = chosen
        chosen = wrapped
    for other in leaves:
        if other is not chosen and other is not chosen.__cause__:
            chosen.add_note(f"also raised concurrently: {type(other).__name__}: {other}")
    return chosen


@asynccontextmanager
async def task_group() -> AsyncIterator[asyncio.TaskGroup]:
    """``asyncio.TaskGroup`` (the first failure cancels the other tasks, all are awaited),
    raising :func:`primary_error` instead of the group."""
    failure: BaseException | None = None
    try:
        async with asyncio.TaskGroup() as group:
            yield group
    except BaseExceptionGroup as raised:
        failure = primary_error(raised)
    if failure is not None:
        # Raised outside the handler: the chosen error keeps its own cause and context
        # (the driver error it was mapped from) instead of pointing at the group.
        raise failure
