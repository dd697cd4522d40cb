"""Multi-session conversations with questions, read from three formats (auto-detected):

- **LoCoMo** (a JSON list of samples with ``conversation`` and ``qa``): speaker A is the
  user, speaker B the assistant; a turn is ``"<speaker>: <text>"`` plus ``[image: <blip
  caption>]`` when it has one (the caption is fair memory, and the speaker's name is what
  the questions ask about). Questions of category 5 (adversarial) are skipped, evidence ids
  are split on ``;`` and ids that resolve to no turn dropped; a question left without
  evidence is skipped. Every skip is counted. Questions are asked after the last session.
- **authored conversations** (JSONL, ``shared/eval/README.md``): ``{"id", "sessions":
  [{"session_id", "date", "turns": [{"role", "content"}]}], "questions": [{"qid",
  "question", "question_date", "answer", "stale_answers", "type"}]}``; type ``abstention``
  (answer ``"N/A"``) has no answer to find.
- **LongMemEval** (a JSON list of instances ``{"question_id", "question_type", "question",
  "answer", "question_date", "haystack_dates", "haystack_session_ids",
  "haystack_sessions"}``, dates like ``"2023/05/20 (Sat) 02:21"``): one dialogue per
  instance; turns flagged ``has_answer`` are the evidence; a question id ending in ``_abs``
  is an abstention question.

Everything is read into :class:`Dialogue` objects; dates are aware UTC datetimes.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from memory_kernel.errors import ConfigError

__all__ = [
    "ABSTENTION",
    "Dataset",
    "Dialogue",
    "Question",
    "Session",
    "Turn",
    "exchanges",
    "load_dataset",
    "parse_locomo_date",
    "parse_longmemeval_date",
]

Role = Literal["user", "assistant"]
ABSTENTION = "abstention"
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_ADVERSARIAL = 5
_LME_DATE = re.compile(
    r"^\s*(\d{4})/(\d{1,2})/(\d{1,2})(?:\s*\([A-Za-z]+\))?(?:\s+(\d{1,2}):(\d{2}))?\s*$"
)


@dataclass(frozen=True)
class Turn:
    role: Role
    #: What is replayed (and what the naive baseline stores).
    content: str
    #: The evidence id of the turn, when the format has one (LoCoMo ``dia_id``).
    key: str | None = None
    #: The text an evidence check looks for (the turn's own words, without decoration).
    text: str = ""


@dataclass(frozen=True)
class Session:
    session_id: str
    date: datetime
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    qid: str
    question: str
    answer: str
    type: str
    #: ``None``: asked after the last session.
    date: datetime | None = None
    stale_answers: tuple[str, ...] = ()
    #: The texts of the turns that hold the answer, when the format says which.
    evidence: tuple[str, ...] = ()

    @property
    def abstention(self) -> bool:
        return self.type == ABSTENTION


@dataclass(frozen=True)
class Dialogue:
    dialogue_id: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]


@dataclass
class Dataset:
    format: str
    dialogues: list[Dialogue]
    #: Why questions (``"questions: ..."``) or evidence ids were left out, with counts.
    skipped: Counter[str] = field(default_factory=Counter)


def parse_locomo_date(value: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` → an aware UTC datetime."""
    try:
        return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError as exc:
        raise ConfigError(f"unreadable LoCoMo session date {value!r}") from exc


def parse_longmemeval_date(value: str) -> datetime:
    """``"2023/05/20 (Sat) 02:21"`` (weekday and time optional) → an aware UTC datetime."""
    match = _LME_DATE.match(value)
    if match is None:
        raise ConfigError(f"unreadable LongMemEval date {value!r}")
    year, month, day, hour, minute = (int(g) if g else 0 for g in match.groups())
    try:
        return datetime(year, month, day, hour, minute, tzinfo=UTC)
    except ValueError as exc:
        raise ConfigError(f"unreadable LongMemEval date {value!r}") from exc


def _iso(value: str) -> datetime:
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError as exc:
        raise ConfigError(f"unreadable date {value!r}") from exc
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _role(value: object) -> Role:
    if value == "user":
        return "user"
    if value == "assistant":
        return "assistant"
    raise ConfigError(f"unknown turn role {value!r} (user or assistant)")


# -- LoCoMo ------------------------------------------------------------------------------


def _locomo_turn(raw: dict[str, Any], speaker_a: str) -> Turn:
    text = str(raw.get("text") or "")
    caption = raw.get("blip_caption")
    content = f"{raw['speaker']}: {text}" + (f" [image: {caption}]" if caption else "")
    role: Role = "user" if raw["speaker"] == speaker_a else "assistant"
    return Turn(role, content, key=str(raw["dia_id"]), text=text)


