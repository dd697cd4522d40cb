"""Quality and speed of the rule extractor (``RuleExtractor``) on the development data.

    python benchmarks/extraction_quality.py                      # all default files
    python benchmarks/extraction_quality.py --sample 30 --seed 7 # + 30 facts to eyeball
    python benchmarks/extraction_quality.py --assistant          # also unlabelled assistant turns
    python benchmarks/extraction_quality.py --json

Folds: the authored conversations sorted by id, first half ``dev`` (c01–c19) and second
half ``held`` (c21–c39); LoCoMo's six conversations, first three ``dev``, last three
``held``; the knowledge-update pair files by row order, first half / second half. Every
figure is printed per data file and fold.

Metrics (intrinsic: the facts alone, no kernel):
- **answer recall**: share of the questions (abstentions left out) whose normalised gold
  answer (``eval.answers``) is contained in some extracted fact of that conversation;
  **admitted**: the same over the facts admission keeps (what reaches memory);
  ``ceiling``: the same over the raw turns (the answer said anywhere at all);
- **KU current / KU stale kept**: knowledge-update questions with stale answers — the
  current answer in some fact; a fact holding a stale answer (and not the current one)
  with no later fact of the same subject to supersede it;
- **facts/turn** (user turns and assistant turns) and **admission rejects**: the share of
  facts ``heart.facts.admission.admit_fact`` turns away;
- LoCoMo only, the dataset's observations as weak labels: **obs turns hit** — share of the
  turns an observation cites that gave at least one fact; **facts off-obs** — share of facts
  from turns no observation cites;
- **pairs**: ``ku_update_pairs``: share whose old and new statement get a shared subject
  key (an exact supersession), and ``keyed_apart``: both keyed, no key shared — the kernel
  then treats them as different things and never supersedes (the cost of a wrong key);
  ``ku_distinct_pairs``: share that get a shared key (a wrong supersession: must be 0);
- **turns/s** of ``extract`` alone (first pass: parse caches cold).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_kernel.eval.answers import ContextText
from memory_kernel.eval.dialogues import Dialogue, load_dataset
from memory_kernel.heart.extraction.rules import RuleExtractor
from memory_kernel.heart.facts.admission import admit_fact
from memory_kernel.models.extraction import ExtractedFact, ExtractionTurn

DEV = Path("/work/shared/eval/dev")
CONVERSATIONS = DEV / "conversations/conversations_dev.jsonl"
LOCOMO = DEV / "locomo/locomo_dev.json"
PAIRS = (
    DEV / "knowledge_update/ku_update_pairs_dev.jsonl",
    DEV / "knowledge_update/ku_distinct_pairs_dev.jsonl",
)
_AT = datetime(2024, 1, 1, tzinfo=UTC)


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _turn(role: str, text: str) -> ExtractionTurn:
    return ExtractionTurn(
        agent_id="bench", session_id="s", turn_id=uuid.uuid4(), episode_id=None,
        role="user" if role == "user" else "assistant", text=text, said_at=_AT,
    )  # fmt: skip


def _folds(dialogues: list[Dialogue]) -> dict[str, list[Dialogue]]:
    ordered = sorted(dialogues, key=lambda d: d.dialogue_id)
    half = (len(ordered) + 1) // 2
    return {"dev": ordered[:half], "held": ordered[half:], "all": ordered}


Extracted = list[tuple[int, str, str, list[ExtractedFact]]]  # (order, role, text, facts)


async def _extract(extractor: RuleExtractor, dialogue: Dialogue) -> Extracted:
    turns = [t for s in dialogue.sessions for t in s.turns]
    batch = [_turn(t.role, t.content) for t in turns]
    found = await extractor.extract(batch)
    return [(i, t.role, t.content, f) for i, (t, f) in enumerate(zip(turns, found, strict=True))]


def _contains(facts: list[tuple[int, ExtractedFact]], phrase: str) -> list[int]:
    return [i for i, (_, f) in enumerate(facts) if ContextText(f.content).contains(phrase)]


def _stale_kept(
    facts: list[tuple[int, ExtractedFact]], answer: str, stale: tuple[str, ...]
) -> bool:
    """A fact holding a stale answer, not the current one, that no later fact of its subject
    supersedes."""
    for i, (_, fact) in enumerate(facts):
        text = ContextText(fact.content)
        if not any(text.contains(s) for s in stale) or text.contains(answer):
            continue
        later = fact.subject is not None and any(
            f.subject == fact.subject for _, f in facts[i + 1 :]
        )
        if not later:
            return True
    return False


def _observations(raw: list[dict[str, Any]]) -> dict[str, set[str]]:
    """LoCoMo sample id → the dia_ids its observations cite."""
    out: dict[str, set[str]] = {}
    for sample in raw:
        cited: set[str] = set()
        for session in (sample.get("observation") or {}).values():
            for items in session.values():
                for item in items:
                    ids = item[1] if isinstance(item[1], list) else [item[1]]
                    cited |= {str(i).strip() for i in ids}
        out[str(sample["sample_id"])] = cited
    return out


async def conversations(path: Path, extractor: RuleExtractor, sample: list[Any]) -> dict[str, Any]:
    dataset = load_dataset(path)
    cited = _observations(json.loads(_read(path))) if dataset.format == "locomo" else {}
    report: dict[str, Any] = {}
    for fold, dialogues in _folds(dataset.dialogues).items():
        c: Counter[str] = Counter()
        for dialogue in dialogues:
            extracted = await _extract(extractor, dialogue)
            facts = [(i, f) for i, _, _, found in extracted for f in found]
            kept = [(i, f) for i, f in facts if admit_fact(f.content).admitted]
            raw = ContextText("\n".join(text for _, _, text, _ in extracted))
            keys = [t.key for s in dialogue.sessions for t in s.turns]
            for i, role, text, found in extracted:
                c[f"turns_{role}"] += 1
                c[f"facts_{role}"] += len(found)
                c["facts"] += len(found)
                c["keyed"] += sum(f.subject is not None for f in found)
                if fold == "all":
                    sample.extend((path.name, role, text, f) for f in found)
                if cited:
                    hit = keys[i] in cited[dialogue.dialogue_id]
                    c["obs_turns"] += hit
                    c["obs_hit"] += hit and bool(found)
                    c["off_obs"] += 0 if hit else len(found)
            c["rejected"] += len(facts) - len(kept)
            for q in dialogue.questions:
                if q.abstention:
                    continue
                c["questions"] += 1
                c["answer"] += bool(_contains(facts, q.answer))
                c["answer_admitted"] += bool(_contains(kept, q.answer))
                c["ceiling"] += raw.contains(q.answer)
                c[f"q_{q.type}"] += 1
                c[f"a_{q.type}"] += bool(_contains(facts, q.answer))
                if q.type == "knowledge-update" and q.stale_answers:
                    c["ku"] += 1
                    c["ku_current"] += bool(_contains(facts, q.answer))
                    c["ku_stale_kept"] += _stale_kept(facts, q.answer, q.stale_answers)
        report[fold] = _summary(c)
    return report


def _share(a: float, b: float) -> float | None:
    return round(a / b, 3) if b else None


def _summary(c: Counter[str]) -> dict[str, Any]:
    out = {
        "questions": c["questions"],
        "answer_recall": _share(c["answer"], c["questions"]),
        "answer_recall_admitted": _share(c["answer_admitted"], c["questions"]),
        "ceiling": _share(c["ceiling"], c["questions"]),
        "ku_questions": c["ku"],
        "ku_current": _share(c["ku_current"], c["ku"]),
        "ku_stale_kept": _share(c["ku_stale_kept"], c["ku"]),
        "facts_per_user_turn": _share(c["facts_user"], c["turns_user"]),
        "facts_per_assistant_turn": _share(c["facts_assistant"], c["turns_assistant"]),
        "facts": c["facts"],
        "keyed": _share(c["keyed"], c["facts"]),
        "admission_rejects": _share(c["rejected"], c["facts"]),
        "by_type": {k[2:]: f"{c['a_' + k[2:]]}/{c[k]}" for k in sorted(c) if k.startswith("q_")},
    }
    if c["obs_turns"]:
        out["obs_turns_hit"] = _share(c["obs_hit"], c["obs_turns"])
        out["facts_off_obs"] = _share(c["off_obs"], c["facts"])
    return out


async def pairs(path: Path, extractor: RuleExtractor) -> dict[str, Any]:
    rows = [json.loads(line) for line in _read(path).splitlines() if line.strip()]
    half = (len(rows) + 1) // 2
    report: dict[str, Any] = {}
    for fold, part in (("dev", rows[:half]), ("held", rows[half:]), ("all", rows)):
        c: Counter[str] = Counter()
        for row in part:
            old, new = await extractor.extract(
                [_turn("user", row["old_fact"]), _turn("user", row["new_fact"])]
            )
            a = {f.subject for f in old if f.subject}
            b = {f.subject for f in new if f.subject}
            c["rows"] += 1
            c["same"] += bool(a & b)
            c["both_keyed"] += bool(a and b)
            c["unkeyed"] += not (a and b)
            c["apart"] += bool(a and b) and not a & b
        report[fold] = {
            "rows": c["rows"],
            "same_subject": _share(c["same"], c["rows"]),
            "both_keyed": _share(c["both_keyed"], c["rows"]),
            "no_key_on_a_side": _share(c["unkeyed"], c["rows"]),
            "keyed_apart": _share(c["apart"], c["rows"]),
        }
    return report


async def speed(paths: list[Path], extractor: RuleExtractor) -> dict[str, float]:
    turns = [
        _turn(t.role, t.content)
        for path in paths
        for d in load_dataset(path).dialogues
        for s in d.sessions
        for t in s.turns
    ]
    out: dict[str, float] = {}
    for name in ("cold", "warm"):
        started = time.perf_counter()
        for i in range(0, len(turns), 64):  # the queue's batches
            await extractor.extract(turns[i : i + 64])
        out[f"turns_per_s_{name}"] = round(len(turns) / (time.perf_counter() - started))
    out["turns"] = len(turns)
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, action="append", help="conversation files")
    parser.add_argument("--pairs", type=Path, action="append", help="KU pair files")
    parser.add_argument("--assistant", action="store_true", help="unlabelled assistant turns")
    parser.add_argument("--sample", type=int, default=0, help="print N random facts")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    extractor = RuleExtractor(assistant=args.assistant)
    data = args.data or [CONVERSATIONS, LOCOMO]
    result: dict[str, Any] = {"speed": await speed(data, extractor)}
    sample: list[Any] = []
    for path in data:
        result[path.name] = await conversations(path, extractor, sample)
    for path in args.pairs or PAIRS:
        result[path.name] = await pairs(path, extractor)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        for name, folds in result.items():
            print(f"== {name}")
            if name == "speed":
                print(f"   {folds}")
                continue
            for fold, figures in folds.items():
                print(f"   {fold:5} {figures}")
    if args.sample:
        for file, role, _text, fact in random.Random(args.seed).sample(sample, args.sample):
            print(f"- [{file} {role}] {fact.content!r} subject={fact.subject!r}")


if __name__ == "__main__":
    asyncio.run(main())
