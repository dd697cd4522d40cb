"""Small, dependency-free metrics shared by the fact suites."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["Metrics", "binary_metrics", "roc_auc"]

# A suite's headline figures by name: rates, counts, scores.
Metrics = dict[str, float | int]


def binary_metrics(predicted: Sequence[bool], gold: Sequence[bool]) -> Metrics:
    """Precision, recall, F1 and accuracy of ``predicted`` against ``gold`` (positive = True)."""
    tp = sum(p and g for p, g in zip(predicted, gold, strict=True))
    fp = sum(p and not g for p, g in zip(predicted, gold, strict=True))
    fn = sum(g and not p for p, g in zip(predicted, gold, strict=True))
    tn = len(gold) - tp - fp - fn
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": round(precision, 4),
        "recall": round(recall, 4),
        "f1": round(f1, 4),
        "accuracy": round((tp + tn) / len(gold), 4) if gold else 0.0,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
    }


def roc_auc(scores: Sequence[float], gold: Sequence[bool]) -> float:
    """Area under the ROC curve: the chance a random positive outscores a random negative
    (ties count half)."""
    pos = [s for s, g in zip(scores, gold, strict=True) if g]
    neg = [s for s, g in zip(scores, gold, strict=True) if not g]
    if not pos or not neg:
        return 0.0
    ranked = sorted((s, g) for s, g in zip(scores, gold, strict=True))
    # Mann-Whitney U with average ranks for ties.
    rank_sum, i = 0.0, 0
    while i < len(ranked):
        j = i
        while j < len(ranked) and ranked[j][0] == ranked[i][0]:
            j += 1
        average = (i + j + 1) / 2  # ranks are 1-based
        rank_sum += average * sum(1 for _, g in ranked[i:j] if g)
        i = j
    u = rank_sum - len(pos) * (len(pos) + 1) / 2
    return u / (len(pos) * len(neg))
