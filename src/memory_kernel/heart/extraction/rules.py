"""The default fact extractor: deterministic rules, no model, no I/O.

A turn is split into sentences, each sentence into its independent clauses (``;``, a spaced
dash, ", so …", ", and I …", ", which …" about its noun) and coordinated verb phrases ("got
the job and moved to Manchester": the holder repeated), so a value stated late in a long
message is judged on its own. Each clause is kept or dropped by what *kind* of clause it is:

- dropped: a question, a request or instruction to the other party, a hypothetical or
  hedged clause (if, would, could, might, maybe, should, "I'd"), small talk and
  acknowledgements, a clause addressed to the other party (any "you"), a clause whose
  holder is a pronoun the sentence does not resolve ("it", "they", "that"), a fragment with
  no finite verb, a bare report of thinking ("I think so"), the speaker only in a state,
  a feeling or a place for a while ("I'm so tired today", "I'm back"), fewer than two
  content words (but one word of what the speaker is or has: "I'm vegetarian", "We have a
  dog");
- kept: a self-disclosure (the speaker is the holder: "I moved to Denver", "my sister Noor
  ...", or a clause opening with a past verb, whose "I" is left out: "Retested FTP: 238
  watts") or a statement with a value — a number, an amount, a date, a day, a time, a name
  (a capitalised word inside the clause), a possessive;
- negated clauses are kept with their negation in the text and no slot key (the kernel's
  polarity rules see them), at a lower confidence;
- what the speaker wants is marked with the category ``preference`` (``preferences``): a
  verb of wanting, liking or avoiding, a norm ("One firm rule: no HOA", "… is
  non-negotiable"), and a "please" request that holds beyond the answer, kept as the
  speaker's standing instruction ("Please keep code examples in TypeScript").

The content is self-contained: the first person is resolved to the speaker — "The user" for
a user turn, or the name of a transcript label (``"Caroline: I went …"`` → "Caroline went
…") — with the verb agreeing ("I prefer" → "The user prefers"; later mentions "their",
"them"). A clause in the first person plural ("we", "our", "us") is kept as written: who
"we" are is not in the sentence, and "the user and someone" would say less than the
original does. "He"/"she" opening a clause is resolved to the one name the previous clause
of the turn was about, else the clause is dropped. Relative time is followed by the date it
meant when the turn was said. The slot key comes from ``rules_keys`` (canonical shapes only).

Assistant turns without a speaker label are skipped by default (``assistant=False``): what
an assistant says is mostly advice and drafts, not facts (measured in docs/tuning.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from memory_kernel.dates import resolve_relative
from memory_kernel.heart.extraction.preferences import norm_label, prefers, standing_request
from memory_kernel.heart.extraction.rules_keys import is_name, slot_key
from memory_kernel.heart.extraction.rules_parse import Clause, parse
from memory_kernel.heart.extraction.rules_text import (
    ADVERBS,
    COPULAS,
    HYPOTHETICAL,
    MENTAL_VERBS,
    MODALS,
    NEGATIONS,
    QUESTION_OPENERS,
    REQUEST_OPENERS,
    SMALL_TALK,
    SentenceSplit,
    clauses,
    speaker_label,
    strip_opener,
    third_person,
    words,
)
from memory_kernel.heart.facts.admission_features import TRANSIENT
from memory_kernel.heart.facts.normalise import FUNCTION_WORDS, past_form, value_of
from memory_kernel.models.extraction import ExtractedFact, ExtractionTurn
from memory_kernel.models.facts import PREFERENCE

__all__ = ["RuleExtractor", "extract_text"]

_USER = "the user"
_CONFIDENCE = 0.7
_CONFIDENCE_KEYED = 0.75
_CONFIDENCE_LOW = 0.6  # kept as written, or negated
_MIN_CONTENT = 2
_MAX_CHARS = 400
# A name closing a clause after a comma calls the other party: "Sounds great, John!".
_VOCATIVE = re.compile(r",\s*[A-Z][a-z]+\s*[!.]*\s*$")
# A state, a moment, or where the speaker is just now ("I'm home", "We're off").
_PASSING = TRANSIENT | {"home", "back", "off", "out", "away", "free", "early", "late", "on"}
# The verbs of "I'm X" / "I have X" ("i'm" and "we're" keep their contraction's end).
_BE_HAVE = frozenset({"m", "re", "am", "are", "is", "was", "were", "have", "has", "had", "got"})
_SECOND_PERSON = frozenset(
    {"you", "your", "you're", "you've", "you'll", "yours", "yourself"}
)  # a longer "clause" is a list or a paste, not a statement


class RuleExtractor:
    """Rule-based :class:`memory_kernel.protocols.FactExtractor` (see the module)."""

    def __init__(self, *, assistant: bool = False) -> None:
        self._assistant = assistant

    @property
    def name(self) -> str:
        return "rules"

    async def extract(self, turns: Sequence[ExtractionTurn]) -> list[list[ExtractedFact]]:
        return [
            extract_text(t.text, t.role, assistant=self._assistant, said_at=t.said_at)
            for t in turns
        ]


def extract_text(
    text: str, role: str, *, assistant: bool = False, said_at: datetime | None = None
) -> list[ExtractedFact]:
    """The facts of one turn's text (``role``: "user" or "assistant"); with ``said_at``,
    relative time in a fact is followed by the date it meant ("yesterday (yesterday: 7 May
    2023)", the context's own rule): a fact outlives the day it was said on."""
    label, body = speaker_label(text)
    if label is None and role != "user" and not assistant:
        return []
    speaker = label or (_USER if role == "user" else "the assistant")
    facts: list[ExtractedFact] = []
    seen: set[str] = set()
    previous: str | None = None  # the name the previous clause was about
    for sentence in SentenceSplit.sentences(body):
        for raw in clauses(sentence):
            rule = _rule(raw, speaker)  # "One firm rule: no HOA": the label says what it is
            found: list[ExtractedFact | None] = [rule]
            for part in _coordinated(strip_opener(raw)) if rule is None else ():
                fact, previous = _clause(part, speaker, previous)
                found.append(fact)
            for fact in found:
                if fact is not None and fact.category and speaker != _USER:
                    # A transcript's speaker is someone named, not the user the profile
                    # (context.traits) is about: what they want stays a plain fact.
                    fact = fact.model_copy(update={"category": None})
                if fact is not None and said_at is not None:
                    dated = resolve_relative(fact.content.rstrip("."), said_at)
                    fact = fact.model_copy(update={"content": _sentence(dated)})
                if fact is not None and fact.content not in seen:
                    seen.add(fact.content)
                    facts.append(fact)
    return facts


_AND = re.compile(r",?\s+and\s+(?=([a-z]+)\b)")


def _coordinated(text: str) -> list[str]:
    """ "Noor got the job and moved to Manchester" → one clause per verb phrase, the holder
    repeated ("Noor moved to Manchester"), so each predicate is judged and keyed alone."""
    cuts = [m for m in _AND.finditer(text) if past_form(m.group(1))]
    if not cuts:
        return [text]
    tokens = words(text[: cuts[0].start()])
    clause = parse(tokens)
    if clause.kind not in ("first", "noun", "plural") or not 0 < clause.verb < len(tokens):
        return [text]
    holder = " ".join(tokens[: clause.verb])
    parts = [text[: cuts[0].start()]]
    for i, cut in enumerate(cuts):
        end = cuts[i + 1].start() if i + 1 < len(cuts) else len(text)
        parts.append(f"{holder} {text[cut.end() : end]}")
    return parts


def _clause(
    raw: str, speaker: str, previous: str | None
) -> tuple[ExtractedFact | None, str | None]:
    text = raw
    if not text or len(text) > _MAX_CHARS or text.rstrip().endswith("?"):
        return None, None
    tokens = words(text)
    if not tokens:
        return None, None
    lower = [t.lower() for t in tokens]
    if _diary(tokens):
        # "Retested FTP yesterday: 238 watts!": a clause opening with a past verb and no
        # subject leaves out "I" (chat and diary style).
        text = f"I {text[:1].lower()}{text[1:]}"
        tokens = words(text)
        lower = [t.lower() for t in tokens]
    elif lower[0] in ("he", "she", "he's", "she's") and previous:
        rest = text[len(tokens[0]) :]
        text = previous + (" is" if "'" in lower[0] else "") + rest
        tokens = words(text)
        lower = [t.lower() for t in tokens]
    clause = parse(tokens)
    about = _named_holder(clause)
    if standing_request(text):
        quoted = f'{_speaker(speaker)}\'s standing instruction: "{_sentence(text)}"'
        return ExtractedFact(content=quoted, confidence=_CONFIDENCE, category=PREFERENCE), about
    if _dropped(clause, lower) or _VOCATIVE.search(text):
        return None, about
    negated = any(w in NEGATIONS or w.endswith("n't") for w in lower)
    plural = clause.kind == "plural" or any(w in ("we", "us", "our", "we're") for w in lower)
    first = clause.kind == "first" or any(
        w in ("i", "my", "me", "mine", "i'm", "i've") for w in lower
    )
    preference = prefers(clause)  # "a proper home office is non-negotiable": a norm
    if not (first or plural or preference) and not _anchored(tokens) and about is None:
        return None, about
    key_speaker = "user" if speaker == _USER else speaker.lower()
    content = _resolve(text, speaker) if first else _sentence(text)
    confidence = _CONFIDENCE_LOW if plural else _CONFIDENCE
    subject = None if negated else slot_key(clause, key_speaker)
    if negated:
        confidence = _CONFIDENCE_LOW
    elif subject is not None and not plural:
        confidence = _CONFIDENCE_KEYED
    category = PREFERENCE if preference else None
    fact = ExtractedFact(content=content, subject=subject, confidence=confidence, category=category)
    return fact, about


def _rule(raw: str, speaker: str) -> ExtractedFact | None:
    """A norm the speaker states under a label naming it (``preferences.norm_label``)."""
    found = norm_label(raw)
    if found is None:
        return None
    norm, ruled = found
    content = _sentence(f"{_speaker(speaker)}'s {norm}: {ruled}")
    return ExtractedFact(content=content, confidence=_CONFIDENCE, category=PREFERENCE)


def _speaker(speaker: str) -> str:
    return speaker[:1].upper() + speaker[1:]


def _diary(tokens: list[str]) -> bool:
    """A clause whose first word is a past verb form and whose second is not a verb: its
    subject, "I", is left out."""
    first = tokens[0]
    if not first[:1].isupper() or len(tokens) < 3 or "'" in first:
        return False
    low = first.lower()
    nxt = tokens[1].lower()
    return past_form(low) and low not in ("was", "were", "had") and nxt not in COPULAS | MODALS


def _named_holder(clause: Clause) -> str | None:
    """The name a clause is about, for a "she"/"he" in the next clause."""
    names = [w for w in clause.holder if is_name(clause, w)]
    if len(names) != 1 or "'" in names[0]:
        return None
    if clause.kind == "noun" and len(clause.holder) == 1:
        return names[0]
    if clause.kind == "first" and clause.lower[0] == "my":
        return names[0]
    return None


