"""`omectl.cli.progress`: a bar on stderr for a wait over two seconds, only when stderr is a terminal."""

from __future__ import annotations

import asyncio
import io
import threading
import time

import pytest

from omectl.cli import progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


async def wait_for(event: threading.Event) -> int:
    await asyncio.get_running_loop().run_in_executor(None, event.wait, 30)
    return 1


def test_a_wait_past_the_delay_draws_the_bar_on_a_terminal_and_clears_it(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with progress.progress("reading the clusters", total=2, delay=0) as advance:
        deadline = time.monotonic() + 10
        while "reading the clusters" not in terminal.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)  # the bar is drawn by rich's refresh thread
        advance()
        advance()
    drawn = terminal.getvalue()
    assert "reading the clusters" in drawn
    assert drawn.rstrip().endswith("\x1b[2K")  # transient: the bar's line is erased when the wait ends


def test_a_short_wait_draws_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with progress.progress("quick", total=1) as advance:
        advance()
    assert terminal.getvalue() == ""


def test_nothing_is_drawn_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    pipe = io.StringIO()
    monkeypatch.setattr("sys.stderr", pipe)
    done = threading.Event()
    done.set()
    assert asyncio.run(progress.gather_with_progress("waiting", [wait_for(done), wait_for(done)])) == [1, 1]
    with progress.progress("waiting", delay=0):
        pass
    assert pipe.getvalue() == ""


def test_what_is_printed_meanwhile_stays_on_stdout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with progress.progress("starting", delay=0):
        deadline = time.monotonic() + 10
        while "starting" not in terminal.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
        print("a table line")
    assert "starting" in terminal.getvalue() and "a table line" not in terminal.getvalue()
    assert capsys.readouterr().out == "a table line\n"
