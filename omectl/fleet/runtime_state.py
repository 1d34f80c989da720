"""What a hub holds of its FleetRuntimes, kept in a state directory for the hubless setup (docs/fleet-rollouts.md,
"Without a hub"): the object with its status, its revisions, its events, and the requests `omectl rollout` makes.

```
<state>/problems.json     what omectl run refuses in the files, one line each, by file (and name) (omectl run)
<state>/fleetruntimes/<name>/
  fleetruntime.json       the FleetRuntime as the controller holds it: the file's, with the requests below applied
                          (annotations, spec.rollout.paused), its metadata.generation and its status; `source` is
                          the file's own version it was made from                          (written by omectl run)
  revisions/<rev>.json    one per kept revision, shaped as the ControllerRevision a hub keeps   (omectl run)
  events.jsonl            its events, the newest 100, one JSON object a line                   (omectl run)
  requests.json           promote, abort and rollback tokens, pause and resume                 (omectl rollout)
```

The state directory is `<clusters-dir>/.omectl-state` unless the setting `fleet_state_dir` says otherwise. Each
file is written whole to a temporary file and renamed over the old one, so a reader (the CLI, a restarted
controller) sees the old version or the new one, never half of one; each has one writer, and `requests.json` is
changed under a lock so that two `omectl rollout` calls at once both count.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from omectl.problems import one_line, read_problem

__all__ = ["STATE_DIR_NAME", "FleetRuntimeState", "StateError", "default_state_dir", "with_requests"]

STATE_DIR_NAME = ".omectl-state"
EVENTS_KEPT = 100


class StateError(Exception):
    """A state file that cannot be read or written; the message names it (one line)."""


def default_state_dir(clusters_dir: Path | str) -> Path:
    """Where a hubless omectl keeps its FleetRuntimes' state unless told otherwise: beside the files."""
    return Path(clusters_dir) / STATE_DIR_NAME


def with_requests(obj: Mapping[str, Any], requests: Mapping[str, Any]) -> dict[str, Any]:
    """The FleetRuntime `obj` (as its file has it) with the requests of `omectl rollout` applied, as a hub's
    object has them: the request annotations over the file's own (a None value removes one), and a pause or resume
    as `spec.rollout.paused` for as long as the file's own `paused` is the value it was when the request was made (an
    edit of it in the file is newer, and wins)."""
    out = dict(obj)
    metadata = dict(out.get("metadata") or {})
    annotations = {**(metadata.get("annotations") or {}), **(requests.get("annotations") or {})}
    annotations = {k: v for k, v in annotations.items() if v is not None}
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    out["metadata"] = metadata
    paused = requests.get("paused")
    spec: Mapping[str, Any] = out["spec"] if isinstance(out.get("spec"), Mapping) else {}
    rollout = spec.get("rollout")
    if (
        isinstance(paused, Mapping)
        and isinstance(rollout, Mapping)
        and rollout.get("paused") == paused.get("specValue")
    ):
        out["spec"] = {**spec, "rollout": {**rollout, "paused": bool(paused.get("value"))}}
    return out


def _write(path: Path, text: str) -> None:
    """Write `path` whole, atomically (a temporary file in its directory, renamed over it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _dump(obj: Any) -> str:
    return json.dumps(obj, indent=2) + "\n"


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise StateError(f"cannot read {path}: {read_problem(exc)}") from None
    except json.JSONDecodeError as exc:
        raise StateError(f"{path}: not valid JSON: {one_line(exc)}") from None


class FleetRuntimeState:
    """The state directory `root` (the layout in the module docstring)."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def _dir(self, name: str) -> Path:
        return self.root / "fleetruntimes" / name

    # --- what is wrong with the files (omectl run) ----------------------------------------------------------

    def problems(self) -> dict[str, str]:
        found = _read(self.root / "problems.json")
        return found if isinstance(found, dict) else {}

    def write_problems(self, problems: Mapping[str, str]) -> None:
        path = self.root / "problems.json"
        if problems or path.exists():
            _write(path, _dump(dict(problems)))

    # --- the object (omectl run) ---------------------------------------------------------------------------

    def names(self) -> list[str]:
        """The FleetRuntimes whose object is kept."""
        base = self.root / "fleetruntimes"
        if not base.is_dir():
            return []
        return sorted(p.name for p in base.iterdir() if (p / "fleetruntime.json").is_file())

    def read(self, name: str) -> dict[str, Any] | None:
        found = _read(self._dir(name) / "fleetruntime.json")
        return found if isinstance(found, dict) else None

    def write(self, name: str, obj: Mapping[str, Any]) -> None:
        _write(self._dir(name) / "fleetruntime.json", _dump(obj))

    def remove(self, name: str) -> None:
        """Everything kept of a deleted FleetRuntime."""
        shutil.rmtree(self._dir(name), ignore_errors=True)

    # --- revisions (omectl run) ----------------------------------------------------------------------------

    def revisions(self, name: str) -> list[dict[str, Any]]:
        """The kept revisions, as ControllerRevisions (metadata.name, revision, data)."""
        base = self._dir(name) / "revisions"
        if not base.is_dir():
            return []
        found = (_read(path) for path in sorted(base.glob("*.json")))
        return [item for item in found if isinstance(item, dict)]

    def create_revision(self, name: str, revision: Mapping[str, Any]) -> bool:
        """Keep a new revision; False when one of its name is kept already (nothing is written then)."""
        path = self._dir(name) / "revisions" / f"{revision['metadata']['name']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(_dump(revision))
                out.flush()
                os.fsync(out.fileno())
            os.link(tmp, path)  # fails when it exists: a create, not a replace
        except FileExistsError:
            return False
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return True

    def renumber_revision(self, name: str, revision: str, number: int) -> None:
        path = self._dir(name) / "revisions" / f"{revision}.json"
        found = _read(path)
        if isinstance(found, dict):
            _write(path, _dump({**found, "revision": number}))

    def delete_revision(self, name: str, revision: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self._dir(name) / "revisions" / f"{revision}.json").unlink()

    # --- events (omectl run) -------------------------------------------------------------------------------

    def append_event(self, name: str, event: Mapping[str, Any]) -> None:
        path = self._dir(name) / "events.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
        lines = [*lines, json.dumps(event)][-EVENTS_KEPT:]
        _write(path, "\n".join(lines) + "\n")

    def events(self, name: str) -> list[dict[str, Any]]:
        path = self._dir(name) / "events.jsonl"
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in lines if line.strip()]

    # --- requests (omectl rollout) -------------------------------------------------------------------------

    def requests(self, name: str) -> dict[str, Any]:
        found = _read(self._dir(name) / "requests.json")
        return found if isinstance(found, dict) else {}

    def update_requests(self, name: str, change: Callable[[dict[str, Any]], None]) -> None:
        """Change the requests (`change` edits them in place), under the lock."""
        with self._locked(name):
            requests = self.requests(name)
            change(requests)
            _write(self._dir(name) / "requests.json", _dump(requests))

    @contextlib.contextmanager
    def _locked(self, name: str) -> Iterator[None]:
        try:
            self._dir(name).mkdir(parents=True, exist_ok=True)
            lock = (self._dir(name) / ".requests.lock").open("a")
        except OSError as exc:
            problem = read_problem(exc)
            raise StateError(f"cannot write the state of fleetruntime {name} in {self.root}: {problem}") from None
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield
