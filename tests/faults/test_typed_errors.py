"""Only documented errors leave a hook, also when its concurrent parts fail together.

``pre_turn`` writes (episode, deliberation) and builds the context at the same time, in an
``asyncio.TaskGroup``. A group raises ``ExceptionGroup``, which ``except MemoryKernelError``
does not catch: with the server down both parts failed and the host saw
``ExceptionGroup([ConnectionFailedError, ...])`` (issue 23). The hooks now raise the group's
most meaningful library error (``memory_kernel.taskgroup``).
"""

from __future__ import annotations

import logging

import pytest

from memory_kernel import ConnectionFailedError, MemoryKernel, MemoryKernelError
from memory_kernel.models.turns import TurnInput, TurnOutcome
from tests.faults.helpers import kill_server, restart, server_of

pytestmark = pytest.mark.faults


def _turn(agent: str) -> TurnInput:
    return TurnInput(
        agent_id=agent, session_id="s1", message="Should we store embeddings in Postgres?",
        frame="decision",
    )  # fmt: skip


@pytest.mark.parametrize("backends", [False, True], ids=["postmaster", "all-processes"])
async def test_pre_turn_with_the_server_down_raises_a_memory_kernel_error(
    private_kernel: MemoryKernel, backends: bool
) -> None:
    kernel = private_kernel
    # Warm the pool, so the failures below meet pooled connections of the dead server too.
    ctx = await kernel.pre_turn(_turn("warm"))
    await kernel.post_turn(ctx.turn, TurnOutcome(response_text="Yes, with pgvector."))
    kill_server(server_of(kernel), backends=backends)
    try:
        for call in range(3):
            # An ExceptionGroup would escape pytest.raises(MemoryKernelError).
            with pytest.raises(MemoryKernelError) as raised:
                await kernel.pre_turn(_turn(f"down-{call}"))
            assert isinstance(raised.value, ConnectionFailedError), repr(raised.value)
    finally:
        await restart(kernel)
    # The same kernel serves a whole turn again.
    ctx = await kernel.pre_turn(_turn("back"))
    await kernel.post_turn(ctx.turn, TurnOutcome(response_text="Yes, with pgvector."))


async def test_a_connection_the_crash_left_half_way_is_a_connection_failure(
    private_kernel: MemoryKernel, caplog: pytest.LogCaptureFixture
) -> None:
    """Right after a crash a pooled connection may still look open while its protocol
    waits for the end of a statement the server never finished; its next statement raises
    asyncpg's "cannot switch to state 15; another operation (2) is in progress". Before,
    that became a bare ``StorageError`` (seen in the prefetch that follows every turn);
    it is a ``ConnectionFailedError``, which ``Database.read`` retries."""
    kernel = private_kernel
    failures: list[BaseException] = []
    for n in range(3):
        ctx = await kernel.pre_turn(_turn(f"half-{n}"))
        caplog.clear()
        await kernel.post_turn(ctx.turn, TurnOutcome(response_text="Yes, we'll use pgvector."))
        kill_server(server_of(kernel))  # while the prefetch of the next turn starts
        with caplog.at_level(logging.WARNING, logger="memory_kernel.context.prefetch"):
            await kernel.context.prefetch.wait()
        failures += [
            r.args[-1]
            for r in caplog.records
            if isinstance(r.args, tuple) and isinstance(r.args[-1], BaseException)
        ]
        await restart(kernel)
    assert failures, "no prefetch met the crash"
    assert all(isinstance(f, ConnectionFailedError) for f in failures), failures
