"""The driver path of the hot statements (``storage.driver``): the same transaction, values
and errors as SQLAlchemy's, and ``Database.lean_transaction``, which never leaves a pooled
connection inside a transaction — against real Postgres."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import Integer, bindparam, cast, literal, select, text
from sqlalchemy.dialects.postgresql import JSONB

from memory_kernel import FactInput, MemoryKernel, StorageError, ValidationError
from memory_kernel.storage import driver


def test_named_placeholders_become_positional_and_casts_stay() -> None:
    sql, names = driver.positional(
        "SELECT CAST(:a AS int)::text, :b, :a, '{}'::jsonb, x::regconfig WHERE y = :b_2"
    )
    assert sql == "SELECT CAST($1 AS int)::text, $2, $1, '{}'::jsonb, x::regconfig WHERE y = $3"
    assert names == ("a", "b", "b_2")


async def test_lean_transaction_commits_and_runs_opening_statements(kernel: MemoryKernel) -> None:
    async with kernel.database.lean_transaction(
        ["SET LOCAL application_name = 'mk-uow-test'"]
    ) as conn:
        rows = await driver.fetch(conn, "SELECT current_setting('application_name') AS v", {})
        assert rows[0].v == "mk-uow-test"
        # SQLAlchemy statements join the same transaction instead of opening their own.
        await conn.execute(text("CREATE TABLE uow_probe (x int)"))
        await driver.fetch(conn, "INSERT INTO uow_probe VALUES (:x)", {"x": 7})
    async with kernel.database.connection() as conn:
        assert await conn.scalar(text("SELECT sum(x) FROM uow_probe")) == 7
        assert await conn.scalar(text("SHOW application_name")) != "mk-uow-test"


async def test_lean_transaction_rolls_back_on_error_and_maps_it(kernel: MemoryKernel) -> None:
    async with kernel.database.transaction() as conn:
        await conn.execute(text("CREATE TABLE uow_probe (x int CHECK (x > 0))"))

    async def insert(*values: int, fail: bool = False) -> None:
        async with kernel.database.lean_transaction() as conn:
            for x in values:
                await driver.fetch(conn, "INSERT INTO uow_probe VALUES (:x)", {"x": x})
            if fail:
                raise RuntimeError("caller failed")

    async def bad_column() -> None:
        async with kernel.database.lean_transaction() as conn:
            await driver.fetch(conn, "SELECT no_such_column FROM uow_probe", {})

    with pytest.raises(ValidationError):
        await insert(1, -1)  # the driver's check violation, mapped like SQLAlchemy's
    with pytest.raises(RuntimeError):
        await insert(2, fail=True)
    with pytest.raises(StorageError):
        await bad_column()
    async with kernel.database.connection() as conn:
        assert await conn.scalar(text("SELECT count(*) FROM uow_probe")) == 0


async def _cancel_a_slow_lean_transaction(kernel: MemoryKernel) -> None:
    """Cancel a lean transaction while its statement runs on the server."""

    async def slow() -> None:
        async with kernel.database.lean_transaction() as conn:
            await driver.fetch(conn, "SELECT pg_sleep(5)", {})

    task = asyncio.create_task(slow())
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_cancelled_lean_transaction_leaves_no_connection_in_a_transaction(
    kernel: MemoryKernel,
) -> None:
    for _ in range(3):
        await _cancel_a_slow_lean_transaction(kernel)
    # Every pooled connection handed out afterwards is idle, outside any transaction.
    for _ in range(kernel.database.config.pool_size + 2):
        async with kernel.database.connection() as conn:
            raw = await driver.driver(conn)
            assert not raw.is_in_transaction()
            assert await raw.fetchval("SELECT 1") == 1


async def test_a_rehearsal_keeps_nothing_even_from_a_lean_transaction(
    kernel: MemoryKernel,
) -> None:
    """Consolidation's dry run pins every unit of work to one rolled-back transaction; a
    learn inside it must not COMMIT that transaction from under it."""
    from memory_kernel.consolidation.rehearsal import rehearsal
    from memory_kernel.models.facts import FactInput

    rt = kernel.heart.facts._rt  # the store's runtime, as consolidation gets it
    async with rehearsal(rt) as (_rt, facts):
        out = await facts.learn(FactInput(agent_id="dry", content="The build runs on Fridays"))
        assert out.fact.status == "active"
    async with kernel.database.connection() as conn:
        assert await conn.scalar(text("SELECT count(*) FROM facts WHERE agent_id = 'dry'")) == 0


async def test_a_driver_statement_first_in_a_callers_transaction_belongs_to_it(
    kernel: MemoryKernel,
) -> None:
    # SQLAlchemy begins lazily, with its own first statement: a driver statement that comes
    # first must still run inside the caller's transaction and go with its rollback.
    async with kernel.database.transaction() as conn:
        await conn.execute(text("CREATE TABLE uow_probe (x int)"))

    async def insert_then_fail() -> None:
        async with kernel.database.transaction() as conn:
            await driver.fetch(conn, "INSERT INTO uow_probe VALUES (:x)", {"x": 1})
            raise RuntimeError("caller failed")

    with pytest.raises(RuntimeError):
        await insert_then_fail()
    fact = FactInput(agent_id="a1", content="The deploy window is Friday at 16:00.")

    async def learn_then_fail() -> None:
        async with kernel.database.transaction() as conn:
            await kernel.heart.facts.learn_in(conn, fact)
            raise RuntimeError("caller failed")

    with pytest.raises(RuntimeError):
        await learn_then_fail()
    async with kernel.database.connection() as conn:
        assert await conn.scalar(text("SELECT count(*) FROM uow_probe")) == 0
        assert await conn.scalar(text("SELECT count(*) FROM facts")) == 0
        assert await conn.scalar(text("SELECT count(*) FROM memory_events")) == 0


async def test_core_statements_bind_like_sqlalchemy(kernel: MemoryKernel) -> None:
    # Literals of the statement, JSONB (a dict serialised by the type's bind processor) and
    # a required value that is missing.
    statement = select(
        literal(41, Integer) + bindparam("n", type_=Integer),
        cast(bindparam("doc", type_=JSONB), JSONB)["k"].astext,
    )
    async with kernel.database.connection() as conn:
        (row,) = await driver.core(conn, statement, {"n": 1, "doc": {"k": "v"}})
        assert list(row._mapping.values()) == [42, "v"]
        with pytest.raises(KeyError, match="'n'"):
            await driver.core(conn, statement, {"doc": {}})


async def test_a_lean_transaction_hands_its_connection_back_out_of_autocommit(
    kernel: MemoryKernel,
) -> None:
    """The lean unit of work switches SQLAlchemy's adapter to autocommit for its block only:
    a caller's transaction on the same pooled connection afterwards — after a commit, a
    failure and a cancellation — still rolls back everything it wrote."""
    async with kernel.database.transaction() as conn:
        await conn.execute(text("CREATE TABLE uow_probe (x int)"))

    async def lean(fail: bool) -> None:
        async with kernel.database.lean_transaction() as conn:
            await driver.fetch(conn, "SELECT 1 AS one", {})
            if fail:
                raise RuntimeError("caller failed")

    async def write_then_fail() -> None:
        async with kernel.database.transaction() as conn:
            await conn.execute(text("INSERT INTO uow_probe VALUES (1)"))
            raise RuntimeError("caller failed")

    await lean(fail=False)
    with pytest.raises(RuntimeError):
        await lean(fail=True)
    await _cancel_a_slow_lean_transaction(kernel)
    for _ in range(kernel.database.config.pool_size + 2):
        with pytest.raises(RuntimeError):
            await write_then_fail()
    async with kernel.database.connection() as conn:
        assert await conn.scalar(text("SELECT count(*) FROM uow_probe")) == 0
