"""A progress bar for a wait that may last: rich's, on stderr, shown only once the wait passes two seconds and only
when stderr is a terminal, so pipes, files and tests see exactly the output they saw before."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

__all__ = ["SHOW_AFTER", "gather_with_progress", "progress"]

T = TypeVar("T")

SHOW_AFTER = 2.0  # seconds: a shorter wait shows nothing


@contextmanager
def progress(description: str, total: int | None = None, *, delay: float = SHOW_AFTER) -> Iterator[Callable[[], None]]:
    """A bar of `total` steps (a spinner without one) labelled `description`, drawn on stderr once `delay` seconds
    passed; yields the function that advances it one step. Nothing at all when stderr is not a terminal."""
    if not sys.stderr.isatty():
        yield lambda: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = [SpinnerColumn(), TextColumn("{task.description}")]
    if total is not None:
        columns += [BarColumn(), MofNCompleteColumn()]
    # Output printed meanwhile stays on its own stream (rich would move stdout onto the bar's stderr console)
    bar = Progress(
        *columns,
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
        redirect_stdout=False,
        redirect_stderr=False,
    )
    task = bar.add_task(description, total=total)
    lock = threading.Lock()
    done = False

    def show() -> None:
        with lock:
            if not done:
                bar.start()

    timer = threading.Timer(delay, show)
    timer.daemon = True
    timer.start()
    try:
        yield lambda: bar.advance(task)
    finally:
        with lock:
            done = True
            timer.cancel()
            bar.stop()


async def gather_with_progress(description: str, waits: Sequence[Awaitable[T]]) -> list[T]:
    """`asyncio.gather(*waits)`, with a bar that counts the ones done (see `progress`)."""
    with progress(description, total=len(waits)) as advance:

        async def one(wait: Awaitable[T]) -> T:
            try:
                return await wait
            finally:
                advance()

        return list(await asyncio.gather(*(one(wait) for wait in waits)))
