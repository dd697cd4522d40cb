"""The learned fact scorers: fitting, the shipped weights, the learned admission layer, and
read-time resolution of two current values of one slot."""

from __future__ import annotations

import json
import logging
import uuid
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from memory_kernel import MemoryKernel
from memory_kernel.errors import ConfigError
from memory_kernel.heart.facts.admission import AdmissionReason, admission_scorer, admit_fact
from memory_kernel.heart.facts.admission_features import ADMISSION_FEATURES
from memory_kernel.heart.facts.pairs import FRAME_FEATURES, PAIR_FEATURES
from memory_kernel.heart.facts.recency import newest_first
from memory_kernel.heart.facts.scorer import fit, load_scorer
from memory_kernel.heart.facts.scorers import PACKAGED_FOR, load_scorers
from memory_kernel.models.facts import FactInput, LearnAction
from memory_kernel.testing import FakeEmbedder, FrozenClock
from tests.conftest import schema_config

NAMES = ("a", "b")
_WEIGHTS = resources.files("memory_kernel.heart.facts") / "weights"


def _data() -> tuple[np.ndarray, np.ndarray]:
    x = np.array([[0.0, 1.0], [0.1, 0.9], [0.2, 1.0], [1.0, 0.0], [0.9, 0.2], [0.8, 0.1]])
    return x, np.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0])


def test_fit_is_deterministic_and_separates_the_classes() -> None:
    x, y = _data()
    first, second = fit("t", NAMES, x, y), fit("t", NAMES, x, y)
    assert first == second
    assert first.probability([1.0, 0.0]) > 0.8 > 0.2 > first.probability([0.0, 1.0])


def test_best_probability_bounds_every_value_of_the_unknown_features() -> None:
    """The duplicate scorer's bound lets a learn skip the alignment of a pair that could not
    merge: it must never be below what some frame feature values in [0, 1] give."""
    scorer = load_scorers(None).duplicate
    rng = np.random.default_rng(0)
    unknown = FRAME_FEATURES
    for _ in range(200):
        known = {name: float(rng.random()) for name in scorer.features}
        best = scorer.best_probability(known, unknown)
        for _ in range(20):
            x = dict(known) | {name: float(rng.random()) for name in unknown}
            assert scorer.probability([x[n] for n in scorer.features]) <= best + 1e-12
        corner = dict(known) | {
            n: 1.0 if w > 0 else 0.0
            for n, w in zip(scorer.features, scorer.weights, strict=True)
            if n in unknown
        }
        assert scorer.probability([corner[n] for n in scorer.features]) == pytest.approx(best)
    # With nothing unknown it is the probability itself.
    assert scorer.best_probability(known, ()) == pytest.approx(
        scorer.probability([known[n] for n in scorer.features])
    )


def test_fit_without_both_classes_learns_nothing() -> None:
    never = fit("t", NAMES, np.zeros((3, 2)), np.zeros(3))
    assert never.probability([5.0, -5.0]) < 1e-9


def test_weights_round_trip_and_refuse_other_features(tmp_path: Path) -> None:
    x, y = _data()
    model = fit("t", NAMES, x, y, thresholds={"write": 0.9})
    path = tmp_path / "t.json"
    path.write_text(json.dumps(model.to_json()), "utf-8")
    loaded = load_scorer(path, NAMES)
    assert loaded.threshold("write") == 0.9
    assert loaded.probability([0.7, 0.2]) == pytest.approx(model.probability([0.7, 0.2]))
    with pytest.raises(ConfigError, match="retrain"):
        load_scorer(path, ("a", "c"))


def test_the_packaged_scorers_match_this_code_and_say_what_they_learned_from() -> None:
    scorers = load_scorers(None)
    assert scorers.update.features == PAIR_FEATURES
    assert scorers.admission.features == ADMISSION_FEATURES
    for model in (scorers.update, scorers.duplicate, scorers.admission):
        assert model.trained_on["embedder"] == "hashing-v1-384"
        assert model.trained_on["script"] == "scripts/train_fact_scorers.py"
    # The update scorer retires nothing at any odds (relation.classify_pair): no threshold.
    assert scorers.update.thresholds == {} and scorers.duplicate.threshold("merge") == 0.75


