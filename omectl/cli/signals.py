"""How the serving commands (`omectl run`, `omectl dev up`) are stopped: SIGINT or SIGTERM, then a clean shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from types import TracebackType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignals:
    """Once installed (in a running event loop; or entered), SIGINT and SIGTERM set `stopped` instead of interrupting.

    `exit_code` afterwards: 130 when a Ctrl-C stopped the command (128 + SIGINT, what a shell reports for an
    interrupted command), else 0.
    """

    def __init__(self) -> None:
        self.stopped = asyncio.Event()
        self.received: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def __enter__(self) -> StopSignals:
        return self.install()

    def install(self) -> StopSignals:
        self._loop = asyncio.get_running_loop()
        for sig in STOP_SIGNALS:
            self._loop.add_signal_handler(sig, self._stop, sig)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

    def release(self) -> None:
        """Give the signals back (a Ctrl-C interrupts again): before a shutdown that a second Ctrl-C may cut short."""
        if self._loop is None:
            return
        for sig in STOP_SIGNALS:
            with contextlib.suppress(Exception):
                self._loop.remove_signal_handler(sig)
        self._loop = None

    def _stop(self, sig: int) -> None:
        if self.received is None:
            self.received = sig
        self.stopped.set()

    @property
    def exit_code(self) -> int:
        return 130 if self.received == signal.SIGINT else 0
