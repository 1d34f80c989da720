"""FleetRuntimes read from a directory, for the hubless setup (docs/fleet-rollouts.md, "Without a hub").

The FleetRuntime documents (`fleet.omectl.io/v1alpha1`, `kind: FleetRuntime`) of the `*.yaml` / `*.yml` files of
one directory, not recursive: the clusters directory, where they sit beside the ClusterRegistrations as they sit
beside the registration Secrets in a hub. A file may hold several documents; documents of other kinds are ignored.

What a hub's API server refuses at apply time is refused here, one line each (`Scan.errors`), and the FleetRuntime
keeps the version accepted before (`Scan.refused`): a document whose `check` fails, a name that is not a valid
name, the same name twice. A file that cannot be read or parsed, or a FleetRuntime document without a name, leaves
the scan incomplete: which FleetRuntimes it holds is unknown, so none may be taken for deleted until it is fixed
(a typo must not delete a runtime from every cluster).

Files are read again at each scan; only those whose bytes changed are parsed again. Imports YAML only: the CLI reads
these files without the API models (the controller passes their check in).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from omectl.problems import read_problem, yaml_problem

__all__ = ["API_VERSION", "KIND", "FleetRuntimeFiles", "FoundRuntime", "Scan", "name_problem"]

API_VERSION = "fleet.omectl.io/v1alpha1"
KIND = "FleetRuntime"
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_NAME_MAX = 63  # the name is also a label value on every copy (fleet.omectl.io/fleetruntime)

Check = Callable[[Mapping[str, Any]], str | None]
"""Why a FleetRuntime document is refused (one line), or None."""


def name_problem(name: object) -> str | None:
    """Why `name` cannot name a FleetRuntime, or None."""
    if not isinstance(name, str) or not name:
        return "metadata.name is missing"
    if len(name) > _NAME_MAX or not _NAME.match(name):
        return (
            f'invalid name "{name}": use lowercase letters, digits, "-" and ".", starting and ending with a letter '
            f"or digit (at most {_NAME_MAX} characters)"
        )
    return None


@dataclass(frozen=True)
class FoundRuntime:
    """One FleetRuntime as its file has it (its `status`, if the file has one, dropped: the controller owns it)."""

    document: dict[str, Any]
    file: Path


@dataclass
class Scan:
    runtimes: dict[str, FoundRuntime] = field(default_factory=dict)
    """The accepted FleetRuntimes, by name."""
    refused: set[str] = field(default_factory=set)
    """Names whose document is there but refused: the version accepted before stands."""
    errors: dict[str, str] = field(default_factory=dict)
    """What is wrong, one line each, by source (a file, or a file and a name)."""
    complete: bool = True
    """Every file was read and every FleetRuntime document has a name: one not found here is deleted."""
    served: bool = True
    """The directory exists (a missing one holds nothing, and deletes nothing either)."""


@dataclass
class _Parsed:
    content: bytes
    documents: list[Any] | None
    problem: str | None


class FleetRuntimeFiles:
    """The FleetRuntime files of `directory`; `check` refuses a document as a hub's API server would (its schema)."""

    def __init__(self, directory: Path | str, *, check: Check | None = None) -> None:
        self.directory = Path(directory)
        self.check = check
        self._parsed: dict[Path, _Parsed] = {}

    def scan(self) -> Scan:
        """Read the directory now."""
        scan = Scan()
        if not self.directory.is_dir():  # the registry says so already, in one line
            scan.served = scan.complete = False
            self._parsed.clear()
            return scan
        files = sorted(
            (p for p in self.directory.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file()), key=lambda p: p.name
        )
        self._parsed = {path: parsed for path, parsed in self._parsed.items() if path in files}
        for path in files:
            parsed = self._parse(path)
            if parsed.problem is not None:
                scan.errors[str(path)] = f"{path}: {parsed.problem}"
                scan.complete = False
                continue
            for document in parsed.documents or []:
                self._take(scan, path, document)
        return scan

    def _parse(self, path: Path) -> _Parsed:
        try:
            content = path.read_bytes()
        except OSError as exc:
            return _Parsed(b"", None, f"cannot be read: {read_problem(exc)}")
        known = self._parsed.get(path)
        if known is not None and known.content == content:
            return known
        try:
            documents = [d for d in yaml.safe_load_all(content.decode("utf-8")) if d is not None]
            parsed = _Parsed(content, documents, None)
        except UnicodeDecodeError as exc:
            parsed = _Parsed(content, None, read_problem(exc))
        except yaml.YAMLError as exc:
            parsed = _Parsed(content, None, f"invalid YAML: {yaml_problem(exc)}")
        self._parsed[path] = parsed
        return parsed

    def _take(self, scan: Scan, path: Path, document: Any) -> None:
        if not isinstance(document, dict) or document.get("kind") != KIND:
            return  # a ClusterRegistration, a kind config: not ours
        name = (document.get("metadata") or {}).get("name") if isinstance(document.get("metadata"), dict) else None
        problem = name_problem(name)
        if problem is not None:
            if not isinstance(name, str) or not name:
                scan.complete = False  # a FleetRuntime that names nothing: any could be the one it was
            scan.errors[f"{path}: {name or '?'}"] = f"{path}: a FleetRuntime: {problem}"
            if isinstance(name, str) and name:
                scan.refused.add(name)
            return
        assert isinstance(name, str)
        source = f"{path}: {name}"
        first = scan.runtimes.get(name)
        if first is not None:
            scan.errors[source] = f'{path}: duplicate FleetRuntime "{name}" (first in {first.file.name}): ignored'
            return
        if document.get("apiVersion") != API_VERSION:
            problem = f"apiVersion must be {API_VERSION}, not {document.get('apiVersion')!r}"
        elif self.check is not None:
            problem = self.check(document)
        if problem is not None:
            scan.errors[source] = f"{path}: fleetruntime {name}: {problem}"
            scan.refused.add(name)
            return
        scan.runtimes[name] = FoundRuntime({k: v for k, v in document.items() if k != "status"}, path)
