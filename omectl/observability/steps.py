"""How long a coroutine holds the event loop at a time: its longest synchronous segment (one step of its task, from
the loop resuming it to its next suspension).

`timed_steps(coro, report)` drives `coro` as `await coro` would and, when it finishes, reports the longest step it
took (an `await` of something already done does not end a step: only a real suspension does). The cost is two clock
reads per step, cheap enough to leave on for every reconcile. `SlowSteps` names the code of the steps past a
threshold: where the step resumed, where it suspended again, and the functions a sampling thread saw the loop's
thread in while the step ran (a step of 50 ms gets about ten samples).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
import sysconfig
import threading
import time
import types
from collections import Counter
from collections.abc import Callable, Coroutine, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from omectl.turn_share import TurnShare

__all__ = ["SlowStep", "SlowSteps", "suspended_at", "timed_steps"]

T = TypeVar("T")
log = logging.getLogger(__name__)


def suspended_at(coro: object) -> str:
    """Where `coro` waits (or resumes): the innermost frame of its await chain that is not the standard library's
    or a dependency's, then the innermost of all where that differs, as `file:line function < file:line function`."""
    frames = []
    owner: object | None = coro
    while owner is not None:
        frame = getattr(owner, "cr_frame", None) or getattr(owner, "gi_frame", None)
        if frame is None:
            break
        frames.append(f"{_short(frame.f_code.co_filename)}:{frame.f_lineno} {frame.f_code.co_name}")
        owner = getattr(owner, "cr_await", None) or getattr(owner, "gi_yieldfrom", None)
    return _hot_frame(tuple(reversed(frames))) if frames else "?"


_LIBRARIES = (sysconfig.get_paths()["stdlib"], "site-packages/", "<frozen")


def _short(path: str) -> str:
    marker = path.rfind("/omectl/")
    if marker >= 0:
        return path[marker + 1 :]
    marker = path.rfind("site-packages/")
    return path[marker:] if marker >= 0 else path


def _hot_frame(stack: tuple[str, ...]) -> str:
    """The innermost of `stack` (innermost first) that is the project's own code, with the innermost of all."""
    own = next((frame for frame in stack if not frame.startswith(_LIBRARIES)), None)
    if own is None or own == stack[0]:
        return own or stack[0]
    return f"{own} < {stack[0]}"


@types.coroutine
def timed_steps(
    coro: Coroutine[Any, Any, T],
    report: Callable[[float], None],
    slow: SlowSteps | None = None,
    label: str = "",
    share: TurnShare | None = None,
) -> Generator[Any, Any, T]:
    """Run `coro` (await the result) and call `report(longest step in seconds)` once it ends, however it ends.

    With `slow`, each step longer than `slow.threshold` is recorded there under `label`, with where it ran; with
    `share`, each step is spent from it (`omectl.turn_share`)."""
    clock = time.perf_counter
    longest = 0.0
    value: Any = None
    error: BaseException | None = None
    resumed_at = "start"
    try:
        while True:
            started = clock()
            if slow is not None:
                slow.running = (started, [])
                cpu_started = time.thread_time()
            finished = False
            try:
                yielded = coro.send(value) if error is None else coro.throw(error)
            except StopIteration as stop:
                finished = True
                yielded, result = None, stop.value
            finally:
                elapsed = clock() - started
                longest = max(longest, elapsed)
                if share is not None:
                    share.spend(elapsed)
                if slow is not None:
                    _, samples = slow.running or (0.0, [])
                    slow.running = None
                    if elapsed >= slow.threshold:
                        ended = "end" if finished else suspended_at(coro)
                        cpu = time.thread_time() - cpu_started
                        slow.record(SlowStep(label, elapsed, resumed_at, ended, samples, cpu))
                    resumed_at = suspended_at(coro) if not finished else resumed_at
            if finished:
                return result  # type: ignore[no-any-return]
            error = None
            try:
                value = yield yielded
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # delivered into `coro`, as `await` would (a cancellation, a future's error)
                value, error = None, exc
    finally:
        report(longest)


@dataclass(frozen=True, slots=True)
class SlowStep:
    label: str
    seconds: float
    resumed_at: str
    suspended_at: str
    samples: list[tuple[str, ...]]
    """Each sample: the loop thread's stack, innermost frame first, as `file:line function`."""
    cpu_seconds: float
    """Of `seconds`, the time the loop's thread ran on a CPU (the rest it waited for one: a busy machine)."""

    def hot(self, top: int = 3) -> list[tuple[str, int]]:
        """The innermost omectl frames the samples saw most often (with the innermost frame of all where that is
        not omectl's own), with how often."""
        counts = Counter(_hot_frame(stack) for stack in self.samples if stack)
        return counts.most_common(top)


@dataclass
class SlowSteps:
    """Collects the steps that held the loop `threshold` seconds or more; `start()` adds a sampling thread that
    takes the loop thread's stack every `sample_every` seconds while a timed step runs, and also while the loop
    has not run a heartbeat callback for `threshold` (whatever holds it: a reconcile, an informer, a callback of
    aiohttp's), and times the garbage collector's passes (which no stack shows)."""

    threshold: float
    sample_every: float = 0.005
    keep: int = 200
    steps: list[SlowStep] = field(default_factory=list)
    running: tuple[float, list[tuple[str, ...]]] | None = None
    gc_pauses: list[tuple[int, float]] = field(default_factory=list)
    """(generation, seconds) of each collection that took `threshold / 5` or more."""
    _thread: threading.Thread | None = None
    _stopping: threading.Event = field(default_factory=threading.Event)
    _loop_thread: int = 0
    _beat_at: float = 0.0
    _beat_cpu: float = 0.0
    _gc_started: float = 0.0
    _gc_cpu_started: float = 0.0

    def record(self, step: SlowStep) -> None:
        if len(self.steps) < self.keep:
            self.steps.append(step)
        hot = ", ".join(f"{where} x{count}" for where, count in step.hot())
        log.warning(
            "%s held the event loop %.0f ms (%.0f ms on the CPU), from %s to %s; sampled in: %s",
            step.label,
            step.seconds * 1000,
            step.cpu_seconds * 1000,
            step.resumed_at,
            step.suspended_at,
            hot or "no samples",
        )

    def start(self) -> None:
        """Sample from a thread of its own (call on the loop's thread, with the loop running)."""
        self._loop_thread = threading.get_ident()
        self._beat()
        gc.callbacks.append(self._gc)
        self._thread = threading.Thread(target=self._sample, name="omectl-slow-steps", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._gc in gc.callbacks:
            gc.callbacks.remove(self._gc)
        if self._thread is not None:
            self._thread.join(1)

    def _beat(self) -> None:
        self._beat_cpu = time.thread_time()
        self._beat_at = time.perf_counter()
        if not self._stopping.is_set():
            asyncio.get_running_loop().call_later(self.sample_every, self._beat)

    def _gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
            self._gc_cpu_started = time.thread_time()
            return
        took = time.perf_counter() - self._gc_started
        cpu = time.thread_time() - self._gc_cpu_started
        # a full pass is told from a fifth of the threshold on (it is what the freezing shortens), any pass from it
        generation = info.get("generation")
        if took >= self.threshold or (generation == 2 and took >= self.threshold / 5):
            self.gc_pauses.append((int(info.get("generation", -1)), took))
            # the collector walks every object of the generations it collects: say how many there are (not how many
            # are frozen: counting those walks them all, a stall of its own)
            tracked = len(gc.get_objects(2)) if generation == 2 else 0
            log.warning(
                "a garbage collection of generation %s held the event loop %.0f ms (%.0f ms on the CPU; %d collected, "
                "%d objects in generation 2)",
                generation,
                took * 1000,
                cpu * 1000,
                info.get("collected", 0),
                tracked,
            )

    def _stack(self) -> tuple[str, ...]:
        frame = sys._current_frames().get(self._loop_thread)
        stack: list[str] = []
        while frame is not None and len(stack) < 40:
            stack.append(f"{_short(frame.f_code.co_filename)}:{frame.f_lineno} {frame.f_code.co_name}")
            frame = frame.f_back
        return tuple(stack)

    def _sample(self) -> None:
        stall: list[tuple[str, ...]] = []
        stalled_since = cpu_since = 0.0
        while not self._stopping.wait(self.sample_every):
            now = time.perf_counter()
            running = self.running
            if running is not None and now - running[0] >= self.sample_every:
                stack = self._stack()
                if self.running is running:
                    running[1].append(stack)
            if now - self._beat_at >= self.sample_every * 2:
                if not stall:
                    stalled_since, cpu_since = self._beat_at, self._beat_cpu
                stall.append(self._stack())
            elif stall:
                held = self._beat_at - stalled_since - self.sample_every
                if held >= self.threshold:
                    step = SlowStep("event-loop", held, "?", "?", stall, self._beat_cpu - cpu_since)
                    self.record(step)
                stall = []
