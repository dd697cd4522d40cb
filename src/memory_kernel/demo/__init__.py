"""``memory-kernel demo``: a scripted agent session (fake LLM, no network) that runs into
every problem of the design notes, played against memory-kernel and a naive memory side by
side. ``await run_demo()`` returns a :class:`DemoResult` with every number it measured;
``render_demo`` prints it."""

from memory_kernel.demo.models import DemoResult, SeedProblem
from memory_kernel.demo.render import render_demo
from memory_kernel.demo.runner import DEMO_SCHEMA, run_demo

__all__ = ["DEMO_SCHEMA", "DemoResult", "SeedProblem", "render_demo", "run_demo"]
