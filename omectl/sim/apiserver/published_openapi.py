"""The OpenAPI v3 schemas kube-apiserver publishes for the built-in kinds the embedded server serves.

`published-openapi.json.gz` next to this module is a capture of a real kube-apiserver's `/openapi/v3/<gv>`
documents (the `make envtest` build): the component schemas reachable from the served built-in kinds, their
lists, and the meta/v1 types every document references, descriptions and enums included, as the server publishes
them (the source tree's `api/openapi-spec` lacks the enums a running server adds). They are what `kubectl explain`
prints. Regenerate the capture against the envtest binaries:

    .venv/bin/python scripts/capture_published_openapi.py

The capture is read on the first OpenAPI request only, and shared read-only by every server of the process.
"""

from __future__ import annotations

import functools
import gzip
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import orjson

DATA_FILE: Final = Path(__file__).with_name("published-openapi.json.gz")
REF_PREFIX: Final = "#/components/schemas/"
META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1"
# Referenced by every group-version document: the paths' request and response bodies, and each kind's metadata.
META_ROOTS: Final = tuple(f"{META}.{name}" for name in ("DeleteOptions", "ListMeta", "ObjectMeta", "Patch", "Status"))


@functools.cache
def _capture() -> dict[str, Any]:
    content: dict[str, Any] = orjson.loads(gzip.decompress(DATA_FILE.read_bytes()))
    return content


def kubernetes_version() -> str:
    """The version of the kube-apiserver the capture came from."""
    return str(_capture()["kubernetesVersion"])


def schemas() -> Mapping[str, Any]:
    """Every captured schema by name. Shared: callers must not change them."""
    captured: dict[str, Any] = _capture()["schemas"]
    return captured


def refs(node: Any) -> Iterable[str]:
    """The schema names `node` references (`$ref`s; a property named `$ref` is not one)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value.removeprefix(REF_PREFIX)
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


def closure(available: Mapping[str, Any], roots: Iterable[str]) -> set[str]:
    """The names of `available` reachable from `roots` through references (roots included)."""
    found: set[str] = set()
    stack = [name for name in roots if name in available]
    while stack:
        name = stack.pop()
        if name in found:
            continue
        found.add(name)
        stack.extend(ref for ref in refs(available[name]) if ref in available and ref not in found)
    return found


def extract(documents: Iterable[Mapping[str, Any]], roots: Iterable[str], kubernetes_version: str) -> dict[str, Any]:
    """The capture's content from a server's group-version documents: the schemas reachable from `roots`."""
    available: dict[str, Any] = {}
    for doc in documents:
        available.update(doc.get("components", {}).get("schemas", {}))
    keep = closure(available, [*roots, *META_ROOTS])
    return {
        "kubernetesVersion": kubernetes_version,
        "source": "kube-apiserver /openapi/v3/<group-version> components, reachable from the served built-in kinds",
        "schemas": {name: available[name] for name in sorted(keep)},
    }


def encode(content: Mapping[str, Any]) -> bytes:
    """The capture file's bytes (deterministic: sorted keys, no timestamp in the gzip header)."""
    return gzip.compress(orjson.dumps(content, option=orjson.OPT_SORT_KEYS), compresslevel=9, mtime=0)
