"""Pure slot/value view of one statement: who or what it is about (the holder), what it
says of it (the predicate), the values it gives (typed: amount, time, date, count, ...),
the identifiers it names, and its mood (question, list item, goal or hearsay).

Dedup, supersession and admission all read statements through this view. Two statements
update each other only when they talk about the same holder and attribute and give another
value; a number used as an identifier ("Article 25", "unit 2B", "p99", "PEP 484") names a
different thing, it is not a new value of the same one. No model and no I/O: closed word
classes of English (auxiliaries, citation nouns, time words) and the shape of tokens.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from memory_kernel.heart.facts.normalise import FUNCTION_WORDS, frozen, stem
from memory_kernel.heart.facts.values import (
    AMPM,
    MONEY,
    ORDINAL,
    UNIT_SUFFIX,
    cited,
    identifier,
    typed_value,
)

__all__ = ["GENERIC", "Statement", "abbreviation_like", "statement", "stem_is_verb"]


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Tokens with their case: times with am/pm, amounts, codes (whole, with every hyphened part:
# "us-east-1"), numbers (a number after the number sign is a name: "#882"), words.
_RAW = re.compile(
    r"#\d+\b|"
    r"\d{1,2}(?::\d{2})?\s?(?:[ap]\.?m\.?)(?![a-z])"
    r"|\d{1,2}:\d{2}(?::\d{2})?"
    r"|[$€£¥]\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:k|m|bn|million|billion)\b)?"
    r"|\d+(?:\.\d+)?-[A-Za-z]+"
    r"|[A-Za-z]+(?:-[A-Za-z]+)*[-.]?\d(?:[\w.-]*\w)?|\d+[A-Za-z]\w*"
    r"|\d[\d,]*(?:\.\d+)*%?"
    r"|\w+(?:['’]\w+)?"
    r"|[?]",
    re.IGNORECASE,
)
_KIND = re.compile(r"^\d+(?:\.\d+)?-[a-z]+$")  # "1-bedroom", "45-minute": a kind of thing

# Nouns whose number names a thing rather than measuring it.
_CITATION = _set(
    """
    article articles section sections clause clauses annex appendix figure fig table chapter
    day week round game question problem task lesson session slide row column
    page paragraph exhibit item rule pep rfc iso ticket issue bug case unit apartment apt
    room suite gate platform flight route line bus lot id version v release
    build model tier level stage phase step season episode volume vol part grade class
    """
)
_AUXILIARIES = _set(
    """
    is are was were be been am has have had do does did will would can could should must
    may might shall need needs isn't aren't wasn't weren't doesn't don't didn't won't
    can't hasn't haven't 's 're 've 'm
    """
)
# Common verbs (base forms; inflections are matched through ``stem``).
_VERB_TEXT = """
go run own live work pay cost take use keep get make hold lead manage report ship send
meet start end open close leave join move switch change hand book rent buy sell eat drink
weigh expire renew require cover track show introduce include need want prefer like love
hate visit see call store proof bake brew drive fly deploy release apply retain host
support store serve sit stand reach hit cross finish fill lock accept reject allow deny
mean say tell ask think know feel seem become remain stay belong consist contain
"""
# Irregular past forms, which no suffix rule finds.
_IRREGULAR_TEXT = """
got took went came made said had did left began ran saw gave kept held found brought
bought paid sent spent told thought felt put set met led sat stood won lost sold built
"""
_VERBS = frozenset(stem(w) for w in _VERB_TEXT.split()) | frozenset(_IRREGULAR_TEXT.split())
_OBJECT_OPENERS = _set("the a an my our your his her their its this that these those every all")
_SUBJECT_PRONOUNS = _set("i we you he she they it there")
_ADVERBS = _set("only mostly usually always never still now currently also just often really")

_QUESTION_OPENERS = _set(
    "what which who whom whose when where why how is are can could should would do does "
    "did will shall may"
)
# A statement that adds to a list rather than replacing an item of it: "also", "as well",
# "include", a clause-final "too"; "another" / "other" / "one of" + the listed noun.
_LIST_ADDING = _set("also additionally include includes including besides")
_LIST_OF = _set("another other")
_LIST_DETERMINERS = frozenset(("my", "our", "the", "your"))
_CLAUSE_FINAL_TOO = re.compile(r"\b(?:too|as well)\s*(?:[.,;:!?)]|$)", re.IGNORECASE)
# Not a statement of how things are: a goal, wish, condition, reminder, hearsay, or a
# search ("looking at ... in the $X-$Y range"). (A plan may be replaced by what happened.)
_IRREALIS = _set(
    """
    goal goals hope hoping wish if unless remind reminder someone somebody reportedly
    rumour looking shopping considering thinking wondering debating
    """
)
# Words announcing that a value changed.
_CHANGE_TEXT = """
now instead anymore longer switched switch changed change moved move became become
new newly updated bumped bumped pushed rescheduled revised dropped replaced retired
upgraded downgraded deferred handed took over since starting effective finally up down
from as of went gone
"""
_CHANGE = _set(_CHANGE_TEXT)

_TIME_WORDS = _set(
    """
    today tonight yesterday tomorrow morning mornings afternoon afternoons evening evenings
    night nights weekday weekdays weekend weekends daily weekly monthly yearly annual annually
    summer winter spring autumn fall season week month year quarter
    """
)


@dataclass(frozen=True, slots=True)
class Statement:
    """The parsed view of one statement (see the module docstring)."""

    text: str
    holder: tuple[str, ...]  # content stems before the main verb ("i" / "i:sister" kept)
    predicate: tuple[str, ...]  # content stems after it (no values)
    values: frozenset[tuple[str, str]]  # (type, normalised value)
    identifiers: frozenset[str]  # codes and cited numbers: "2b" (unit 2B), "p99", "484"
    names: frozenset[str]  # capitalised words inside the sentence (lowercased)
    question: bool
    list_item: bool  # adds to a list whatever it lists ("also", "include", "... too")
    listed: frozenset[str]  # the nouns after "another" / "other" / "one of"
    irrealis: bool
    change: bool  # announces a change
    time_words: frozenset[str]
    personal: bool
    # The statement in order, for aligning two of them: ("v", "type=value") for a value,
    # ("id", key) for an identifier, ("h" | "p", stem) for a content word of the holder or
    # the predicate, with the word as written (for names and abbreviations).
    items: tuple[tuple[str, str, str], ...] = ()

    content: frozenset[str] = frozenset()  # holder and predicate stems
    # Five-letter beginnings and ends of the longer stems: a cheap first test of whether
    # two statements may share a word at all (derived forms and compounds included).
    affixes: frozenset[str] = frozenset()

    # Per item of ``items``: its key, five-letter beginning and end (for a quick bound on
    # an alignment), and how many items look like abbreviations.
    item_affixes: tuple[tuple[str, str, str], ...] = ()
    item_keys: frozenset[str] = frozenset()
    abbreviations: int = 0
    topic_pool: frozenset[str] = frozenset()  # content (no generic words) and names
    # The kinds of its values, read for every pair: computed once.
    value_types: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "value_types", frozen(kind for kind, _ in self.values))

    def shares_anything(self, other: Statement) -> bool:
        """A word, affix, name, identifier or value type in common (a necessary condition
        of every relation but a flip, in one pass of set intersections)."""
        return bool(
            self.content & other.content or self.affixes & other.affixes
            or self.names & other.names or self.identifiers & other.identifiers
            or self.value_types & other.value_types
        )  # fmt: skip

    def value_keys(self) -> frozenset[str]:
        """The values as said, whatever their unit is called: "12 minutes" and "12 min",
        "100 requests per second" and "100 times a second", "version 1.29" and "1.29" give
        the same keys; "once" (a month) is no value of its own."""
        keys = set()
        for kind, value in self.values:
            if kind == "frequency" and value == "1":
                continue
            number = re.match(r"[$€£¥]?(\d[\d.:]*)", value)
            if kind in ("duration", "measure"):
                keys.add(value)  # the unit says what is measured: 16 GB is no version 16
            else:
                keys.add(number.group(1) if number and kind != "date" else value)
        keys |= {i for i in self.identifiers if re.fullmatch(r"\d+(?:\.\d+)*", i)}
        return frozenset(keys)


def _raw_tokens(text: str) -> list[str]:
    return [t.replace("’", "'") for t in _RAW.findall(text)]


# Words too common to show that two statements are about the same thing: time words and
# units belong to values, these adjectives qualify anything. Written as the stems that
# statements keep ("morn" for morning, "minut" for minutes).
_GENERIC_TEXT = """
new old last first next other same big small good great main time day week month year
hour minut second today tonight now morn night weekend weekday every thing lot way
user peopl someon
"""
GENERIC = frozenset(_GENERIC_TEXT.split())


def abbreviation_like(token: str) -> bool:
    """Short capitals ("SF", "PRs") or a numeronym / letter-digit code ("k8s", "S3")."""
    body = token[:-1] if token.endswith("s") else token
    if token.isalpha():
        return 2 <= len(body) <= 5 and body.isupper()
    # A numeronym ("k8s": its last letter may be an "s"), perhaps pluralised, or a code.
    return bool(re.fullmatch(r"[a-z]\d+[a-z]s?", token) or re.fullmatch(r"[A-Z]\d", body))


def stem_is_verb(word_stem: str) -> bool:
    """Whether a stem is one of the common verbs (or an auxiliary)."""
    return word_stem in _VERBS or word_stem in _AUXILIARIES


def _listed(lower: list[str]) -> frozenset[str]:
    """The stems of the nouns a list marker points at ("another goal" -> "goal")."""
    out = set()
    for i, word in enumerate(lower[:-1]):
        if word in _LIST_OF or (word == "one" and lower[i + 1] == "of"):
            at = i + 2 if lower[i + 1] == "of" else i + 1
            # Past a determiner, then a count: "one of the 6 ducks" lists ducks.
            if at + 1 < len(lower) and lower[at] in _LIST_DETERMINERS:
                at += 1
            if at + 1 < len(lower) and lower[at].isdigit():
                at += 1
            if at < len(lower):
                out.add(stem(lower[at]))
    return frozenset(out)


def _verb_index(lower: list[str]) -> int:
    """Where the main verb is: the first auxiliary or common verb after the subject."""
    start = 1
    if lower and lower[0] in _SUBJECT_PRONOUNS:
        start = 1
    for i in range(start, len(lower)):
        word = lower[i]
        if word in _AUXILIARIES or (word.startswith("'") and word in _AUXILIARIES):
            return i
        if "'" in word:
            continue
        after_determiner = lower[i - 1] in ("the", "a", "an", "my", "our", "your", "their")
        if after_determiner:
            continue
        if stem(word) in _VERBS or word in _VERBS or (len(word) > 4 and word.endswith("ed")):
            return i
        if _third_person(word) and i + 1 < len(lower) and _opens_object(lower[i + 1]):
            return i  # "Lobe monitors the ...", "Biscuit weighs 31 pounds"
    return len(lower)


def _third_person(word: str) -> bool:
    return len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is"))


def _opens_object(word: str) -> bool:
    """A word that starts a verb's object: a determiner, a possessive, a number."""
    return word in _OBJECT_OPENERS or word[:1].isdigit() or word[:1] in "$€£¥"


