"""Export: everything stored about an agent, as JSON-ready records."""

from __future__ import annotations

from memory_kernel.export.service import export_agent

__all__ = ["export_agent"]
