"""The decision classifier: logistic regression over the speech-act features (pure).

``p(decision | response) = sigmoid(bias + Σ weight_i · feature_i)`` over
:data:`memory_kernel.brain.speech.FEATURES`. The weights are plain JSON
(``decision_scorer.json`` in this package, or ``BrainConfig.decision_classifier``), trained by
``scripts/train_decision_gate.py`` on the development files only with :func:`fit`: L2-regularised
maximum likelihood solved by Newton's method, so the same rows give the same weights.

Layer 1 drops a response whose probability is below ``BrainConfig.decision_threshold``, and
names the family (status, completion, recall…) whose features pushed it down the most.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from memory_kernel.brain.speech import DECISION, FEATURES, STYLE, feature_names, features
from memory_kernel.errors import ConfigError, ValidationError

__all__ = [
    "NO_DECISION_CUE",
    "DecisionScorer",
    "Scored",
    "default_scorer",
    "fit",
    "load_scorer",
]

#: The family reported when nothing pushed a response down: it just states no decision.
NO_DECISION_CUE = "no_decision"
_PACKAGED = "decision_scorer.json"
_FAMILIES = {f.name: f.family for f in FEATURES}


@dataclass(frozen=True, slots=True)
class Scored:
    """A response's probability of being a decision, and the family that pushed it down
    the most (``NO_DECISION_CUE`` when no feature of another family fired)."""

    probability: float
    family: str


@dataclass(frozen=True, slots=True)
class DecisionScorer:
    """Weights of the classifier, one per feature name, and what they were trained on."""

    weights: dict[str, float]
    bias: float
    trained_on: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        missing = set(feature_names()) - set(self.weights)
        unknown = set(self.weights) - set(feature_names())
        if missing or unknown:
            raise ConfigError(
                f"decision classifier weights do not match the features: missing "
                f"{sorted(missing)}, unknown {sorted(unknown)}"
            )

    def score(self, response: str) -> Scored:
        values = features(response)
        contributions = [
            (self.weights[f.name] * v, f.name) for f, v in zip(FEATURES, values, strict=True)
        ]
        z = self.bias + sum(c for c, _ in contributions)
        by_family: dict[str, float] = {}
        for c, name in contributions:
            if _FAMILIES[name] not in (DECISION, STYLE) and c < 0:
                by_family[_FAMILIES[name]] = by_family.get(_FAMILIES[name], 0.0) + c
        family = min(by_family, key=lambda k: by_family[k]) if by_family else NO_DECISION_CUE
        return Scored(probability=_sigmoid(z), family=family)

    def probability(self, response: str) -> float:
        return self.score(response).probability

    def to_json(self) -> dict[str, Any]:
        return {
            "model": "logistic regression over memory_kernel.brain.speech features",
            "bias": round(self.bias, 6),
            "weights": {name: round(self.weights[name], 6) for name in feature_names()},
            "trained_on": self.trained_on,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DecisionScorer:
        try:
            weights = {str(k): float(v) for k, v in data["weights"].items()}
            return cls(weights, float(data["bias"]), dict(data.get("trained_on") or {}))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"malformed decision classifier weights: {exc}") from exc


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def load_scorer(path: str | Path | None) -> DecisionScorer:
    """The classifier in the JSON file ``path``; ``None``: the packaged one."""
    if path is None:
        return default_scorer()
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read decision classifier weights {path}: {exc}") from exc
    return DecisionScorer.from_json(data)


@cache
def default_scorer() -> DecisionScorer:
    """The packaged classifier (read once)."""
    text = (resources.files("memory_kernel.brain") / _PACKAGED).read_text(encoding="utf-8")
    return DecisionScorer.from_json(json.loads(text))


def fit(
    responses: Sequence[str],
    labels: Sequence[bool],
    *,
    l2: float = 1.0,
    trained_on: dict[str, Any] | None = None,
) -> DecisionScorer:
    """Weights maximising the L2-penalised log-likelihood of ``labels`` (``True``: a decision)
    given the responses' features; the bias is not penalised. Newton's method from zero."""
    if len(responses) != len(labels) or not responses:
        raise ValidationError("fit needs as many labels as responses, and at least one")
    x = np.array([features(r) for r in responses], dtype=np.float64)
    y = np.array([float(bool(v)) for v in labels])
    z = np.hstack([x, np.ones((len(y), 1))])
    penalty = np.eye(z.shape[1]) * l2
    penalty[-1, -1] = 0.0
    w = np.zeros(z.shape[1])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        gradient = z.T @ (p - y) + penalty @ w
        hessian = (z * (p * (1.0 - p))[:, None]).T @ z + penalty
        step = np.linalg.solve(hessian + 1e-9 * np.eye(z.shape[1]), gradient)
        w -= step
        if float(np.abs(step).max()) < 1e-10:
            break
    names = feature_names()
    meta = {"rows": len(y), "decisions": int(y.sum()), "l2": l2, **(trained_on or {})}
    weights = {n: float(v) for n, v in zip(names, w[:-1], strict=True)}
    return DecisionScorer(weights, float(w[-1]), meta)
