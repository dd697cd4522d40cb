"""Pure read-time rule: two recalled facts written in parallel, where the newer one puts
another word in place of the word the query asks about, are about two different things.

Look-alikes are written in parallel: "The new laptop has 32 GB of RAM." / "The new laptop
has a 1 TB SSD.", "We're shopping for a sofa in the $1,000-$1,500 range." / "... for a rug
in the $200-$400 range.". Both give a value of the kind a question asks for ("how much
RAM", "what is our sofa budget"), so the query alone ties them; but the word that names
the slot the query asks about ("RAM", "sofa") is replaced, in the same place of the same
frame, by another word ("SSD", "rug"). That is another attribute or another thing, not a
new value of this one.

"Written in parallel" here is the shape of the differences, not a share of words: every
difference is a substitution of a word or two for a word or two (nothing added, nothing
dropped), around at least one aligned word. An update is rarely said that way (people
explain a change: "Icelandair rebooked me - departure is now 2:15 p.m."); where it is,
and only a value changed, the write-time frame rules already call it an update
(``relation.ruled_update``) before this rule is asked.
"""

from __future__ import annotations

from difflib import SequenceMatcher

from memory_kernel.heart.facts.pairs import covered
from memory_kernel.heart.facts.query_slot import Query
from memory_kernel.heart.facts.slots import GENERIC, Statement, stem_is_verb

__all__ = ["MAX_SWAPPED", "other_time", "swapped_in"]

#: Words one substitution may replace on each side: a word or a compound ("standing
#: desks" -> "monitor arms"); a longer span is a rewrite, not a parallel sentence.
MAX_SWAPPED = 2

Item = tuple[str, str, str]


def _words(items: list[Item]) -> list[str]:
    """The content words of a span (values and identifiers aside)."""
    return [key for kind, key, _ in items if kind in ("h", "p")]


def _things(items: list[Item]) -> list[Item]:
    """The words of a span that name a thing or an attribute: a verb after the subject is
    often said another way ("leaves" / "goes"), so only a noun swapped tells."""
    return [i for i in items if i[0] == "h" or (i[0] == "p" and not stem_is_verb(i[1]))]


def _asked(word: str, query: Query) -> bool:
    return covered((word,), query.content) > 0


def swapped_in(query: Query, old: Statement, new: Statement) -> tuple[str, ...]:
    """The words (as ``new`` writes them) that ``new``, written in parallel with ``old``,
    puts in place of a word of the query's found in ``old`` (and nowhere else in ``new``);
    empty where there is no such swap."""
    if not query.content:
        return ()
    a, b = list(old.items), list(new.items)
    matcher = SequenceMatcher(a=[i[1] for i in a], b=[i[1] for i in b], autojunk=False)
    differing = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if not differing or len(differing) == len(matcher.get_opcodes()):
        return ()  # the same statement, or nothing aligned at all
    swapped: list[str] = []
    for tag, i1, i2, j1, j2 in differing:
        gone, came = _words(a[i1:i2]), _words(b[j1:j2])
        if tag != "replace" and (gone or came):
            return ()  # a word added or dropped: not written in parallel
        if len(gone) > MAX_SWAPPED or len(came) > MAX_SWAPPED:
            return ()
        lost = [
            key for _, key, _ in _things(a[i1:i2])
            if _asked(key, query) and covered((key,), new.topic_pool) == 0
        ]  # fmt: skip
        # Replaced by a thing, not left out beside a time word ("I can do 5 strict
        # pull-ups" / "Hit 8 strict today!!").
        put = [raw for _, key, raw in _things(b[j1:j2]) if key not in GENERIC]
        if lost and put and not any(_asked(w, query) for w in came):
            swapped.extend(put)
    return tuple(swapped)


def other_time(query: Query, old: Statement, new: Statement) -> bool:
    """The query pins a period ("in June", "on Sundays", "in 2019") that ``old`` gives and
    ``new`` does not, where ``new`` gives another of that kind: ``new`` is about another
    period ("Electric bill for May was $96" / "June's bill is $130", asked "my bill in
    May"), not a new value of the asked one."""
    return any(
        period in old.values and period not in new.values and period[0] in new.value_types
        for period in query.periods
    )