def test_the_packaged_set_is_the_one_fitted_with_the_embedder_in_use(
    caplog: pytest.LogCaptureFixture,
) -> None:
    minilm = "st:sentence-transformers/all-MiniLM-L6-v2"
    assert PACKAGED_FOR[minilm] == "minilm"
    with caplog.at_level(logging.WARNING, logger="memory_kernel"):
        chosen = load_scorers(None, minilm)
        default = load_scorers(None, "hashing-v1-384")
    assert not caplog.records
    for scorers, embedder in ((chosen, minilm), (default, "hashing-v1-384")):
        for model in (scorers.update, scorers.duplicate, scorers.read):
            assert model.trained_on["embedder"] == embedder
    # Fitted on other cosines: another set of weights, the same features.
    assert chosen.update.weights != default.update.weights
    assert chosen.update.features == default.update.features


def test_an_embedder_without_packaged_weights_gets_the_default_set_and_a_warning(
    caplog: pytest.LogCaptureFixture, tmp_path: Path,
) -> None:  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="memory_kernel"):
        scorers = load_scorers(None, "openai:text-embedding-3-small@http://localhost:1")
    assert scorers.embedder == "hashing-v1-384"
    assert "retrain" in caplog.text and "text-embedding-3-small" in caplog.text
    # Weights the host fitted itself for that embedder: nothing to warn about.
    caplog.clear()
    fitted = json.loads((_WEIGHTS / "update.json").read_text("utf-8"))
    fitted["trained_on"]["embedder"] = "openai:text-embedding-3-small@http://localhost:1"
    (tmp_path / "update.json").write_text(json.dumps(fitted), "utf-8")
    with caplog.at_level(logging.WARNING, logger="memory_kernel"):
        load_scorers(str(tmp_path), "openai:text-embedding-3-small@http://localhost:1")
    assert not caplog.records


@pytest.mark.parametrize(
    ("name", "fitted_with", "warned"),
    [("st:sentence-transformers/all-MiniLM-L6-v2", "st:sentence-transformers/all-MiniLM-L6-v2",
      False),
     ("custom:my-embedder", "hashing-v1-384", True)],
)  # fmt: skip
async def test_a_kernel_reads_facts_with_the_weights_of_its_embedder(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, caplog: pytest.LogCaptureFixture,
    name: str, fitted_with: str, warned: bool,
) -> None:  # fmt: skip
    embedder = FakeEmbedder(name=name)
    async with MemoryKernel.open(
        pg_dsn, config=schema_config(drop_schema), clock=clock, embedder=embedder
    ) as kernel:
        with caplog.at_level(logging.WARNING, logger="memory_kernel"):
            await kernel.heart.facts.learn(FactInput(agent_id="a", content="Noor lives in Leeds."))
        assert kernel.heart.facts.scorers.embedder == fitted_with
    assert ("retrain" in caplog.text) is warned


def test_a_missing_scorer_directory_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        load_scorers(str(tmp_path / "nowhere"))


@pytest.mark.parametrize(
    ("text", "reason"),
    [("What is the user's favourite colour?", AdmissionReason.QUESTION),
     ("The agent searched the web.", AdmissionReason.META),
     ("Someone on the team has an opinion about the database.", AdmissionReason.VAGUE)],
)  # fmt: skip
def test_the_learned_layer_rejects_filler_with_a_reason(text: str, reason: AdmissionReason) -> None:
    decision = admit_fact(text)
    assert not decision.admitted and decision.reason is reason


