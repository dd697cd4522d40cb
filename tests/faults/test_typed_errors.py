"""Only documented errors leave a hook, also when its concurrent parts fail together.

``pre_turn`` writes (episode, deliberation) and builds the context at the same time, in an
``asyncio.TaskGroup``. A group raises ``ExceptionGroup``, which ``except MemoryKernelError``
does not catch: with the server down both parts failed and the host saw
``ExceptionGroup([ConnectionFailedError, ...])`` (issue 23). The hooks now raise the group's
most meaningful library error (``memory_kernel.taskgroup``).
"""

from __future__ import annotations

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
