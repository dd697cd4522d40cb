"""Counting the SQL statements a call sends — its own, not a background worker's.

The kernel runs background tasks (the embedding and index workers) on the same engine, so
an engine-wide listener would count their polls too, whenever they happen to run. A
context variable marks the code inside the block (and the tasks it starts, which copy the
context): only statements sent under the mark are counted.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from sqlalchemy import event

from memory_kernel import MemoryKernel

_COUNTING: ContextVar[list[str] | None] = ContextVar("mk_test_counting", default=None)


@contextmanager
def count_statements(kernel: MemoryKernel) -> Iterator[list[str]]:
    """The SQL statements sent by the code running inside the block (BEGIN/COMMIT are not
    statements)."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if _COUNTING.get() is seen:
            seen.append(statement)

    target = kernel.database.engine.sync_engine
    token = _COUNTING.set(seen)
    event.listen(target, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(target, "before_cursor_execute", record)
        _COUNTING.reset(token)
