"""Kubeconfig files for one or many embedded clusters: one cluster, user and context per entry."""

from __future__ import annotations

import base64
import contextlib
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

__all__ = ["KubeconfigEntry", "build_kubeconfig", "write_kubeconfig"]


@dataclass
class KubeconfigEntry:
    """One cluster as a client reaches it; `name` names its cluster, user and context alike."""

    name: str
    server: str
    ca_pem: bytes | None = None
    insecure_skip_tls_verify: bool = False
    token: str = "embedded"
    namespace: str = "default"


def build_kubeconfig(entries: Sequence[KubeconfigEntry], current: str | None = None) -> dict[str, Any]:
    """The kubeconfig document; `current` (default: the first entry) becomes `current-context`."""
    names = [e.name for e in entries]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"duplicate kubeconfig entry names: {', '.join(duplicates)}")
    if current is not None and current not in names:
        raise ValueError(f"current context {current!r} is not one of the entries: {', '.join(names) or '(none)'}")
    clusters: list[dict[str, Any]] = []
    users: list[dict[str, Any]] = []
    contexts: list[dict[str, Any]] = []
    for entry in entries:
        if not entry.name:
            raise ValueError("a kubeconfig entry needs a name")
        if entry.ca_pem is not None and entry.insecure_skip_tls_verify:
            # kubectl refuses this combination ("specifying a root certificates file with the insecure flag").
            raise ValueError(f"entry {entry.name!r}: set either ca_pem or insecure_skip_tls_verify, not both")
        cluster: dict[str, Any] = {"server": entry.server}
        if entry.ca_pem is not None:
            cluster["certificate-authority-data"] = base64.b64encode(entry.ca_pem).decode("ascii")
        if entry.insecure_skip_tls_verify:
            cluster["insecure-skip-tls-verify"] = True
        clusters.append({"name": entry.name, "cluster": cluster})
        users.append({"name": entry.name, "user": {"token": entry.token}})
        contexts.append(
            {
                "name": entry.name,
                "context": {"cluster": entry.name, "user": entry.name, "namespace": entry.namespace},
            }
        )
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": clusters,
        "users": users,
        "contexts": contexts,
        "current-context": current if current is not None else (names[0] if names else ""),
    }


def write_kubeconfig(path: Path, entries: Sequence[KubeconfigEntry], current: str | None = None) -> Path:
    """Write the kubeconfig as YAML, mode 0600, atomically (temp file in the same folder, then rename)."""
    document = yaml.safe_dump(build_kubeconfig(entries, current), sort_keys=False, default_flow_style=False)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), 0o600)
            handle.write(document)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
        raise
    return target
