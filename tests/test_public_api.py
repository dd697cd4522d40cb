"""The public surface: ``__all__`` is complete, sorted, and every name resolves."""

from __future__ import annotations

import inspect

import memory_kernel


def test_all_is_sorted_and_unique() -> None:
    names = list(memory_kernel.__all__)
    assert names == sorted(names)
    assert len(names) == len(set(names))


def test_every_exported_name_exists() -> None:
    for name in memory_kernel.__all__:
        assert hasattr(memory_kernel, name), name


def test_every_public_attribute_is_exported() -> None:
    """Anything public at the package top level (classes, functions) must be in ``__all__``."""
    public = {
        name
        for name, value in vars(memory_kernel).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert public == set(memory_kernel.__all__)


def test_error_tree_roots_at_memory_kernel_error() -> None:
    for name in memory_kernel.errors.__all__:
        error = getattr(memory_kernel.errors, name)
        assert issubclass(error, memory_kernel.MemoryKernelError), name
        assert name in memory_kernel.__all__
