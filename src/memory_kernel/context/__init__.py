"""Context: which nodes a turn needs (relevance), fetching only those (nodes), recall
(hybrid, deduplicated, diversified), budgeted assembly, passive prefetch and the active
``search_memory`` tool. ``ContextEngine`` ties them together (``kernel.context``)."""

from memory_kernel.context.engine import ContextEngine, derive_signals, request_from_turn
from memory_kernel.context.nodes import FunctionNode
from memory_kernel.context.relevance import InclusionResult, RelevancePipeline
from memory_kernel.context.relevance_config import (
    DependencyCycleError,
    RelevanceConfig,
    RelevanceConfigError,
    load_relevance_config,
)
from memory_kernel.context.tokens import (
    EncodingTokenCounter,
    EstimatingTokenCounter,
    NodeTokenEstimates,
    tiktoken_counter,
)

__all__ = [
    "ContextEngine",
    "DependencyCycleError",
    "EncodingTokenCounter",
    "EstimatingTokenCounter",
    "FunctionNode",
    "InclusionResult",
    "NodeTokenEstimates",
    "RelevanceConfig",
    "RelevanceConfigError",
    "RelevancePipeline",
    "derive_signals",
    "load_relevance_config",
    "request_from_turn",
    "tiktoken_counter",
]
