"""`omectl cluster status`: what the running controller says about every registered cluster, asked of the
controller itself.

`omectl run` serves its state at `GET /status` on its metrics and health port and writes that address into its
status file (`statusUrl`) every second, with the time it wrote it (`observedAt`). This module reads the file only to
find the controller: the state comes from the answer at that address, so a controller that was killed (its file
left behind) is "not running", last seen at the file's `observedAt`, never a healthy-looking table. Only a controller
started with `--metrics-port -1` serves no `/status`: then its file is believed while its pid is alive.

Stdlib only (urllib for the one request): the command starts without the HTTP client stack.
"""

from __future__ import annotations

import calendar
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omectl.cli.reports import Column, OutputFormat, render, render_document
from omectl.problems import one_line, read_problem

__all__ = ["ControllerView", "StatusFileError", "StatusReport", "controller_view", "read_status_file"]


class StatusFileError(ValueError):
    """The status file cannot be read, or is not one; the message names it."""


def read_status_file(path: Path) -> dict[str, Any] | None:
    """The status file's document; None when there is none (no controller ever ran here, or it stopped cleanly)."""
    if not path.exists():
        return None
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise StatusFileError(f"cannot read {path}: {read_problem(exc)}") from None
    except json.JSONDecodeError:
        document = None
    clusters = document.get("clusters", []) if isinstance(document, dict) else None
    if not isinstance(clusters, list) or not all(isinstance(c, dict) and "name" in c for c in clusters):
        raise StatusFileError(f"{path}: not a controller status file")
    assert isinstance(document, dict)
    return document


def _pid_alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        return True
    return True


def _seconds_since(stamp: Any) -> float | None:
    if not isinstance(stamp, str):
        return None
    try:
        return max(0.0, time.time() - calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return None


def age(stamp: Any) -> str:
    """`stamp` (RFC 3339, UTC) as kubectl prints an age: 12s, 5m, 3h, 2d; `<never>` when there is none."""
    seconds = _seconds_since(stamp)
    if seconds is None:
        return "<never>"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


@dataclass
class ControllerView:
    """The controller as `cluster status` found it."""

    running: bool
    document: dict[str, Any] | None = None
    """Its state: from `/status` when it runs (or its file, when it serves none); the file's when it is down."""
    source: str = ""
    """`status` (asked at `url`), `status file` (it serves no /status), or `` (no controller)."""
    url: str | None = None
    why_down: str = ""

    @property
    def pid(self) -> Any:
        return (self.document or {}).get("pid")

    @property
    def last_seen(self) -> str | None:
        seen = (self.document or {}).get("observedAt")
        return seen if isinstance(seen, str) else None

    def describe(self) -> str:
        if self.running and self.source == "status":
            return f"running (pid {self.pid}, {self.url})"
        if self.running:
            return (
                f"running (pid {self.pid}; from its status file: it serves no /status, started with --metrics-port -1)"
            )
        if self.document is None:
            return f"not running ({self.why_down})"
        seen = f"last seen {self.last_seen}, {age(self.last_seen)} ago" if self.last_seen else "never seen"
        return f"not running (pid {self.pid}, {seen}; {self.why_down})"

    def failure(self, status_file: Path) -> str:
        if self.document is None:
            return f"no running controller found ({status_file} does not exist); start one with `omectl run`"
        seen = f", last seen {self.last_seen}" if self.last_seen else ""
        return f"the controller is not running (pid {self.pid}{seen}: {self.why_down}); start one with `omectl run`"

    def to_dict(self) -> dict[str, Any]:
        return {
            "running": self.running,
            "source": self.source or None,
            "pid": self.pid,
            "statusUrl": self.url,
            "lastSeen": self.last_seen,
            "reason": self.why_down or None,
        }


def controller_view(status_file: Path, timeout: float) -> ControllerView:
    """Find the controller through its status file and ask it (`StatusFileError` for a file that is not one)."""
    recorded = read_status_file(status_file)
    if recorded is None:
        return ControllerView(False, why_down=f"{status_file} does not exist")
    url = recorded.get("statusUrl")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        if _pid_alive(recorded.get("pid")):
            return ControllerView(True, recorded, source="status file")
        return ControllerView(False, recorded, why_down=f"no process {recorded.get('pid')}")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:
            live = json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return ControllerView(False, recorded, url=url, why_down=f"{url} answered {exc.code}")
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        return ControllerView(False, recorded, url=url, why_down=f"{url} does not answer: {one_line(reason)}")
    if not isinstance(live, dict) or not isinstance(live.get("clusters"), list):
        return ControllerView(False, recorded, url=url, why_down=f"{url} did not answer with a controller status")
    return ControllerView(True, live, source="status", url=url)


def _yes(value: Any) -> str:
    return "yes" if value else "no"


@dataclass
class StatusReport:
    controller: ControllerView
    registered: list[str]
    registry_errors: dict[str, str] = field(default_factory=dict)
    members: list[Any] = field(default_factory=list)
    only: set[str] | None = None
    """The clusters a label selector chose (None: every cluster)."""

    def clusters(self) -> list[dict[str, Any]]:
        """Every registered cluster, and every cluster the controller reports: one entry each, by name."""
        reported = {c["name"]: c for c in (self.controller.document or {}).get("clusters", []) if isinstance(c, dict)}
        entries = []
        for name in sorted(set(self.registered) | set(reported)):
            if self.only is not None and name not in self.only:
                continue
            entry: dict[str, Any] = {"name": name, "registered": name in self.registered}
            found = reported.get(name)
            if self.controller.running and found is not None:
                entry |= found
                entry.setdefault("state", "ready" if found.get("synced") else "syncing")
            elif self.controller.running:
                entry |= {"state": "not served", "lastError": None}
            else:  # not running: what it said last, so an error is never lost with the process
                last = found or {}
                entry |= {
                    "state": "not served",
                    "errors": last.get("errors", 0),
                    "lastError": last.get("lastError"),
                    "lastErrorTime": last.get("lastErrorTime"),
                    "lastReconcileTime": last.get("lastReconcileTime"),
                }
            entries.append(entry)
        return entries

    def to_dict(self) -> dict[str, Any]:
        document = (self.controller.document or {}) if self.controller.running else {}
        return {
            "controller": self.controller.to_dict(),
            "clusters": self.clusters(),
            "registryErrors": {**(document.get("registryErrors") or {}), **self.registry_errors},
            "resolver": document.get("resolver"),
            "queueDepth": document.get("queueDepth"),
            "members": [m.to_dict() for m in self.members],
        }

    def render(self, output: OutputFormat) -> str:
        if output.is_document:
            return render_document(self.to_dict(), output)
        if output is OutputFormat.name:
            return render(self.clusters(), [], output, kind="cluster", name=lambda entry: entry["name"])
        return "\n".join(self._table_lines(output))

    def _cluster_columns(self) -> list[Column[dict[str, Any]]]:
        running = self.controller.running

        def served(entry: dict[str, Any]) -> bool:
            return running and entry["state"] != "not served"

        def cell(key: str) -> Callable[[dict[str, Any]], str]:
            return lambda entry: str(entry.get(key, 0)) if served(entry) else "-"

        def last_error(entry: dict[str, Any]) -> str:
            return one_line(entry.get("lastError") or ("<unknown>" if entry.get("errors") else "<none>"))

        return [
            Column("NAME", lambda e: e["name"]),
            Column("STATE", lambda e: e["state"]),
            Column("SERVER", lambda e: e.get("server") or "-", wide=True),
            Column("REGISTERED", lambda e: _yes(e["registered"]), wide=True),
            Column("CONNECTED", lambda e: _yes(e.get("connected")) if served(e) else "-"),
            Column("SYNCED", lambda e: _yes(e.get("synced")) if served(e) else "-"),
            Column("OBJECTS", cell("objectsCached")),
            Column("RECONCILES", cell("reconciles")),
            Column("ERRORS", lambda e: str(e.get("errors") or 0)),
            Column("QUEUE", cell("queueDepth")),
            Column("LAST RECONCILE", lambda e: age(e.get("lastReconcileTime")) if served(e) else "-"),
            Column("LAST ERROR TIME", lambda e: e.get("lastErrorTime") or "-", wide=True),
            Column("LAST ERROR", last_error),
        ]

    def _table_lines(self, output: OutputFormat) -> list[str]:
        running = self.controller.running
        lines = [f"controller: {self.controller.describe()}", ""]
        entries = self.clusters()
        lines.append(render(entries, self._cluster_columns(), output) if entries else "no clusters")
        document = self.controller.document or {}
        if running:
            resolver = document.get("resolver") or {}
            lines += [
                "",
                f"resolver: {resolver.get('entries', 0)} cached merges, {resolver.get('hits', 0)} hits, "
                f"{resolver.get('misses', 0)} misses; queue depth {document.get('queueDepth', 0)}",
            ]
        errors = {**((document.get("registryErrors") or {}) if running else {}), **self.registry_errors}
        if errors:
            lines += ["", "ERRORS", *(f"  {errors[source]}" for source in sorted(errors))]
        lines += self._member_lines(output)
        return lines

    def _member_lines(self, output: OutputFormat) -> list[str]:
        """What the members say: who holds each cluster and whether its webhooks answer; each problem with its fix."""
        if not self.members:
            return []
        columns: list[Column[Any]] = [
            Column("CLUSTER", lambda m: m.cluster),
            Column("OWNER", lambda m: m.owner or "<none>"),
            Column("OWNER LIVE", lambda m: "-" if m.owner is None else _yes(m.lease_fresh), wide=True),
            Column("WEBHOOKS", lambda m: m.webhooks),
            Column("FAILURE POLICY", lambda m: m.failure_policy or "-", wide=True),
        ]
        lines = ["", render(self.members, columns, output)]
        problems = [m for m in self.members if m.problem]
        if problems:
            lines += ["", "PROBLEMS"]
            lines += [f"  {m.cluster}: {m.problem}" + (f"; fix: {m.fix}" if m.fix else "") for m in problems]
        return lines
