"""What the keepers of a member's webhook objects share (`keeper.WebhookKeeper`, the webhook configuration;
`conversion_keeper.ConversionKeeper`, the AIM CRDs' conversion): a task of their own that, each time a watch event
marks the kept objects dirty, brings them to `desired()` (`_keep`), retrying a failed write with backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, ClassVar

from omectl.kube.client import ClusterClient, KubeError

RETRY = (0.5, 30.0)  # backoff between failed writes, s


class Keeper:
    """Keeps something of one member as `desired()` says; every write passes `writing()` (the cluster's write
    fence). A subclass runs its informers in `_run` around `_keep_while_running` and says in `_keep` what one pass
    does."""

    task_prefix: ClassVar[str]
    """The task's name, before the cluster's."""
    keeping: ClassVar[str]
    """What a failed pass was doing, for its warning."""
    logger: ClassVar[logging.Logger]
    """The subclass's module logger, which its warnings keep."""

    def __init__(
        self,
        cluster: str,
        client: ClusterClient,
        desired: Callable[[], dict[str, Any]],
        writing: Callable[[], AbstractContextManager[None]],
    ) -> None:
        self.cluster = cluster
        self.client = client
        self.desired = desired
        self.writing = writing
        self.applied = 0  # writes that put the kept objects (back) in place
        self._dirty = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def _changed(self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool) -> None:
        self._dirty.set()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"{self.task_prefix}-{self.cluster}")

    async def _run(self) -> None:
        raise NotImplementedError

    async def _keep(self, desired: dict[str, Any]) -> bool:
        """One pass: bring the kept objects to `desired`; False when there was nothing to do."""
        raise NotImplementedError

    async def _keep_while_running(self) -> None:
        """Keep the objects on every dirty mark until cancelled (the caller marks the first)."""
        delay = RETRY[0]
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            try:
                if not await self._keep(self.desired()):
                    continue
            except KubeError as exc:
                self.logger.warning("cluster %s: %s failed (%s); retrying", self.cluster, self.keeping, exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY[1])
                self._dirty.set()
                continue
            delay = RETRY[0]

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