def _locomo_sample(raw: dict[str, Any], skipped: Counter[str]) -> Dialogue:
    conv = raw["conversation"]
    sample = str(raw["sample_id"])
    keys = [k for k in conv if re.fullmatch(r"session_\d+", k) and conv[k]]
    sessions = sorted(
        (
            Session(
                f"{sample}-{key}",
                parse_locomo_date(conv[f"{key}_date_time"]),
                tuple(_locomo_turn(t, conv["speaker_a"]) for t in conv[key]),
            )
            for key in keys
        ),
        key=lambda s: s.date,
    )
    by_key = {t.key: t for s in sessions for t in s.turns}
    questions = []
    for n, qa in enumerate(raw.get("qa", []), 1):
        category = int(qa.get("category", 0))
        if category == _ADVERSARIAL:
            skipped["questions: adversarial (LoCoMo category 5)"] += 1
            continue
        evidence: list[str] = []
        for item in qa.get("evidence") or []:
            for part in (p.strip() for p in str(item).split(";")):
                turn = by_key.get(part)
                if turn is None:
                    skipped["evidence ids: resolve to no turn"] += 1
                elif (turn.text or turn.content) not in evidence:
                    evidence.append(turn.text or turn.content)
        if not evidence:
            skipped["questions: no resolvable evidence"] += 1
            continue
        questions.append(
            Question(
                qid=f"{sample}-q{n}",
                question=str(qa["question"]),
                answer=str(qa["answer"]),
                type=LOCOMO_CATEGORIES.get(category, f"category {category}"),
                evidence=tuple(evidence),
            )
        )
    return Dialogue(sample, tuple(sessions), tuple(questions))


# -- authored conversations (JSONL) ------------------------------------------------------


def _authored(raw: dict[str, Any]) -> Dialogue:
    sessions = sorted(
        (
            Session(
                str(s["session_id"]),
                _iso(str(s["date"])),
                tuple(
                    Turn(_role(t["role"]), str(t["content"]), text=str(t["content"]))
                    for t in s["turns"]
                ),
            )
            for s in raw["sessions"]
        ),
        key=lambda s: s.date,
    )
    questions = tuple(
        Question(
            qid=str(q["qid"]),
            question=str(q["question"]),
            answer=str(q["answer"]),
            type=str(q["type"]),
            date=_iso(str(q["question_date"])) if q.get("question_date") else None,
            stale_answers=tuple(str(s) for s in q.get("stale_answers") or ()),
        )
        for q in raw["questions"]
    )
    return Dialogue(str(raw["id"]), tuple(sessions), questions)


# -- LongMemEval -------------------------------------------------------------------------


def _longmemeval(raw: dict[str, Any]) -> Dialogue:
    qid = str(raw["question_id"])
    dates = raw["haystack_dates"]
    ids = raw.get("haystack_session_ids") or [f"{qid}-s{i}" for i in range(len(dates))]
    haystack = raw["haystack_sessions"]
    if not len(dates) == len(ids) == len(haystack):
        raise ConfigError(f"instance {qid}: haystack dates, ids and sessions differ in length")
    sessions, evidence = [], []
    for sid, when, turns in zip(ids, dates, haystack, strict=True):
        read = []
        for t in turns:
            turn = Turn(_role(t["role"]), str(t["content"]), text=str(t["content"]))
            read.append(turn)
            if t.get("has_answer"):
                evidence.append(turn.text)
        sessions.append(Session(str(sid), parse_longmemeval_date(str(when)), tuple(read)))
    sessions.sort(key=lambda s: s.date)
    kind = ABSTENTION if qid.endswith("_abs") else str(raw["question_type"])
    asked = raw.get("question_date")
    question = Question(
        qid=qid,
        question=str(raw["question"]),
        answer=str(raw["answer"]),
        type=kind,
        date=parse_longmemeval_date(str(asked)) if asked else None,
        evidence=tuple(evidence),
    )
    return Dialogue(qid, tuple(sessions), (question,))


# -- detection ---------------------------------------------------------------------------


def _detect(items: list[Any]) -> str:
    first = items[0] if items else None
    if not isinstance(first, dict):
        raise ConfigError("expected a list of JSON objects")
    if "conversation" in first and "qa" in first:
        return "locomo"
    if "haystack_sessions" in first:
        return "longmemeval"
    if "sessions" in first and "questions" in first:
        return "conversations"
    raise ConfigError(
        "unknown format: expected LoCoMo (conversation, qa), LongMemEval (haystack_sessions) "
        "or authored conversations (sessions, questions)"
    )


def _rows(path: Path) -> list[Any]:
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):
        loaded = json.loads(stripped)
        return list(loaded)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def load_dataset(path: Path, *, limit: int | None = None) -> Dataset:
    """Read ``path`` (format auto-detected); ``limit``: the first N dialogues only."""
    try:
        items = _rows(path)
        fmt = _detect(items)
        if limit is not None:
            items = items[:limit]
        skipped: Counter[str] = Counter()
        if fmt == "locomo":
            dialogues = [_locomo_sample(item, skipped) for item in items]
        elif fmt == "longmemeval":
            dialogues = [_longmemeval(item) for item in items]
        else:
            dialogues = [_authored(item) for item in items]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"cannot read conversations from {path}: {exc!r}") from exc
    return Dataset(fmt, dialogues, skipped)


def exchanges(turns: Iterable[Turn]) -> list[tuple[str | None, str]]:
    """The session as (user message, assistant reply) pairs for the hooks: blank turns are
    left out, consecutive turns of one role are joined (newline), a user turn without a
    reply gets ``""``, assistant turns before any user turn come as ``(None, reply)``."""
    merged: list[tuple[Role, str]] = []
    for turn in turns:
        if not turn.content.strip():
            continue
        if merged and merged[-1][0] == turn.role:
            merged[-1] = (turn.role, f"{merged[-1][1]}\n{turn.content}")
        else:
            merged.append((turn.role, turn.content))
    pairs: list[tuple[str | None, str]] = []
    for role, content in merged:
        if role == "user":
            pairs.append((content, ""))
        elif pairs and pairs[-1][0] is not None and not pairs[-1][1]:
            pairs[-1] = (pairs[-1][0], content)
        else:
            pairs.append((None, content))
    return pairs
