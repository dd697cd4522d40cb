"""Pure: how likely a newer statement restates an older one, for a judge to decide.

``learn`` merges a restatement only when the duplicate scorer is 3:1 sure (``merge``). With
the default lexical embedder many paraphrases stay below ("The user is fond of Thai food." /
"The user likes Thai cuisine."): the words that carry the meaning differ. Held out on the
development dedup pairs, 9 of 24 missed paraphrases were restatement candidates the scorer
rated between 0.2 and 0.75, beside 6 of 50 pairs that must stay apart (docs/tuning.md):
a band only a model that reads meaning can decide. Consolidation sends that band to the
host's judge when it has one (``ConsolidationConfig.judge_restatement_probability``).

The rules still come first: a flipped meaning, another value, holder or identifier, a
list item, a question or a change announced is never a restatement (0).
"""

from __future__ import annotations

from memory_kernel.heart.facts.frames import compare, may_be_parallel
from memory_kernel.heart.facts.normalise import TextFeatures
from memory_kernel.heart.facts.pairs import frame_features, text_features, topic_anchor
from memory_kernel.heart.facts.polarity import flip_reason
from memory_kernel.heart.facts.relation import RelationThresholds, may_be_duplicate
from memory_kernel.heart.facts.slots import statement

__all__ = ["restatement_probability"]


def restatement_probability(
    old: TextFeatures, new: TextFeatures, similarity: float, t: RelationThresholds
) -> float:
    """The duplicate scorer's probability that ``new`` restates ``old``; 0 where the rules
    rule a restatement out or the cosine is below ``fact_dedup_similarity``."""
    if similarity < t.dedup_similarity or flip_reason(old, new) is not None:
        return 0.0
    s_old, s_new = statement(old.text), statement(new.text)
    diff = compare(s_old, s_new) if may_be_parallel(s_old, s_new) else None
    if not may_be_duplicate(s_old, s_new, diff):
        return 0.0
    pair = text_features(s_old, s_new, similarity, anchor=topic_anchor(s_old, s_new))
    pair |= frame_features(diff or compare(s_old, s_new))
    scorer = t.duplicate_scorer
    return scorer.probability([pair[name] for name in scorer.features])
