"""``memory_kernel.taskgroup``: a failed task group raises one documented error."""

from __future__ import annotations

import asyncio

import pytest

from memory_kernel import (
    ConfigError,
    ConnectionFailedError,
    MemoryKernelError,
    StorageError,
    ValidationError,
)
from memory_kernel.taskgroup import primary_error, task_group


def test_a_connection_failure_explains_the_rest() -> None:
    half_way = StorageError("cannot switch to state 15")
    down = ConnectionFailedError("server down")
    chosen = primary_error(ExceptionGroup("g", [half_way, ValidationError("x"), down]))
    assert chosen is down
    assert any("StorageError" in n for n in chosen.__notes__)
    assert any("ValidationError" in n for n in chosen.__notes__)


def test_the_first_of_the_most_meaningful_rank_wins_and_nesting_is_flattened() -> None:
    first, second = ConfigError("clock"), ConfigError("clock again")
    nested = ExceptionGroup("outer", [StorageError("s"), ExceptionGroup("inner", [first])])
    assert primary_error(ExceptionGroup("g", [nested, second])) is first
    bare = StorageError("generic")
    assert primary_error(ExceptionGroup("g", [bare, ValidationError("v")])).args == ("v",)


def test_the_same_exception_twice_is_one() -> None:
    error = ConfigError("clock")
    chosen = primary_error(ExceptionGroup("g", [error, error]))
    assert chosen is error and not getattr(chosen, "__notes__", [])


def test_foreign_exceptions_become_a_memory_kernel_error_caused_by_the_first() -> None:
    bug, other = AttributeError("no such attribute"), KeyError("k")
    chosen = primary_error(ExceptionGroup("g", [bug, other]))
    assert type(chosen) is MemoryKernelError and chosen.__cause__ is bug
    assert chosen.__notes__ == ["also raised concurrently: KeyError: 'k'"]


def test_interrupts_are_never_wrapped() -> None:
    stop = KeyboardInterrupt()
    assert primary_error(BaseExceptionGroup("g", [ValueError(), stop])) is stop


async def test_task_group_raises_the_primary_error_and_cancels_the_rest() -> None:
    cancelled = asyncio.Event()

    async def slow() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def fail() -> None:
        raise ConnectionFailedError("down")

    async def run() -> None:
        async with task_group() as group:
            group.create_task(slow())
            group.create_task(fail())

    with pytest.raises(ConnectionFailedError, match="down"):
        await run()
    assert cancelled.is_set()


async def test_task_group_returns_normally_when_every_task_does() -> None:
    async with task_group() as group:
        task = group.create_task(asyncio.sleep(0, result=7))
    assert task.result() == 7
