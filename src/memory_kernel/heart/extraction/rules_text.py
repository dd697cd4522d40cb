"""Pure text mechanics of the rule extractor: sentence and clause splitting, a chat
speaker label, discourse openers, and the closed English word classes the clause parse
needs (pronouns, auxiliaries, modals, irregular past forms).

Word classes here are closed classes of English grammar, never phrases taken from data: a
rule that needs one particular sentence to pass does not belong here.
"""

from __future__ import annotations

import re

from memory_kernel.heart.facts.normalise import ADVERBS, PAST_IRREGULAR

__all__ = [
    "ADVERBS",
    "AUXILIARY_3RD",
    "COPULAS",
    "DEICTIC",
    "HYPOTHETICAL",
    "MENTAL_VERBS",
    "MODALS",
    "NEGATIONS",
    "NORMS",
    "PAST_IRREGULAR",
    "PLURAL_FIRST",
    "QUESTION_OPENERS",
    "REQUEST_OPENERS",
    "SMALL_TALK",
    "SentenceSplit",
    "clauses",
    "speaker_label",
    "strip_opener",
    "third_person",
    "word_set",
    "words",
]


def word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words of a sentence with their apostrophe suffix attached ("I'm", "Noor's"), values whole.
_WORD = re.compile(
    r"[$€£¥]?\d[\d,]*(?:\.\d+)?(?::\d{2})?%?(?:\s?[ap]\.?m\.?(?![a-z])|[a-z]+)?"
    r"|[A-Za-z][\w-]*(?:['’]\w+)?"
)

# Abbreviations whose period ends no sentence.
_ABBREVIATIONS = word_set("mr mrs ms dr st prof sr jr vs etc e.g i.e approx no fig mt ft inc")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9$€£¥])")
# Independent clauses joined by a semicolon or a spaced dash.
_CLAUSE_JOIN = re.compile(r"\s*;\s+|\s+[-–—]+\s+")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+")
_LABEL = re.compile(r"^([A-Z][\w'’.-]*(?: [A-Z][\w'’.-]*){0,2}):\s+(?=\S)")
_CAPTION = re.compile(r"\s*\[image:[^\]]*\]\s*$")
# What a message opens with to say what kind of message it is ("Update: I've settled on
# 78%", "Note: I'm allergic to penicillin"): a label, not a speaker, so "I" stays the user.
_MESSAGE_KINDS = word_set(
    """
    update updates note notes edit ps fyi btw also anyway question questions answer reminder
    summary recap context background status progress milestone correction followup todo
    plan goal idea issue problem warning caveat result results decision feedback request
    tip aside addendum disclaimer bonus news
    """
)

# Nouns and adjectives that name a norm: what a label ("One firm rule: no HOA") or a
# predicate ("… is non-negotiable") calls a rule the speaker keeps (``preferences``).
NORMS = word_set(
    """
    rule rules requirement requirements must must-have must-haves priority priorities
    non-negotiable non-negotiables dealbreaker dealbreakers deal-breaker deal-breakers
    preference preferences constraint constraints essential mandatory
    """
)

SMALL_TALK = word_set(
    """
    hello hi hey hiya howdy morning evening afternoon night bye goodbye cheers thanks thank
    ty please welcome ok okay k kk yes yeah yep yup no nope sure alright right cool great
    nice good fine awesome perfect lovely brilliant amazing wow oh ah ha haha hah lol hmm um
    uh gotcha noted understood agreed sorry exactly totally absolutely indeed true makes
    sense sounds sound love lovely fair enough so well anyway anyways also and but plus
    actually honestly btw ugh oops yay phew
    """
)
# Pronouns whose referent a single sentence does not say.
DEICTIC = word_set("it it's this that these those they they're he he's she she's which who")
PLURAL_FIRST = word_set("we we're we've we'd we'll us our ours ourselves")
COPULAS = word_set("is are was were am be been being 's 're 'm")
# Finite auxiliaries a third-person subject takes as they are (past or modal).
MODALS = word_set(
    """
    can could will would shall should must might may 'll 'd can't couldn't won't wouldn't
    shouldn't mustn't cannot
    """
)
# First-person forms and their third-person counterparts.
AUXILIARY_3RD = {
    "am": "is", "'m": "is", "have": "has", "'ve": "has", "do": "does", "don't": "doesn't",
    "were": "was", "haven't": "hasn't", "'re": "is", "are": "is", "aren't": "isn't",
}  # fmt: skip
NEGATIONS = word_set("not no never nobody nothing none nor neither cannot without")
# Verbs of thinking and saying: "I think ...", "I guess ..." report no fact by themselves.
MENTAL_VERBS = word_set(
    """
    think thought guess suppose know knew mean meant wonder wondering bet agree disagree
    believe reckon figure imagine assume remember forget forgot feel felt hope wish see
    """
)
# Words that make a statement hypothetical, hedged or conditional.
HYPOTHETICAL = word_set(
    "if unless would could might maybe perhaps possibly should wonder wondering whether 'd"
)
QUESTION_OPENERS = word_set(
    """
    what which who whom whose when where why how is are am was were can could should would
    do does did will shall may have has any anyone anything
    """
)
# Words that open a request or an instruction to the other party.
REQUEST_OPENERS = word_set(
    """
    please can could would let let's help tell give show remind suggest recommend explain
    write draft make find list send check try keep add remove use don't do imagine pretend
    consider summarize summarise rewrite translate compare describe
    """
)


