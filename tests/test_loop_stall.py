"""A 1 MiB message (the documented maximum) must not stall the event loop (issue 23).

Before, one pre_turn + post_turn of a 1 MiB message kept every other task of the process
waiting 0.5-0.9 s: the message was tokenised, lowercased and embedded on the loop, once
per recalled source, though only its head was needed for most steps. Now the steps that
need a prefix read only the prefix, and those that need the whole text read it in a worker
thread in short native calls (``runtime.off_loop``, ``similarity.space_pieces``).

The pure checks here prove the rewritten steps give exactly what the whole-text versions
gave; the figure itself comes from ``benchmarks/loop_lag.py`` and the slow test below
(which reports, never asserts, a duration).
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Sequence
from itertools import pairwise

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_kernel import MemoryKernel
from memory_kernel.cognitive.draft import _cut, draft_decision, summarise_message
from memory_kernel.context import retrieval
from memory_kernel.embeddings import HashingEmbedder
from memory_kernel.embeddings.hashing import _counts
from memory_kernel.models.turns import TurnInput, TurnOutcome
from memory_kernel.runtime import OFF_LOOP_CHARS, off_loop
from memory_kernel.similarity import collapsed_head, space_pieces
from tests.loop_probe import max_stall

_WORD = re.compile(r"\w+")
# Whitespace of every kind, word characters, the final-sigma cases, sentence ends.
ALPHABET = [*"aZ _.?!…\n\t\u00a0\u2028\x1cΣσςΟΔİß’'\u0307#>*-", "Σ ", "ΟΔΟΣ", "Why? "]
texts = st.lists(st.sampled_from(ALPHABET), max_size=300).map("".join)


def _long(text: str, times: int) -> str:
    """``text`` repeated past a piece's length, so the piecewise paths run."""
    return (text + " ") * times


@settings(max_examples=200, deadline=None)
@given(text=texts, piece=st.integers(1, 40))
def test_space_pieces_tokenise_like_the_whole_text(text: str, piece: int) -> None:
    pieces = list(space_pieces(text, piece))
    assert "".join(pieces) == text
    joined = [t for p in pieces for t in _WORD.findall(p.lower())]
    assert joined == _WORD.findall(text.lower())


@settings(max_examples=50, deadline=None)
@given(text=texts, times=st.integers(1, 400))
def test_the_embedder_counts_a_long_text_like_a_short_one(text: str, times: int) -> None:
    long = _long(text, times)
    tokens = _WORD.findall(long.lower())
    unigrams, bigrams = _counts(long)
    assert list(unigrams.items()) == list(Counter(tokens).items())
    assert list(bigrams.items()) == list(Counter(pairwise(tokens)).items())


async def test_the_embedder_embeds_a_long_text_off_the_loop() -> None:
    embedder, text = HashingEmbedder(), "Shards move between regions nightly. " * 6000
    loop_thread = threading.get_ident()
    seen: list[int] = []
    original = embedder.embed_sync

    def spy(texts: Sequence[str]) -> npt.NDArray[np.float32]:
        seen.append(threading.get_ident())
        return original(texts)

    embedder.embed_sync = spy  # type: ignore[method-assign]
    vector = await embedder.embed([text])
    assert seen and seen[0] != loop_thread
    assert np.array_equal(vector, original([text]))
    await embedder.embed(["a short text"])
    assert seen[-1] == loop_thread  # a short one is not worth a thread hop


@settings(max_examples=200, deadline=None)
@given(text=texts, times=st.sampled_from([1, 3, 2000]))
def test_query_words_are_the_whole_texts_first_distinct_words(text: str, times: int) -> None:
    long = _long(text, times)
    whole = dict.fromkeys(
        w for w in _WORD.findall(long.lower()) if w not in retrieval._PG_STOPWORDS
    )
    assert retrieval.query_words(long) == list(whole)[:24]


@settings(max_examples=200, deadline=None)
@given(text=texts, times=st.sampled_from([1, 2, 50]), limit=st.sampled_from([1, 200, 500]))
def test_a_collapsed_head_cuts_like_the_whole_collapse(text: str, times: int, limit: int) -> None:
    long = _long(text, times)
    whole = " ".join(long.split())
    head = collapsed_head(long, limit)
    assert whole.startswith(head) and (head == whole or len(head) > limit)
    assert _cut(head, limit) == _cut(whole, limit)
    assert summarise_message(long) == _cut(whole, 200)


def test_a_drafted_reasoning_fits_a_decision() -> None:
    """A 1 MiB response drafts a reasoning within the decision's limit (64 KiB), cut at a
    sentence; before, the whole rest of the response was stored as the reasoning."""
    body = "We'll shard by region. " * 100 + "\n\n" + "Because latency matters. " * 40_000
    description, reasoning = draft_decision(TurnOutcome(response_text=body))
    assert description.startswith("We'll shard by region.")
    assert reasoning is not None and len(reasoning.encode()) <= 64 * 1024
    assert reasoning.endswith("Because latency matters.")


async def test_off_loop_uses_a_thread_only_for_long_texts() -> None:
    loop_thread = threading.get_ident()
    assert await off_loop(OFF_LOOP_CHARS, threading.get_ident) == loop_thread
    assert await off_loop(OFF_LOOP_CHARS + 1, threading.get_ident) != loop_thread


async def _turn_stall(kernel: MemoryKernel, message: str) -> tuple[float, float]:
    """The longest event-loop stall during one turn of ``message`` (also the response) and
    its prefetch: wall clock, and CPU of the loop's thread (``benchmarks/loop_lag.py``
    measures with the same probe)."""
    turn = TurnInput(agent_id="lag", session_id=f"s{len(message)}", message=message,
                     frame="decision")  # fmt: skip

    async def work() -> None:
        ctx = await kernel.pre_turn(turn)
        await kernel.post_turn(ctx.turn, TurnOutcome(response_text=message))
        await kernel.context.prefetch.wait()

    return await max_stall(work)


@pytest.mark.slow
async def test_report_the_loop_stall_of_a_1_mib_turn(kernel: MemoryKernel) -> None:
    """Reports (never asserts) the longest event-loop stall of whole turns of a 1 MiB
    message and response. Run with ``-s`` to see it."""
    await _turn_stall(kernel, "Shall we warm up?")
    words = [f"w{i % 5000}" for i in range(200_000)]  # a vocabulary of 5,000 words
    body = " ".join(words)[: 1024 * 1024 - 1]
    stalls = [await _turn_stall(kernel, body) for _ in range(3)]
    figures = ", ".join(f"{w * 1000:.0f} ms ({c * 1000:.0f} ms CPU)" for w, c in stalls)
    print(f"LOOP STALL of a 1 MiB turn: {figures}")