def test_a_scorer_that_admits_everything_keeps_the_rules_only() -> None:
    keep_all = fit("admission", ADMISSION_FEATURES, np.zeros((2, len(ADMISSION_FEATURES))),
                   np.ones(2), thresholds={"admit": 0.2})  # fmt: skip
    text = "The agent searched the web."
    assert not admit_fact(text, scorer=admission_scorer()).admitted
    assert admit_fact(text, scorer=keep_all).admitted
    assert not admit_fact("Hello!", scorer=keep_all).admitted  # the rules still apply


def test_newest_first_puts_an_update_before_what_it_updates() -> None:
    ids = [uuid.UUID(int=n) for n in range(4)]
    age = {ids[0]: 1, ids[1]: 5, ids[2]: 3, ids[3]: 9}  # bigger is newer
    updated = {(ids[0], ids[3])}  # the newest updates the first hit
    ordered, replaced = newest_first(
        ids, key=lambda i: i, newer=lambda a, b: age[a] > age[b],
        updates=lambda old, new: (old, new) in updated,
    )  # fmt: skip
    assert ordered == [ids[3], ids[0], ids[1], ids[2]]
    assert replaced == {ids[0]: ids[3]}


def test_newest_first_marks_an_older_value_recalled_below_its_newer_one() -> None:
    ids = [uuid.UUID(int=n) for n in range(3)]
    age = {ids[0]: 9, ids[1]: 5, ids[2]: 1}  # the newest ranks first
    judged: list[tuple[uuid.UUID, uuid.UUID]] = []

    def updates(old: uuid.UUID, new: uuid.UUID) -> bool:
        judged.append((old, new))
        return (old, new) == (ids[2], ids[0])

    ordered, replaced = newest_first(
        ids, key=lambda i: i, newer=lambda a, b: age[a] > age[b], updates=updates
    )
    assert ordered == ids  # already newest first
    assert replaced == {ids[2]: ids[0]}  # but the stale one is marked
    assert all(age[new] > age[old] for old, new in judged)  # always asked older -> newer


def test_of_two_newer_values_the_closest_replaces_the_older_one() -> None:
    """A search recalls the older fact's own successor beside a newer fact that shares a
    word with it; where the judge lets both replace it, the closer one does."""
    old, stranger, successor = (uuid.UUID(int=n) for n in range(3))
    age = {old: 1, stranger: 5, successor: 3}  # the stranger is the newest, and ranks first
    close = {(old, stranger): 0.2, (old, successor): 0.7}
    hits = [stranger, old, successor]

    def both(o: uuid.UUID, n: uuid.UUID) -> bool:
        return o == old

    _, replaced = newest_first(
        hits, key=lambda i: i, newer=lambda a, b: age[a] > age[b], updates=both,
        closeness=lambda o, n: close.get((o, n), 0.0),
    )  # fmt: skip
    assert replaced == {old: successor}
    # Without a closeness, the best ranked newer value replaces it.
    _, first = newest_first(hits, key=lambda i: i, newer=lambda a, b: age[a] > age[b], updates=both)
    assert first == {old: stranger}


OLD = "Our team standup is at 9:15."
NEW = "Small logistics thing: the standup got pushed to 10:00 so the Denver folks can join."


async def _pair(kernel: MemoryKernel, clock: FrozenClock, agent: str) -> tuple[uuid.UUID, ...]:
    facts = kernel.heart.facts
    old = await facts.learn(FactInput(agent_id=agent, content=OLD))
    clock.advance(days=1)
    new = await facts.learn(FactInput(agent_id=agent, content=NEW))
    assert new.action is LearnAction.ADDED  # not sure enough to retire the old value
    assert (await facts.get(old.fact.id, agent_id=agent)).is_current
    return old.fact.id, new.fact.id


async def test_search_shows_the_newer_value_first_and_dates_the_older(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    old, new = await _pair(kernel, clock, "recency")
    hits = await kernel.heart.facts.search("recency", "when is the team standup", k=5)
    assert [h.fact.id for h in hits[:2]] == [new, old]
    assert hits[0].newer_value is None and hits[1].newer_value == new
