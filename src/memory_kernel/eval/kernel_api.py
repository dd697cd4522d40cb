"""Everything the quality suites (gate, admission, dedup, ku) and the sweeps take from the
library, in one place.

The suites measure the classifiers (fact admission, dedup and supersession, the decision
gate) only through these stable entry points: the kernel's public hooks and its
``heart.facts`` service, their input/output models, and the embedding helper. None of them
imports a classifier module (``heart/facts/*``, ``brain/*``, ``heart/episodes/*``) directly,
so when those are restructured this is the one file to repoint. A classifier's pure function
that a suite wants to call directly (e.g. a future learned scorer's features) belongs here
too: the decision classifier's ``fit`` (``brain.scorer``) is the gate's.
"""

from __future__ import annotations

from memory_kernel.brain.scorer import DecisionScorer
from memory_kernel.brain.scorer import fit as fit_decision_classifier
from memory_kernel.embeddings import embed_checked
from memory_kernel.heart.facts.admission_features import (
    ADMISSION_FEATURES,
    admission_features,
    is_question,
    is_request,
)
from memory_kernel.heart.facts.normalise import features
from memory_kernel.heart.facts.pairs import PAIR_FEATURES, pair_features, topic_anchor
from memory_kernel.heart.facts.polarity import flip_reason
from memory_kernel.heart.facts.query_slot import READ_FEATURES, query_view
from memory_kernel.heart.facts.read_resolution import (
    QueryContext,
    query_tied,
    read_features,
    read_ruled,
)
from memory_kernel.heart.facts.relation import (
    RelationThresholds,
    may_be_duplicate,
    ruled_update,
    scored_stage,
    veto,
)
from memory_kernel.heart.facts.scorer import LinearScorer, load_scorer
from memory_kernel.heart.facts.scorer import fit as fit_scorer
from memory_kernel.heart.facts.slots import statement
from memory_kernel.kernel import MemoryKernel
from memory_kernel.models.facts import Fact, FactInput, LearnAction, LearnOutcome
from memory_kernel.models.turns import ToolResult, TurnInput, TurnOutcome, TurnResult
from memory_kernel.testing import FrozenClock

__all__ = [
    "ADMISSION_FEATURES",
    "PAIR_FEATURES",
    "READ_FEATURES",
    "DecisionScorer",
    "Fact",
    "FactInput",
    "FrozenClock",
    "LearnAction",
    "LearnOutcome",
    "LinearScorer",
    "MemoryKernel",
    "QueryContext",
    "RelationThresholds",
    "ToolResult",
    "TurnInput",
    "TurnOutcome",
    "TurnResult",
    "admission_features",
    "embed_checked",
    "features",
    "fit_decision_classifier",
    "fit_scorer",
    "flip_reason",
    "is_question",
    "is_request",
    "load_scorer",
    "may_be_duplicate",
    "pair_features",
    "query_tied",
    "query_view",
    "read_features",
    "read_ruled",
    "ruled_update",
    "scored_stage",
    "statement",
    "topic_anchor",
    "veto",
]