@lru_cache(maxsize=65_536)
def statement(text: str) -> Statement:
    raw = _raw_tokens(text)
    lower = [t.lower() for t in raw if t != "?"]
    words = [t for t in raw if t != "?"]
    split = _verb_index(lower)
    holder: list[str] = []
    predicate: list[str] = []
    values: set[tuple[str, str]] = set()
    identifiers: set[str] = set()
    names: set[str] = set()
    items: list[tuple[str, str, str]] = []
    for i, (token, low) in enumerate(zip(words, lower, strict=True)):
        prev = lower[i - 1] if i else ""
        nxt = lower[i + 1] if i + 1 < len(lower) else ""
        word = low.isalpha()  # most tokens: no digit, so no code, kind, amount or unit
        has_digit = not word and any(c.isdigit() for c in low)
        is_code = not word and ((
            has_digit and any(c.isalpha() for c in low) and not AMPM.match(low)
            and not ORDINAL.match(low)
        ) or bool(re.fullmatch(r"0\d+", low)))  # "006" numbers a thing  # fmt: skip
        code = cited(token, low, has_digit) if prev in _CITATION else None
        if low[:1] == "#":  # "PR #882", "#882 merged": the number sign numbers a thing
            code = low[1:]
        if code is not None:
            identifiers.add(code)
            items.append(("id", code, token))
            continue
        if not word and _KIND.match(low):
            items.append(("p" if i >= split else "h", low, token))
            continue
        money = None if word else MONEY.match(low)
        if is_code and not UNIT_SUFFIX.match(low) and not (money and money.group(3)):
            identifiers.add(identifier(low))
            items.append(("id", identifier(low), token))
            continue
        typed = typed_value(token, low, nxt)
        if typed is not None:
            values.add(typed)
            items.append(("v", f"{typed[0]}={typed[1]}", token))
            continue
        base = low.split("'")[0]
        if base in FUNCTION_WORDS or not base:
            if i < split and base in ("my", "our", "i", "we") and not holder:
                holder.append("i")
            continue
        if token[:1].isupper() and i > 0 and base not in _CITATION:
            names.add(base)
        (holder if i < split else predicate).append(stem(base))
        items.append(("h" if i < split else "p", stem(base), token))
    lowered = set(lower)
    question = text.rstrip().endswith("?") or bool(
        lower and lower[0] in _QUESTION_OPENERS and lower[0] not in ("is", "are") and split <= 1
    )
    return Statement(
        text=text,
        holder=tuple(holder),
        predicate=tuple(predicate),
        values=frozen(values),
        identifiers=frozen(identifiers),
        names=frozen(names),
        question=question,
        list_item=bool(lowered & _LIST_ADDING) or bool(_CLAUSE_FINAL_TOO.search(text)),
        listed=frozen(_listed(lower)),
        irrealis=bool(lowered & _IRREALIS),
        change=bool(lowered & _CHANGE),
        time_words=frozen(lowered & _TIME_WORDS),
        personal=bool(lowered & {"i", "my", "me", "we", "our", "i'm", "i've", "we're"}),
        items=tuple(items),
        content=frozen([*holder, *predicate]),
        item_affixes=tuple((i[1], i[1][:5] + "-", "-" + i[1][-5:]) for i in items),
        item_keys=frozen(i[1] for i in items),
        abbreviations=sum(abbreviation_like(i[2]) for i in items),
        topic_pool=frozen([*(w for w in (*holder, *predicate) if w not in GENERIC), *names]),
        affixes=frozen(
            a for w in (*holder, *predicate) if len(w) >= 5 for a in (w[:5] + "-", "-" + w[-5:])
        ),
    )
