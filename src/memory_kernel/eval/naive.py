"""The naive baseline of the conversations suite: every raw turn kept in memory (numpy),
ranked by cosine to the question, the best ones filling the token budget.

Each turn is stored as ``"[20 May 2023] user: <content>"`` (its session's date, written as
the kernel's context writes dates, so a gold answer "20 May 2023" is found in either alike)
and embedded on its content alone, with the embedder the kernel uses. At question time the turns are
taken in cosine order (ties: conversation order); a turn that no longer fits the budget is
skipped and the next one tried. The sum of the lines' token counts stays within the
budget, which bounds the joined text's count (the counter is subadditive); what the joined
text really leaves of the budget is then filled with the first skipped turn, cut at a word
boundary, so the baseline spends the budget as fully as the kernel's context does
(compared at the same tokens, not at fewer).
"""

from __future__ import annotations

import numpy as np

from memory_kernel import Embedder, TokenCounter
from memory_kernel.context.dated import stamp
from memory_kernel.context.tokens import truncate
from memory_kernel.eval.dialogues import Dialogue
from memory_kernel.vectors import FloatMatrix

__all__ = ["NaiveStore"]

_BATCH = 128


def _unit_rows(matrix: FloatMatrix) -> FloatMatrix:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.asarray(matrix / np.where(norms == 0, 1.0, norms), dtype=np.float32)


class NaiveStore:
    """The raw turns of one dialogue."""

    def __init__(self, embedder: Embedder, counter: TokenCounter) -> None:
        self._embedder = embedder
        self._counter = counter
        self.lines: list[str] = []
        self._vectors = np.zeros((0, embedder.dim), dtype=np.float32)

    async def _embed(self, texts: list[str]) -> FloatMatrix:
        parts = [
            np.asarray(await self._embedder.embed(texts[i : i + _BATCH]), dtype=np.float32)
            for i in range(0, len(texts), _BATCH)
        ]
        if not parts:
            return np.zeros((0, self._embedder.dim), dtype=np.float32)
        return _unit_rows(np.vstack(parts))

    async def add(self, dialogue: Dialogue) -> None:
        contents = []
        for session in dialogue.sessions:
            for turn in session.turns:
                self.lines.append(f"{stamp(session.date)} {turn.role}: {turn.content}")
                contents.append(turn.content)
        self._vectors = np.vstack([self._vectors, await self._embed(contents)])

    async def context(self, question: str, budget: int) -> str:
        """The budget filled with the turns nearest to ``question``, nearest first."""
        if not self.lines:
            return ""
        query = (await self._embed([question]))[0]
        order = np.argsort(-(self._vectors @ query), kind="stable")
        chosen: list[str] = []
        skipped: str | None = None
        used = 0
        for index in order:
            line = self.lines[int(index)]
            cost = self._counter.count(line) + (1 if chosen else 0)  # the joining newline
            if used + cost <= budget:
                chosen.append(line)
                used += cost
            elif skipped is None:
                skipped = line
        text = "\n".join(chosen)
        if skipped is None:
            return text
        # The lines' counts overstate the joined text's: fill what is really left.
        return truncate(f"{text}\n{skipped}" if text else skipped, budget, self._counter)
