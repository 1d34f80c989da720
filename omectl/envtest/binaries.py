"""Where `make envtest` put the real kube-apiserver and etcd, or why they are not there.

The versions are pinned by the two Go modules under `tools/envtest/` (their `require` lines are read here
and by `scripts/envtest.sh`, so there is one source of truth); the binaries live outside the repository in
`${OMECTL_ENVTEST_CACHE:-${XDG_CACHE_HOME:-~/.cache}/omectl/envtest}/k8s-<version>_etcd-<version>/`.
`OMECTL_ENVTEST_BIN` names a directory holding both binaries and wins over the cache (for binaries built
elsewhere).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
TOOLS_DIR = REPO_ROOT / "tools" / "envtest"
KUBE_APISERVER_MODULE = "k8s.io/kubernetes"
ETCD_MODULE = "go.etcd.io/etcd/server/v3"


class BinariesMissing(RuntimeError):
    """The real binaries are not built; the message says why in one line and how to build them."""


@dataclass(frozen=True)
class EnvtestBinaries:
    kube_apiserver: Path
    etcd: Path
    kube_version: str  # e.g. v1.34.4
    etcd_version: str  # e.g. v3.6.5

    @property
    def directory(self) -> Path:
        return self.kube_apiserver.parent


def module_version(go_mod: Path, module: str) -> str:
    """The version `go_mod` requires of `module` (a `require` line, in a block or alone)."""
    for line in go_mod.read_text().splitlines():
        words = line.split()
        if words[:1] == ["require"]:
            words = words[1:]
        if len(words) >= 2 and words[0] == module and words[1].startswith("v"):
            return words[1]
    raise ValueError(f"{go_mod} does not require {module}")


def pinned_versions(tools_dir: Path = TOOLS_DIR) -> tuple[str, str]:
    """(kube-apiserver version, etcd version) as `tools/envtest/*/go.mod` pin them."""
    return (
        module_version(tools_dir / "kube-apiserver" / "go.mod", KUBE_APISERVER_MODULE),
        module_version(tools_dir / "etcd" / "go.mod", ETCD_MODULE),
    )


def cache_root() -> Path:
    configured = os.environ.get("OMECTL_ENVTEST_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "omectl" / "envtest"


def cache_dir(versions: tuple[str, str] | None = None) -> Path:
    kube, etcd = versions or pinned_versions()
    return cache_root() / f"k8s-{kube}_etcd-{etcd}"


def find_binaries() -> EnvtestBinaries:
    """The built binaries, or `BinariesMissing` with a one-line reason."""
    override = os.environ.get("OMECTL_ENVTEST_BIN")
    if override:
        directory = Path(override)
        kube, etcd = ("unknown", "unknown")
        source = "OMECTL_ENVTEST_BIN"
    else:
        if not TOOLS_DIR.is_dir():
            raise BinariesMissing(f"{TOOLS_DIR} is missing (the envtest pins live in a source checkout)")
        kube, etcd = pinned_versions()
        directory = cache_dir((kube, etcd))
        source = "make envtest"
    paths = {name: directory / name for name in ("kube-apiserver", "etcd")}
    missing = [name for name, path in paths.items() if not (path.is_file() and os.access(path, os.X_OK))]
    if missing:
        how = "run `make envtest` (needs Go)" if shutil.which("go") else "Go is not installed to build them"
        raise BinariesMissing(f"{' and '.join(missing)} not built in {directory} ({source}): {how}")
    return EnvtestBinaries(paths["kube-apiserver"], paths["etcd"], kube, etcd)