def words(text: str) -> list[str]:
    """The sentence's words (apostrophes normalised), values kept whole."""
    out = []
    for word in _WORD.findall(text):
        word = word.replace("’", "'")
        out.append(word[:-1] if word.endswith(".") and word[:1].isdigit() else word)
    return out


# ", so we …", "and I …": a conjunction that opens a clause with a subject of its own.
_CONJOINED = re.compile(
    r",\s+(?:(?:but|so|because|although|though|whereas)\s+(?=\w)"
    r"|(?:and|while|since)\s+"
    r"(?=(?:I|I'm|I've|I'd|we|we're|we'd|my|our|the|he|she|[A-Z][a-z]+)\s))"
    r"|\s+and\s+(?=(?:I|I'm|I've|I'd|I'll|we|we're|he|she)\s)"
    r"|,\s+(?=(?:I|I'm|I've|I'd|I'll|we|we've|we're)\s)"
)
# "nightly_orders, which runs at 02:00": a relative clause about the word before the comma.
_RELATIVE = re.compile(r"(?<=\w),\s+(?:which|who)\s+(?=[a-z])")


def speaker_label(text: str) -> tuple[str | None, str]:
    """A transcript's ``"Name: text"`` label (and a trailing ``[image: …]`` caption) split
    off: the name says who "I" is. ``(None, text)`` without one, or where the label says
    what kind of message follows ("Update:", "Note:", "Rule:"), not who speaks."""
    body = _CAPTION.sub("", text)
    match = _LABEL.match(body)
    kind = match.group(1).lower().rstrip(".") if match is not None else ""
    if match is None or kind in _MESSAGE_KINDS or kind in NORMS:
        return None, body
    return match.group(1), body[match.end() :]


class SentenceSplit:
    """Sentences of a message, then their clauses; bullets and blank lines end a sentence."""

    @staticmethod
    def sentences(text: str) -> list[str]:
        out: list[str] = []
        for line in text.splitlines():
            line = _BULLET.sub("", line).strip()
            if not line:
                continue
            start = 0
            for match in _SENTENCE_END.finditer(line):
                before = line[start : match.start()].rsplit(None, 1)
                last = before[-1].rstrip(".").lower() if before else ""
                if last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha()):
                    continue  # "Dr. Osei", "J. Smith"
                out.append(line[start : match.start()].strip())
                start = match.end()
            out.append(line[start:].strip())
        return [s for s in out if s]


def clauses(sentence: str) -> list[str]:
    """Independent clauses of a sentence joined by ``;`` or a spaced dash."""
    parts = (p for c in _CLAUSE_JOIN.split(sentence) for p in _CONJOINED.split(c))
    out: list[str] = []
    for part in parts:
        relative = _RELATIVE.search(part)
        if relative is not None:
            # The clause keeps its words; the relative clause gets its noun as subject.
            noun = part[: relative.start()].rsplit(None, 1)[-1]
            out += [part[: relative.start()], f"{noun} {part[relative.end() :]}"]
        else:
            out.append(part)
    return [p.strip() for p in out if p.strip()]


_OPENER_WORD = re.compile(r"^([A-Za-z']+)[,!.]\s+")
_PREAMBLE = re.compile(r"^([^:]{1,80}):\s+(?=\S)")


def strip_opener(clause: str) -> str:
    """The clause without leading interjections and connectives ("Oh, and", "Ha, yes,")
    and without a short preamble before a colon ("Random update: Noor moved …")."""
    text = clause.strip()
    for _ in range(4):
        match = _OPENER_WORD.match(text)
        lowered = text.lower()
        if match and match.group(1).lower() in SMALL_TALK:
            text = text[match.end() :]
        elif lowered.split(" ", 1)[0] in ("and", "but", "so", "also", "plus", "oh", "anyway"):
            text = text.split(" ", 1)[1] if " " in text else ""
        else:
            break
    preamble = _PREAMBLE.match(text)
    if preamble and len(text) - preamble.end() >= 15 and len(preamble.group(1).split()) <= 10:
        text = text[preamble.end() :]
    return text[:1].upper() + text[1:] if text else text


_INFORMAL = {"wanna": "wants to", "gonna": "is going to", "gotta": "has to"}


def third_person(verb: str) -> str:
    """The third-person singular of a first-person present verb ("prefer" → "prefers");
    past forms, modals and forms already inflected are returned as they are."""
    lower = verb.lower()
    if lower in _INFORMAL:
        return _INFORMAL[lower]
    if lower in AUXILIARY_3RD:
        return AUXILIARY_3RD[lower]
    if lower in MODALS or lower in PAST_IRREGULAR or lower.endswith("ed"):
        return verb
    if lower.endswith("n't"):
        return verb
    if re.search(r"(?:s|sh|ch|x|z|o)$", lower):
        return verb + "es"
    if re.search(r"[^aeiou]y$", lower):
        return verb[:-1] + "ies"
    return verb + "s"
