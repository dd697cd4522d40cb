"""Progress bars for long evaluation steps, on one shared rich display.

rich shows one live display at a time, so nested steps (a threshold sweep running a suite
that replays turns) add tasks to the display that is already up instead of opening another.
Bars are transient: the printed report is what stays on the terminal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn

__all__ = ["progress"]

_ACTIVE: ContextVar[Progress | None] = ContextVar("memory_kernel_eval_progress", default=None)


def _bar() -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        transient=True,
    )


@contextmanager
def progress(label: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """A bar for ``total`` steps (``None``: a spinner); yields ``advance(steps)``."""
    active = _ACTIVE.get()
    if active is not None:
        task = active.add_task(label, total=total)
        try:
            yield lambda steps: active.advance(task, steps)
        finally:
            active.remove_task(task)
        return
    with _bar() as bar:
        token = _ACTIVE.set(bar)
        task = bar.add_task(label, total=total)
        try:
            yield lambda steps: bar.advance(task, steps)
        finally:
            _ACTIVE.reset(token)