def _dropped(clause: Clause, lower: list[str]) -> bool:
    """A clause of a kind that states no fact (see the module docstring)."""
    content = [w for w in lower if w not in FUNCTION_WORDS and w.split("'")[0] not in ("i", "we")]
    if all(w in SMALL_TALK for w in content) or _for_a_while(clause, content):
        return True
    if len(content) < _MIN_CONTENT and not _what_the_speaker_is(clause, content):
        return True
    head = lower[len(clause.scope)]
    if lower[0] in REQUEST_OPENERS or (lower[0] in QUESTION_OPENERS and clause.kind != "noun"):
        return True
    if any(w in HYPOTHETICAL or w.endswith("'d") for w in lower):
        return True
    if clause.kind == "pronoun" and not (head in ("there", "there's") and _has_value(lower)):
        return True
    if clause.kind == "none":
        return True
    verb = clause.verb_word
    if not verb:
        return True  # a fragment without a finite verb: "Hey Maria.", "Good thinking."
    if verb in MENTAL_VERBS and not _has_value(lower):
        return True
    # Addressed to the other party ("Thanks for having my back", "Congrats, Nate", "your
    # side"): who "you" is, the sentence does not say.
    return any(w in _SECOND_PERSON for w in lower)


def _for_a_while(clause: Clause, content: list[str]) -> bool:
    """The speaker in a state or a place for a while, and nothing else: "I'm so tired today",
    "We're back", "I'm home tonight"."""
    return clause.kind in ("first", "plural") and all(w in _PASSING for w in content)


def _what_the_speaker_is(clause: Clause, content: list[str]) -> bool:
    """One word that says what the speaker is or has ("I'm vegetarian", "I'm a nurse", "We
    have a dog"), not an activity they are in ("I'm listening")."""
    return (
        clause.kind in ("first", "plural")
        and len(content) == 1
        and clause.verb_word.split("'")[-1] in _BE_HAVE
        and not content[0].endswith("ing")
    )


def _has_value(lower: list[str]) -> bool:
    return any(value_of(w) is not None or w[:1].isdigit() for w in lower)


def _anchored(tokens: list[str]) -> bool:
    """A value, a possessive or a name inside the clause: one particular thing."""
    for i, word in enumerate(tokens):
        low = word.lower()
        if value_of(low) is not None or low[:1].isdigit() or low[:1] in "$€£¥":
            return True
        if "'" in low and low.split("'")[1] == "s" and low not in ("it's", "that's", "there's"):
            return True
        if i > 0 and word[:1].isupper() and low not in ("i", "i'm", "i've", "i'll", "i'd"):
            return True
    return False


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text[-1:] in ".!" else f"{text}."


_FIRST = re.compile(
    r"\b(I'm|I’m|I've|I’ve|I'll|I’ll|I'd|I’d|I|[Mm]y|[Mm]e|[Mm]yself|[Mm]ine)(?![\w'’])"
)
_NEXT_WORD = re.compile(r"\s+([A-Za-z][\w’']*)")


def _resolve(text: str, speaker: str) -> str:
    """First person → the speaker, the verb after "I" agreeing with it."""
    out: list[str] = []
    at = 0
    named = False  # after the first mention, "their" / "them" read better than a repeat
    for match in _FIRST.finditer(text):
        word = match.group(1).replace("’", "'")
        out.append(text[at : match.start()])
        at = match.end()
        lower = word.lower()
        possessive = f"{speaker}'s" if not speaker.endswith("s") else f"{speaker}'"
        if lower in ("my", "mine"):
            out.append("their" if named and lower == "my" else possessive)
        elif lower in ("me", "myself"):
            out.append("them" if named else speaker)
        elif lower == "i'd":
            out.append(f"{speaker} would")
        elif lower == "i'm":
            out.append(f"{speaker} is")
        elif lower == "i've":
            out.append(f"{speaker} has")
        elif lower == "i'll":
            out.append(f"{speaker} will")
        else:
            out.append(speaker)
            at = _agree(text, at, out)
        named = True
    out.append(text[at:])
    resolved = "".join(out)
    return _sentence(resolved[:1].upper() + resolved[1:])


def _agree(text: str, at: int, out: list[str]) -> int:
    """Copy the adverbs after "I" and put the verb that follows in the third person."""
    while True:
        match = _NEXT_WORD.match(text, at)
        if match is None:
            return at
        word = match.group(1)
        if word.lower() in ADVERBS:
            out.append(text[at : match.end()])
            at = match.end()
            continue
        out.append(text[at : match.start(1)] + third_person(word))
        return match.end()
