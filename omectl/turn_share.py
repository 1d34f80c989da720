"""Shares of an event loop's turn: how much of one turn a kind of work may take before it lets the rest run.

A loop turn runs every callback that was ready when it began, back to back; nothing else (a /healthz answer, a
watch line, a timer) runs until the last one returns. When many tasks of one kind become ready together (ten
clusters' watch bursts, sixteen workers resuming), their steps fill one turn: at 10 clusters 100-200 ms. Each kind
of work takes a `TurnShare` of the running loop: the tasks of that kind add what each step took (`spend`), and
before starting the next piece of work a task waits (`wait_for_share`) while the kind's spending in this turn is
past its share; the turn then ends and the waiting tasks go on, in order, in the next one. A reset is queued with
the first spending of a turn, before any task of the kind yields, so it runs before they resume.
"""

from __future__ import annotations

import asyncio
import weakref

__all__ = ["TurnShare", "turn_share"]


class TurnShare:
    """What one kind of work has spent of the loop's current turn, against `seconds` a turn."""

    def __init__(self, loop: asyncio.AbstractEventLoop, seconds: float) -> None:
        self._loop = loop
        self.seconds = seconds
        self.spent = 0.0
        self._reset_queued = False

    def spend(self, seconds: float) -> None:
        self.spent += seconds
        if not self._reset_queued:
            self._reset_queued = True
            self._loop.call_soon(self._reset)

    async def wait_for_share(self) -> None:
        """Return at once while this turn's share lasts; else after the turns in which it was spent."""
        while self.spent >= self.seconds:  # noqa: ASYNC110 (a yield to the loop's next turn: nothing to await)
            await asyncio.sleep(0)

    def _reset(self) -> None:
        self.spent = 0.0
        self._reset_queued = False


_shares: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, TurnShare]] = weakref.WeakKeyDictionary()


def turn_share(kind: str, seconds: float) -> TurnShare:
    """The running loop's share for `kind` (created with `seconds` a turn the first time it is asked for)."""
    loop = asyncio.get_running_loop()
    shares = _shares.get(loop)
    if shares is None:
        shares = _shares[loop] = {}
    share = shares.get(kind)
    if share is None:
        share = shares[kind] = TurnShare(loop, seconds)
    return share
