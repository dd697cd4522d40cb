"""Speech-act features of an agent's response: what the decision classifier sees (pure).

A decision *commits* to something ("we'll", "I'm switching", "let's", "not raising…"),
usually *chooses* ("going with", "picked", "decided"), names what it *rejects* ("rather
than", "instead of", "not X"), or gives a *reason* ("because", "since", ", so", "would").
A reason or a contrast counts in a sentence where someone of the conversation acts or a
course is set, not in one that explains how things are ("Kafka orders messages within a
partition, not across a topic"). Noise *reports* ("Patched, rebuilt, redeployed."),
*announces* the next step ("Let me…", "Checking…"), *acknowledges* ("Noted 👍"), *recalls*
("I remember…"), *asks*, *dumps* status or lists ("Routes in this service: - GET /orders
…"), or reports an error.

Each feature is a number in [0, 1] computed from word lists of those speech acts (general
English vocabulary, not phrases of any data set) and from the response's shape (list lines,
code spans, digits, questions). Length is not one: how long a response is says nothing of
what it does, and a weight learned for it learns only that a development file's noise is
terser than its decisions (a long explanation then looks like a decision). A feature
belongs to a *family*: the decision cues push towards "decision", the other families
towards "not a decision", and the family whose features pushed hardest is what layer 1
reports when it drops a response (the ``style`` feature, emoji, is weighed but never
named).

Text is matched lowercase with straight apostrophes, as whole words.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["DECISION", "FEATURES", "MAX_CHARS", "STYLE", "Feature", "feature_names", "features"]

#: What a response is, it says on its first screen; past this the rest is a document, and
#: reading it all would cost a millisecond per kilobyte on every turn.
MAX_CHARS = 4000


def _words_re(*phrases: str) -> re.Pattern[str]:
    """Whole-word alternation of ``phrases`` (regex syntax allowed inside a phrase)."""
    return re.compile(r"(?<![\w'])(?:" + "|".join(phrases) + r")(?![\w'])")


# --- word lists of the speech acts ---------------------------------------------------

# After "I'll" / "let me" / "going to": the agent announces work, it does not choose.
_PROGRESS = (
    r"start|begin|check|look|take a look|see|try|dig|investigate|review|read|report|"
    r"follow up|keep (?:you|an eye|that in mind|it in mind|looking|going)|let you know|"
    r"get back|continue|work|go ahead|handle|help|do|now|first|"
    r"summari[sz]e|explain|add some|run|rerun|pull|fetch|grab|go through|ping|find|search|"
    r"gather|collect|test|verify|confirm|look into|figure out|think|dive|be"
)
# "I'm checking…" reports what the agent is busy with; "I'm switching…" commits.
_BUSY_VERBS = r"checking|looking|digging|working|investigating|trying|reviewing|reading|"
_BUSY_VERBS += r"waiting|thinking|running|pulling|searching|testing|comparing|measuring|"
_BUSY_VERBS += r"benchmarking|verifying|confirming|gathering|collecting|fetching|asking"
_BUSY = r"going\b|" + _BUSY_VERBS + r"|still"
# Base forms of verbs that direct or choose: the imperative ("Use UUIDv7…", "Get the
# 14-inch.") and its first-person plural ("we skip the toggle for v1").
_DIRECTIVE_VERBS = (
    r"use|keep|get|go|pick|choose|prefer|avoid|drop|add|remove|move|pin|ship|split|merge|"
    r"switch|stick|stop|make|set|put|run|cite|buy|skip|defer|delay|wait|hold|treat|store|"
    r"cache|replace|migrate|upgrade|downgrade|enable|disable|turn|raise|lower|limit|cap|"
    r"require|allow|block|reject|accept|approve|deny|schedule|prioriti[sz]e|focus|build|write|"
    r"rename|retire|deprecate|consolidate|standardi[sz]e|adopt|launch|release|roll|revert|"
    r"exclude|include|start|leave|postpone|cancel|invest|hire|sign|opt"
)
_COMMIT = _words_re(
    r"we (?:" + _DIRECTIVE_VERBS + r") \w+",
    r"(?:i|we)(?:'ll| will| shall)(?! (?:" + _PROGRESS + r")(?![\w']))",
    r"(?:i'm|i am|we're|we are) going to(?! (?:" + _PROGRESS + r")(?![\w']))",
    r"let's(?! (?:" + _PROGRESS + r")(?![\w']))",
    r"(?:i'm|i am|we're|we are) (?:not )?(?!" + _BUSY + r")\w+ing",
)
_CHOICE = _words_re(
    r"decid\w*", r"decision\w*", r"chose", r"choose", r"chosen", r"choice\w*", r"opt(?:ed|ing)?",
    r"going with", r"go with", r"went with", r"settl(?:e|ed|ing) on", r"final call",
    r"pick(?:ed|ing)?", r"select(?:ed|ing)?", r"(?:i|we)(?:'d)? prefer", r"preferred",
    r"adopt\w*", r"standardi[sz]\w* on", r"stick(?:ing)? with", r"switch(?:ed|ing)? (?:to|from)",
    r"keep(?:ing)? the", r"kept the", r"defer\w*", r"reject\w*", r"commit(?:ting)? to",
)  # fmt: skip
_CONTRAST = _words_re(
    r"rather than", r"instead(?: of)?", r"over the", r"not the", r"versus", r"vs\.?",
    r"alternatives?", r"other (?:option|candidate|choice|approach)s?", r"considered",
    r"(?:isn't|is not|wasn't|not) worth", r"trade-?offs?", r"at the cost of",
    r"\w+er than", r"more \w+ than", r"less \w+ than",
)  # fmt: skip
# "X, not Y" / "X — not Y": the construction that names a rejected alternative.
_NOT_Y = re.compile(r"\w[,;:]? (?:[—–-] )?not (?!only|yet|sure|just|much)\w")
_FUTURE = _words_re(r"will", r"'ll", r"shall", r"going to", r"gonna")
_RATIONALE = _words_re(
    r"because", r"since", r"so that", r"so", r"due to", r"given(?: that)?", r"which means",
    r"in order to", r"to avoid", r"otherwise", r"would(?:n't)?", r"could(?:n't)?", r"means",
    r"the reason", r"as long as",
)  # fmt: skip
# Verbs of advice, whose adviser may be named ("The Kubernetes docs recommend…"), and the
# frames in which the speaker advises ("I'd go", "you should").
_ADVISE = _words_re(r"recommend\w*", r"suggest\w*", r"advise")
_ADVICE_FRAME = _words_re(
    r"i'd \w+", r"i would \w+", r"(?:you|we) should(?:n't)?", r"my advice", r"better to",
    r"best to", r"go for",
)  # fmt: skip
_REFUSE = _words_re(
    r"(?:i'm|i am|we're|we are) not", r"won't", r"will not", r"not going to", r"don't want to",
    r"no longer", r"never",
)  # fmt: skip
_FORWARD = _words_re(
    r"going forward", r"from now on", r"until", r"unless", r"for now", r"next (?:release|"
    r"quarter|sprint|deploy|version|half|month|week)", r"(?:this|each|every) (?:week|month|"
    r"quarter|release|half)", r"by default", r"policy", r"standard",
)  # fmt: skip
_COMPLETION = _words_re(
    r"done", r"finished", r"complete[d]?", r"all set", r"ready", r"passe[sd]", r"succeeded",
    r"success(?:ful(?:ly)?)?", r"worked", r"green", r"confirmed", r"shipped", r"went through",
)  # fmt: skip
_PERFECT = _words_re(
    r"(?:i|we)(?:'ve| have) (?:\w+ly )?(?:\w+ed|\w+en|done|made|built|sent|run|set|put|got|"
    r"found|kept|left|paid|begun)", r"(?:i|we) just \w+", r"(?:i|we) \w+ed",
)  # fmt: skip
_STATUS = _words_re(
    r"status", r"currently", r"so far", r"still", r"in progress", r"running", r"waiting",
    r"pending", r"blocked", r"recap", r"summary", r"results?", r"overview", r"progress",
    r"update",
)  # fmt: skip
_TRANSITION = _words_re(
    r"let me", r"(?:i'll|i will|i'm going to|going to|i'm gonna) (?:" + _PROGRESS + r")",
    r"(?:first|next|now|then),? i'll", r"moving on", r"checking", r"looking (?:into|at)",
    r"digging", r"investigating", r"working on", r"one moment",
    r"stand by", r"hold on", r"in a (?:moment|minute|few minutes)",
)  # fmt: skip
_ACK_START = re.compile(
    r"^[\W_]*(?:thanks|thank you|you're welcome|no problem|no worries|happy to help|"
    r"glad to help|good (?:morning|afternoon|evening)|hello|hi|hey|sounds good|will do|on it|noted|"
    r"understood|great|got it|sure|ok|okay|alright|all right|yep|yes|yeah|haha|lol|hmm|"
    r"makes sense|fair enough|interesting|of course|perfect|nice|cool|awesome)(?![\w'])"
)
_RECALL = _words_re(
    r"i remember", r"i recall", r"if i (?:remember|recall)", r"you (?:told|said|mentioned)",
    r"according to (?:my|our)", r"my (?:notes|memory)", r"as (?:we|you) (?:discussed|said|agreed)",
    r"we (?:agreed|discussed|talked)", r"back in", r"last time", r"previously", r"earlier",
)  # fmt: skip
_ERROR = _words_re(
    r"errors?", r"failed", r"failure", r"couldn't", r"can't", r"cannot", r"unable", r"timeout",
    r"timed out", r"exception", r"sorry", r"went wrong", r"not found", r"denied", r"crash\w*",
    r"unavailable",
)  # fmt: skip
_PAST_LEAD = re.compile(
    # "Patched, …" or the headline form "Repo pulled — …", "Tests passed."
    r"^(?:[\w-]+ )?(?:\w+ed|sent|built|rebuilt|ran|made|found|got|took|wrote|did|began|"
    r"brought|bought|paid|left|shut|spun|gave|told|sold|held|won|lost|kept|chose|went)(?![\w'])"
)
_DIRECTIVE = re.compile(r"^(?:" + _DIRECTIVE_VERBS + r")(?![\w'])")
# A present participle opening a sentence ("Switching…"), unless it announces work.
# Words in -ing that are not participles: "Morning!", "Nothing new", "According to…".
_NOT_PARTICIPLES = r"(?:some|any|no|every)thing|morning|evening|during|according|regarding|"
_NOT_PARTICIPLES += r"concerning|including|following|pending"
_GERUND_LEAD = re.compile(rf"^(?!(?:{_BUSY_VERBS}|{_NOT_PARTICIPLES})(?!\w))\w+ing(?!\w)")
_FILLER_LEAD = re.compile(
    r"^(?:(?:ok|okay|alright|all right|right|great|good|so|now|then|well|sure|yeah|yes)"
    r"[,:!.—–-]*\s+)+"
)
# What puts a choice out of the speaker's commitment when it comes before it in the
# sentence: a condition ("If the benchmark…, we should go with gRPC"), a possibility ("we
# might switch"), a generalisation ("The usual recommendation is…"), or a hypothesis ("My
# theory is the worker is going with UTC instead of…").
_UNCOMMITTED = _words_re(
    r"if", r"unless", r"whether", r"suppose", r"might", r"could", r"perhaps", r"maybe",
    r"possibly", r"probably", r"usual(?:ly)?", r"typical(?:ly)?", r"generally", r"in general",
    r"normally", r"commonly", r"most people", r"tends? to",
    r"theory", r"hypothes[ie]s", r"suspect\w*",
)  # fmt: skip
# Finding something out first: a choice after it waits for what is found ("Let me pull the
# numbers before we pick one"). Not every step: "I'll go ahead and switch us to…" chooses.
_FIND_OUT = r"check|look|see|dig|investigate|review|read|pull|fetch|grab|go through|find|"
_FIND_OUT += r"search|gather|collect|test|verify|confirm|figure out|think|get back|run|rerun|"
_FIND_OUT += r"compare|measure|benchmark|ask"
_STEP_FIRST = _words_re(r"(?:let me|i'll|i will|i'm going to|i'm gonna) (?:" + _FIND_OUT + ")")
# The chooser of a choice verb, when it is named: the speaker, the listener or an imperative
# chooses for the conversation; "the authors chose BM25" reports someone else's choice.
_PERSONAL = re.compile(
    r"(?:^|[^\w'])(?:(?:i|we|you|let's|i'm|we're|you're|i've|we've|you've|i'd|we'd|you'd|"
    r"i'll|we'll|you'll)(?:\s+\S+){0,3}|(?:my|our|your)\s+\S+)$"
)
# A party of the conversation, or a course set for the future, in a sentence.
_PARTY = _words_re(
    r"i", r"we", r"you", r"our", r"us", r"my", r"your", r"me", r"let's", r"i'm", r"we're",
    r"you're", r"i'll", r"we'll", r"you'll", r"i'd", r"we'd", r"you'd", r"i've", r"we've",
    r"you've", r"will", r"won't",
)  # fmt: skip
_CHOSEN_STEP = re.compile(r" to (?:" + _PROGRESS + r")(?![\w'])")
# Before a choice verb, what leaves the choice open: an infinitive ("to pick", "help you
# pick") is a choice still to be made.
_OPEN_CHOICE = re.compile(r"(?:\bto|\bhelp (?:you|me|us)) $")
_CLAUSE_BREAK = re.compile(r"[,;:—–(]|\band\b|\bbut\b")
_LIST_LINE = re.compile(r"^\s*(?:[-*•·]|\d+[.)]|[a-z][.)])\s+")
_CODE = re.compile(r"`[^`]+`")
_DIGITS = re.compile(r"\d")
_WORD = re.compile(r"[\w']+")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?…])\s+|\n+")
_COLON_SPLIT = re.compile(r":\s+")
_EMOJI = re.compile(r"[\u2600-\u27bf\U0001f300-\U0001faff]")
_COLON_HEAD = re.compile(r"^[^.!?\n:]{1,40}:(?:\s|$)")


@dataclass(frozen=True, slots=True)
class _Text:
    """A response prepared once for every feature."""

    raw: str
    text: str  # lowercase, straight apostrophes, whitespace collapsed
    words: list[str]
    sentences: list[str]  # lowercase, fillers kept
    leads: list[str]  # each sentence without leading fillers, emoji and punctuation
    lines: list[str]
    # The sentences in which a party of the conversation acts or a course is set (a
    # person of the conversation, a future, an imperative).
    engaged: list[str]


def _leads(sentence: str) -> list[str]:
    """The clauses of ``sentence`` without leading fillers, emoji and punctuation. What
    follows a colon opens a clause of its own ("My recommendation: use Redis")."""
    clauses = [c for c in _COLON_SPLIT.split(sentence) if c.strip()]
    return [_FILLER_LEAD.sub("", re.sub(r"^[\W_]+", "", c)) for c in clauses]


def _prepare(response: str) -> _Text:
    raw = response.replace("\u2019", "'").replace("\u2018", "'")
    text = " ".join(raw.casefold().split())
    sentences = [s.strip(" \"'*_#>") for s in _SENTENCE_SPLIT.split(raw.casefold()) if s.strip()]
    per_sentence = [_leads(s) for s in sentences]
    engaged = [
        s for s, its in zip(sentences, per_sentence, strict=True)
        if _PARTY.search(s) or any(_DIRECTIVE.match(c) for c in its)
    ]  # fmt: skip
    lines = [line for line in raw.splitlines() if line.strip()]
    leads = [lead for its in per_sentence for lead in its]
    return _Text(raw, text, _WORD.findall(text), sentences, leads, lines, engaged)


def _count(pattern: re.Pattern[str], t: _Text, cap: int = 2, *more: re.Pattern[str]) -> float:
    """How often ``pattern`` (and ``more``) occur, saturating at ``cap``, in [0, 1]."""
    found = sum(len(p.findall(t.text)) for p in (pattern, *more))
    return min(found, cap) / cap


def _engaged_count(t: _Text, cap: int, *patterns: re.Pattern[str]) -> float:
    """How often ``patterns`` occur in the engaged sentences (``_Text.engaged``), saturating
    at ``cap``. A reason or a contrast in a sentence about how things are ("Kafka orders
    within a partition, not across a topic, because…") explains; it chooses nothing."""
    found = sum(len(p.findall(sentence)) for sentence in t.engaged for p in patterns)
    return min(found, cap) / cap


def _share(flags: list[bool]) -> float:
    return sum(flags) / len(flags) if flags else 0.0


def _lead(t: _Text, *patterns: re.Pattern[str]) -> float:
    """1 when one of ``patterns`` occurs in the first sentence."""
    first = t.sentences[0] if t.sentences else ""
    return float(any(p.search(first) for p in patterns))


def _speakers_choice(sentence: str, verbs: re.Pattern[str] = _CHOICE) -> bool:
    """Whether a choice verb in ``sentence`` is the speaker's: nobody else is named before it
    in its clause (its start, or a personal pronoun within three words before it). Choosing
    to do a step of the work ("I decided to check the logs first") announces the step, as
    "I'll check" does."""
    for match in verbs.finditer(sentence):
        if _CHOSEN_STEP.match(sentence, match.end()) or _OPEN_CHOICE.search(
            sentence[: match.start()]
        ):
            continue
        before = _CLAUSE_BREAK.split(sentence[: match.start()])[-1]
        if not before.strip() or _PERSONAL.search(before + match.group(0).split()[0]):
            return True
    return False


def _lead_choice(t: _Text) -> float:
    """1 when the first sentence commits (:func:`_commits`)."""
    return float(bool(t.sentences) and _commits(t.sentences[0]))


def _commits(sentence: str) -> bool:
    """Whether ``sentence`` commits, chooses, contrasts or advises before anything puts it
    out of the speaker's present commitment: a condition, a possibility, a generalisation, a
    hypothesis, a memory ("I remember we picked Kafka over RabbitMQ"; a reason that quotes
    the listener after the choice, "…, since you said you'd rather…", keeps it) or finding
    something out first ("Let me pull the numbers before we pick one"). A choice or advice
    verb counts only when the speaker chooses or advises."""
    held = [m.start() for p in (_UNCOMMITTED, _RECALL, _STEP_FIRST) if (m := p.search(sentence))]
    head = sentence[: min(held, default=len(sentence))]
    frames = (_COMMIT, _CONTRAST, _ADVICE_FRAME)
    return any(p.search(head) for p in frames) or any(
        _speakers_choice(head, verbs) for verbs in (_CHOICE, _ADVISE)
    )


@dataclass(frozen=True, slots=True)
class Feature:
    """One feature: its name, its family and how it is computed."""

    name: str
    family: str
    compute: Callable[[_Text], float]
    about: str


DECISION = "decision"
#: The register of a response rather than a speech act: weighed, never named as the reason.
STYLE = "style"

FEATURES: tuple[Feature, ...] = (
    Feature("commitment", DECISION, lambda t: _count(_COMMIT, t),
            "first-person commitment: we'll, I'm going to, let's, I'm <verb>ing"),
    Feature("choice", DECISION, lambda t: _count(_CHOICE, t),
            "choice verbs: decided, going with, picked, prefer, adopt, stick with…"),
    Feature("contrast", DECISION, lambda t: _engaged_count(t, 2, _CONTRAST, _NOT_Y),
            "a rejected alternative or comparison (rather than, instead of, X-er than…) in a "
            "sentence where someone of the conversation acts or a course is set"),
    Feature("rationale", DECISION, lambda t: _engaged_count(t, 3, _RATIONALE),
            "a reason (because, since, so that, , so, would, given…) in a sentence where "
            "someone of the conversation acts or a course is set"),
    Feature("recommendation", DECISION, lambda t: _count(_ADVISE, t, 1, _ADVICE_FRAME),
            "advice: recommend, suggest, I'd <verb>, you should, better to…"),
    Feature("refusal", DECISION, lambda t: _count(_REFUSE, t, 1),
            "a negated commitment: won't, not going to, I'm not, no longer…"),
    Feature("future", DECISION, lambda t: _count(_FUTURE, t),
            "future tense in any person: will, 'll, going to"),
    Feature("forward", DECISION, lambda t: _count(_FORWARD, t, 1),
            "a lasting scope or condition: until, going forward, for now, next release…"),
    Feature("gerund_lead", DECISION, lambda t: float(any(_GERUND_LEAD.match(x) for x in t.leads)),
            "a sentence opens with a present participle: 'Switching…', 'Dropping…'"),
    Feature("imperative", DECISION, lambda t: float(any(_DIRECTIVE.match(x) for x in t.leads)),
            "a sentence opens with a directive verb: 'Use…', 'Keep…', 'Get the…'"),
    Feature("past_lead", "completion",
            lambda t: _share([bool(_PAST_LEAD.match(s)) for s in t.leads]),
            "share of sentences that open with a past-tense verb: 'Patched…', 'Sent…'"),
    Feature("past_report", "completion", lambda t: _count(_PERFECT, t, 1),
            "a first-person report of finished work: I've updated, I pushed, we just…"),
    Feature("completion", "completion", lambda t: _count(_COMPLETION, t),
            "completion words: done, finished, passed, ready, shipped, confirmed…"),
    Feature("status", "status", lambda t: _count(_STATUS, t),
            "status words: status, so far, still, waiting, summary, results…"),
    Feature("transition", "transition", lambda t: _count(_TRANSITION, t, 1),
            "the next step announced: let me, I'll check, checking, working on…"),
    Feature("acknowledgement", "acknowledgement", lambda t: float(bool(_ACK_START.match(t.text))),
            "opens with an acknowledgement or greeting: thanks, noted, okay, sure, hmm…"),
    Feature("recall", "recall", lambda t: _count(_RECALL, t, 1),
            "recalls the past: I remember, you told me, according to my notes, back in…"),
    Feature("error", "error", lambda t: _count(_ERROR, t),
            "error words: error, failed, couldn't, timeout, sorry, not found…"),
    Feature("question", "question", lambda t: _share([s.endswith("?") for s in t.sentences]),
            "share of sentences that are questions"),
    Feature("list_lines", "report", lambda t: _share([bool(_LIST_LINE.match(x)) for x in t.lines]),
            "share of lines that are list items"),
    Feature("code", "report", lambda t: min(len(_CODE.findall(t.raw)) / 3, 1.0),
            "code spans (`…`), saturating at 3"),
    Feature("digits", "report",
            lambda t: min(4 * len(_DIGITS.findall(t.text)) / max(len(t.text), 1), 1.0),
            "density of digits"),
    Feature("colon_head", "report",
            lambda t: float(bool(t.sentences) and bool(_COLON_HEAD.match(t.sentences[0]))),
            "opens with a short 'heading:'"),
    Feature("emoji", STYLE, lambda t: float(bool(_EMOJI.search(t.raw))), "contains an emoji"),
    Feature("lead_report", "completion", lambda t: _lead(t, _COMPLETION, _PERFECT),
            "the first sentence reports finished work"),
    Feature("lead_status", "status", lambda t: _lead(t, _STATUS), "the first sentence is status"),
    Feature("lead_recall", "recall", lambda t: _lead(t, _RECALL), "the first sentence recalls"),
    Feature("lead_error", "error", lambda t: _lead(t, _ERROR), "the first sentence is an error"),
    Feature("lead_choice", DECISION, _lead_choice,
            "the first sentence commits, chooses, contrasts or recommends before anything "
            "holds it back: a condition, a hedge or a memory ('If it comes back under 50ms, "
            "we should go with gRPC', 'I remember we picked Kafka'); a choice verb counts "
            "when the speaker chooses ('the authors chose BM25' reports a choice), and "
            "advice when the speaker gives it ('the docs recommend…' reports advice)"),
    Feature("later_choice", DECISION,
            lambda t: float(any(_commits(x) for x in t.sentences[1:])),
            "a later sentence commits or chooses as lead_choice reads the first"),
)  # fmt: skip


def feature_names() -> list[str]:
    return [f.name for f in FEATURES]


def features(response: str) -> list[float]:
    """The feature values of ``response`` (its first ``MAX_CHARS`` characters), in
    :data:`FEATURES` order."""
    t = _prepare(response[:MAX_CHARS])
    return [round(f.compute(t), 6) for f in FEATURES]
