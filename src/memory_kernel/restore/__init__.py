"""Import: an agent's export written into a store (``kernel.import_agent``, ``memory-kernel
import``)."""

from memory_kernel.restore.service import import_agent

__all__ = ["import_agent"]
