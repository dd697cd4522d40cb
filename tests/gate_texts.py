"""Responses placed around the decision classifier's threshold (layer 1), for the tests of a
judge's second reading of its uncertain band (``brain.review``).

Their probabilities under the shipped weights are checked by
``tests/consolidation/test_gate_review.py``: a noise response layer 1 records near its
threshold, a decision it rejects near it, and one of each far from it.
"""

from __future__ import annotations

NOISE_RECORDED = "Let's see how the numbers look next week before deciding on the pricing."
DECISION_REJECTED = (
    "Monorepo it is. Both services share the schema, so one repository keeps them in step."
)
CLEAR_DECISION = (
    "Going with weekly releases from now on, since the nightly builds kept breaking staging."
)
CLEAR_NOISE = "There are two reasonable paths here: a queue or a cron job. How big is your team?"
