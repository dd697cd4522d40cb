"""The fuzz oracle: a call either succeeds, or raises a typed ``memory_kernel.errors``
exception having written nothing. A raw driver/SQL error, or any other exception type, or a
partial write fails the test."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from sqlalchemy import TextClause, text

from memory_kernel import MemoryKernel, MemoryKernelError

#: Generated cases per entry point in this run (printed at the end of the session).
CASES: Counter[str] = Counter()

_TABLES = ("facts", "episodes", "decisions", "memory_events", "kernel_meta", "turn_results")


def rows_digest(tables: Sequence[str], where: str = "") -> TextClause:
    """Row count and an order-independent digest of every row of ``tables`` (``where``
    filtering each): any insert, update or delete shows."""
    return text(
        " UNION ALL ".join(
            f"SELECT '{t}' AS t, count(*) AS n,"
            f" coalesce(sum(hashtextextended(r::text, 0)), 0) AS h FROM {t} r {where}"
            for t in tables
        )
    )


_DIGEST = rows_digest(_TABLES)


async def digest(kernel: MemoryKernel) -> list[tuple[Any, ...]]:
    async with kernel.database.connection() as conn:
        return [tuple(r) for r in (await conn.execute(_DIGEST)).all()]


async def attempt(
    kernel: MemoryKernel, name: str, call: Callable[[], Awaitable[object]]
) -> object | None:
    """Run one generated case through the oracle; returns the result (None if it raised)."""
    CASES[name] += 1
    before = await digest(kernel)
    try:
        return await call()
    except MemoryKernelError:
        after = await digest(kernel)
        assert after == before, f"{name}: raised a typed error but changed rows"
        return None
    except Exception as exc:  # the property under test: nothing else may escape
        raise AssertionError(f"{name}: untyped {type(exc).__module__}.{exc!r}") from exc


def construct(name: str, build: Callable[[], object]) -> object | None:
    """Build an input model: it may only refuse with a typed error."""
    CASES[name] += 1
    try:
        return build()
    except MemoryKernelError:
        return None
    except Exception as exc:
        raise AssertionError(f"{name}: untyped {type(exc).__module__}.{exc!r}") from exc
