"""Plain logistic regression over a few named features: the learned part of the fact rules
(admission, duplicate, update), where the rules run out.

A :class:`LinearScorer` is a small JSON document (feature names, standardisation, weights,
the decision thresholds and what it was trained on), shipped in ``heart/facts/weights/``
and produced by ``scripts/train_fact_scorers.py`` from the development data only.
:func:`fit` is the same numpy code the script and the cross-validation harness use, so a
fold is fitted exactly as the shipped weights were. Pure: no I/O but reading the file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memory_kernel.errors import ConfigError

__all__ = ["LinearScorer", "fit", "load_scorer", "packaged"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class LinearScorer:
    """``P(positive) = sigmoid(bias + sum(w_i * (x_i - mean_i) / scale_i))``."""

    name: str
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    thresholds: Mapping[str, float] = field(default_factory=dict)
    trained_on: Mapping[str, Any] = field(default_factory=dict)

    def probability(self, x: Sequence[float]) -> float:
        z = self.bias
        for value, mean, scale, weight in zip(x, self.mean, self.scale, self.weights, strict=True):
            z += weight * (value - mean) / scale
        return 1.0 / (1.0 + math.exp(-max(min(z, 40.0), -40.0)))

    def best_probability(self, known: Mapping[str, float], unknown: Collection[str]) -> float:
        """The highest probability the ``known`` feature values can have, whatever values
        between 0 and 1 the ``unknown`` features take: below a threshold, computing those
        cannot make the decision."""
        return self.probability([
            (1.0 if weight > 0 else 0.0) if name in unknown else known[name]
            for name, weight in zip(self.features, self.weights, strict=True)
        ])  # fmt: skip

    def threshold(self, name: str) -> float:
        try:
            return float(self.thresholds[name])
        except KeyError as exc:
            raise ConfigError(f"scorer {self.name!r} has no threshold {name!r}") from exc

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "features": list(self.features),
            "mean": [round(v, 6) for v in self.mean],
            "scale": [round(v, 6) for v in self.scale],
            "weights": [round(v, 6) for v in self.weights],
            "bias": round(self.bias, 6),
            "thresholds": dict(self.thresholds),
            "trained_on": dict(self.trained_on),
        }


def _from_json(doc: Mapping[str, Any], expected: Sequence[str]) -> LinearScorer:
    features = tuple(str(f) for f in doc["features"])
    if features != tuple(expected):
        raise ConfigError(
            f"scorer {doc.get('name')!r} was trained on features {features}, this version "
            f"computes {tuple(expected)}: retrain it (scripts/train_fact_scorers.py)"
        )
    columns = [tuple(float(v) for v in doc[key]) for key in ("mean", "scale", "weights")]
    if any(len(c) != len(features) for c in columns):
        raise ConfigError(f"scorer {doc.get('name')!r}: one number per feature expected")
    return LinearScorer(
        name=str(doc["name"]), features=features, mean=columns[0], scale=columns[1],
        weights=columns[2], bias=float(doc["bias"]),
        thresholds={str(k): float(v) for k, v in dict(doc.get("thresholds", {})).items()},
        trained_on=dict(doc.get("trained_on", {})),
    )  # fmt: skip


def load_scorer(path: Path, expected: Sequence[str]) -> LinearScorer:
    """A scorer from a JSON file (``expected``: the feature names this code computes)."""
    try:
        doc = json.loads(path.read_text("utf-8"))
        return _from_json(doc, expected)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"cannot read fact scorer weights from {path}: {exc}") from exc


@lru_cache(maxsize=16)
def packaged(name: str, expected: tuple[str, ...], folder: str = "") -> LinearScorer:
    """The shipped scorer ``name`` (``heart/facts/weights[/<folder>]/<name>.json``)."""
    where = f"weights/{folder}/{name}.json" if folder else f"weights/{name}.json"
    text = resources.files("memory_kernel.heart.facts").joinpath(where)
    try:
        return _from_json(json.loads(text.read_text("utf-8")), expected)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"the packaged fact scorer {name!r} is unreadable: {exc}") from exc


def fit(
    name: str, features: Sequence[str], x: FloatArray, y: FloatArray, *, l2: float = 1.0,
    balanced: bool = True, thresholds: Mapping[str, float] | None = None,
    trained_on: Mapping[str, Any] | None = None,
) -> LinearScorer:  # fmt: skip
    """L2-regularised logistic regression by Newton's method on standardised features
    (deterministic: no random start, no learning rate). ``balanced``: both classes weigh
    the same in total, so the rarer one is not drowned out. Without both classes there is
    nothing to learn: the scorer gives the training rows' rate (0 without rows) to all."""
    x = np.asarray(x, dtype=np.float64).reshape(len(y), len(features))
    if len(y) == 0 or float(y.min()) == float(y.max()):
        rate = float(y.mean()) if len(y) else 0.0
        bias = 40.0 if rate >= 1.0 else -40.0
        return LinearScorer(
            name=name, features=tuple(features), mean=(0.0,) * len(features),
            scale=(1.0,) * len(features), weights=(0.0,) * len(features), bias=bias,
            thresholds=dict(thresholds or {}), trained_on=dict(trained_on or {}),
        )  # fmt: skip
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-6] = 1.0
    z = np.c_[np.ones(len(x)), (x - mean) / scale]
    w = np.zeros(z.shape[1])
    penalty = l2 * np.diag(np.r_[0.0, np.ones(len(w) - 1)])
    positives = float(y.sum())
    if balanced and 0 < positives < len(y):
        half = len(y) / 2
        weight = np.where(y > 0, half / positives, half / (len(y) - positives))
    else:
        weight = np.ones(len(y))
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -40, 40)))
        gradient = z.T @ (weight * (p - y)) + penalty @ w
        hessian = (z * (weight * p * (1 - p))[:, None]).T @ z + penalty
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    return LinearScorer(
        name=name, features=tuple(features), mean=tuple(float(v) for v in mean),
        scale=tuple(float(v) for v in scale), weights=tuple(float(v) for v in w[1:]),
        bias=float(w[0]), thresholds=dict(thresholds or {}), trained_on=dict(trained_on or {}),
    )  # fmt: skip
