"""How many of upstream AIM Engine's own AIM documents omectl accepts: issue 18's "274 AIM documents", measured.

    .venv/bin/python scripts/upstream_aim_documents.py --upstream-dir DIR [--commit SHA] [--no-reference]

Collects every document whose apiVersion is `aim.eai.amd.com/*` from amd-enterprise-ai/aim-engine at the pinned
commit (tests/fixtures/upstream/aim/SOURCE, or `--commit`), read with `git show` from `--upstream-dir` (any clone or
mirror of that repository holding the commit: `git clone https://github.com/amd-enterprise-ai/aim-engine DIR`):

- `config/samples/*.yaml` (the kubebuilder samples),
- the Helm chart's values example, rendered: tests/fixtures/upstream/aim/helm/*.yaml (pinned here, not read from DIR),
- `tests/e2e/**/*.yaml` but the chainsaw-test.yaml files (their inline documents are assertions, not applied),
- every fenced code block of `docs/**/*.md` and `README.md` that is YAML (or a shell here-document of YAML).

Each document is created with a server-side dry run (`dryRun=All`, `fieldValidation=Strict`, as `kubectl apply
--dry-run=server` sends it; its namespace created first) in an embedded API server carrying omectl's CRDs
(deploy/crds) with omectl's controller running (it answers the conversion webhook of the kinds served at v1alpha1
and v1alpha2), and, unless `--no-reference`, in a real kube-apiserver carrying upstream's own CRDs (its
config/crd/bases, pinned under tests/fixtures/upstream/aim; the `make envtest` binaries): what a real cluster running
aim-engine accepts is the denominator. A kind not served at the document's version is refused as kubectl says it:
`no matches for kind "K" in version "G/V"`.

Prints Markdown: per kind the documents, how many omectl accepts and refuses, how many upstream's cluster accepts and
how many of those omectl accepts; then each distinct refusal (the object's name and namespace left out) with how
many documents it refused and the first of them. docs/aim-versions.md ("Upstream's YAML, measured") holds the result.
Nothing needs the network at run time. Exit 0 (it measures; it does not judge), 2 on bad input (one line).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import logging
import re
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from anywhere, without installing omectl

from omectl.envtest import BinariesMissing  # noqa: E402
from omectl.kube.client import ClusterClient, KubeAPIError, KubeError  # noqa: E402
from omectl.kube.resources import CUSTOM_RESOURCE_DEFINITIONS, NAMESPACES  # noqa: E402
from omectl.sim.kubeconfig import build_kubeconfig  # noqa: E402

PINNED = ROOT / "tests" / "fixtures" / "upstream" / "aim"
GROUP = "aim.eai.amd.com"
CONVERTED_PROBE = "aimartifacts.aim.eai.amd.com"  # a CRD the controller points at its conversion webhook
FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+-]*)[^\n]*\n(.*?)^[ \t]*```", re.S | re.M)
APIVERSION = re.compile(rf"apiVersion:\s*['\"]?{re.escape(GROUP)}/")
HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?[^\n]*\n(.*?)^\s*\1\s*$", re.S | re.M)


class InputError(Exception):
    """Bad input: one line naming it."""


@dataclass(frozen=True)
class Document:
    source: str  # samples, helm, e2e, docs
    path: str  # where it came from (an upstream path, or the pinned file)
    index: int  # its position among the AIM documents of that file (or code block)
    body: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.body.get("kind") or "(no kind)")

    @property
    def where(self) -> str:
        return f"{self.path}#{self.index}"


@dataclass
class Outcome:
    accepted: bool
    reason: str = ""


@dataclass
class Measure:
    documents: list[Document]
    ours: list[Outcome]
    reference: list[Outcome] | None
    commit: str
    not_yaml: list[str] = field(default_factory=list)  # code blocks with an AIM apiVersion that are no YAML


# --- collecting ---------------------------------------------------------------------------------------------------


def _git(upstream: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(upstream), *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        line = (proc.stderr.strip().splitlines() or ["git failed"])[-1]
        raise InputError(f"--upstream-dir {upstream}: git {' '.join(args[:2])}: {line}")
    return proc.stdout


def pinned_commit() -> str:
    match = re.search(r"^Commit:\s+([0-9a-f]{40})", (PINNED / "SOURCE").read_text(), re.M)
    assert match, "tests/fixtures/upstream/aim/SOURCE names no commit"
    return match.group(1)


def _aim_documents(text: str) -> list[dict[str, Any]]:
    return [
        doc
        for doc in yaml.safe_load_all(text)
        if isinstance(doc, dict) and str(doc.get("apiVersion", "")).startswith(f"{GROUP}/")
    ]


def _markdown_documents(text: str) -> tuple[list[dict[str, Any]], int]:
    """The AIM documents of a Markdown file's fenced code blocks, and how many blocks with an AIM apiVersion are no
    YAML."""
    found: list[dict[str, Any]] = []
    not_yaml = 0
    for _, block in FENCE.findall(text):
        if not APIVERSION.search(block):
            continue
        lines = block.splitlines()
        indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
        block = "\n".join(line[indent:] for line in lines)
        try:
            found += _aim_documents(block)
            continue
        except yaml.YAMLError:
            pass
        heredocs = [body for _, body in HEREDOC.findall(block) if APIVERSION.search(body)]
        try:
            found += [doc for body in heredocs for doc in _aim_documents(body)]
        except yaml.YAMLError:
            heredocs = []
        not_yaml += not heredocs
    return found, not_yaml


def collect(upstream: Path, commit: str) -> tuple[list[Document], list[str]]:
    """Every AIM document of the four sources, in a stable order, and the code blocks that are no YAML."""
    _git(upstream, "cat-file", "-e", f"{commit}^{{commit}}")
    paths = _git(upstream, "ls-tree", "-r", "--name-only", commit).splitlines()
    documents: list[Document] = []
    not_yaml: list[str] = []

    def add(source: str, path: str, docs: Iterable[dict[str, Any]]) -> None:
        documents.extend(Document(source, path, i, doc) for i, doc in enumerate(docs, 1))

    def show(path: str) -> str:
        return _git(upstream, "show", f"{commit}:{path}")

    for path in sorted(p for p in paths if re.fullmatch(r"config/samples/[^/]+\.ya?ml", p)):
        add("samples", path, _aim_documents(show(path)))
    for pinned in sorted((PINNED / "helm").glob("*.yaml")):
        add("helm", str(pinned.relative_to(ROOT)), _aim_documents(pinned.read_text()))
    e2e = (p for p in paths if p.startswith("tests/e2e/") and p.endswith((".yaml", ".yml")))
    for path in sorted(p for p in e2e if Path(p).name != "chainsaw-test.yaml"):
        add("e2e", path, _aim_documents(show(path)))
    for path in sorted(p for p in paths if (p.startswith("docs/") and p.endswith(".md")) or p == "README.md"):
        docs, bad = _markdown_documents(show(path))
        add("docs", path, docs)
        not_yaml += [path] * bad
    return documents, not_yaml


# --- applying -----------------------------------------------------------------------------------------------------


async def _client(entry: Any, name: str) -> ClusterClient:
    return await ClusterClient.from_kubeconfig(config_dict=build_kubeconfig([entry]), name=name)


async def _resources(client: ClusterClient, api_version: str) -> dict[str, tuple[str, bool]]:
    """kind -> (plural, namespaced) of what the server serves at `api_version`; {} when it serves no such version."""
    try:
        listing = await client.request("GET", f"/apis/{api_version}")
    except KubeAPIError:
        return {}
    return {
        r["kind"]: (r["name"], bool(r.get("namespaced")))
        for r in listing.get("resources") or []
        if "/" not in r.get("name", "")
    }


def _reason(document: Document, message: str) -> str:
    """The refusal's message, one line, without the object's own name and namespace (so that one reason is one row)."""
    meta = document.body.get("metadata") or {}
    line = " ".join(message.split())
    name, namespace = meta.get("name"), meta.get("namespace")
    if isinstance(name, str) and name:
        line = line.replace(f'"{name}" is invalid', '"NAME" is invalid')  # kube-apiserver's 422 names the object
    if isinstance(namespace, str) and namespace:
        line = line.replace(f'namespaces "{namespace}"', 'namespaces "NAMESPACE"')
    return line


async def apply_all(client: ClusterClient, documents: list[Document]) -> list[Outcome]:
    """Each document created with a server-side dry run (nothing is stored; the namespaces are created for real)."""
    served: dict[str, dict[str, tuple[str, bool]]] = {}
    namespaces: set[str] = set()
    outcomes = []
    for document in documents:
        api_version = str(document.body.get("apiVersion"))
        if api_version not in served:
            served[api_version] = await _resources(client, api_version)
        found = served[api_version].get(document.kind)
        if found is None:
            message = f'no matches for kind "{document.kind}" in version "{api_version}"'
            outcomes.append(Outcome(False, message))
            continue
        plural, namespaced = found
        path = f"/apis/{api_version}/{plural}"
        if namespaced:
            namespace = str((document.body.get("metadata") or {}).get("namespace") or "default")
            if namespace not in namespaces:
                namespaces.add(namespace)
                with contextlib.suppress(KubeAPIError):  # exists, or no valid name: the create below says so
                    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
                    await client.create(NAMESPACES, body)
            path = f"/apis/{api_version}/namespaces/{namespace}/{plural}"
        try:
            query = {"dryRun": "All", "fieldValidation": "Strict", "fieldManager": "kubectl-client-side-apply"}
            await client.request("POST", path, query=query, body=document.body)
            outcomes.append(Outcome(True))
        except KubeAPIError as exc:
            outcomes.append(Outcome(False, _reason(document, exc.message or f"{exc.status} {exc.reason}")))
    return outcomes


@contextlib.asynccontextmanager
async def omectl_cluster(workdir: Path) -> AsyncIterator[ClusterClient]:
    """An embedded API server with deploy/crds and omectl's controller (its conversion webhook) running."""
    from omectl.cli.dev import write_registrations
    from omectl.controller.app import ControllerApp
    from omectl.settings import Settings
    from omectl.sim.fleet import EmbeddedFleet

    fleet = await EmbeddedFleet(1, name_prefix="omectl-").start()
    app: ControllerApp | None = None
    client: ClusterClient | None = None
    try:
        await fleet.apply([ROOT / "deploy" / "crds"])
        kubeconfig = fleet.write_kubeconfig(workdir / "omectl.kubeconfig")
        write_registrations(workdir / "clusters", kubeconfig, [s.name for s in fleet.servers])
        settings = Settings.load(clusters_dir=workdir / "clusters", webhook_port=0, trace_file=workdir / "t.jsonl")
        app = ControllerApp(settings, status_file=workdir / "status.json")
        await app.start()
        await app.wait_synced(60)
        server = fleet.servers[0]
        client = await _client(server.kubeconfig_entry(), server.name)
        deadline = asyncio.get_running_loop().time() + 60
        while True:  # the owner points the converted CRDs at its webhook
            crd = await client.get(CUSTOM_RESOURCE_DEFINITIONS, CONVERTED_PROBE)
            config = ((crd["spec"].get("conversion") or {}).get("webhook") or {}).get("clientConfig") or {}
            if str(config.get("url", "")).endswith(f"/convert/{server.name}"):
                break
            if asyncio.get_running_loop().time() > deadline:
                raise RuntimeError("the controller never pointed the converted CRDs at its conversion webhook")
            await asyncio.sleep(0.1)
        yield client
    finally:
        if client is not None:
            await client.close()
        if app is not None:
            await app.stop()
        await fleet.stop()


@contextlib.asynccontextmanager
async def upstream_cluster(workdir: Path) -> AsyncIterator[ClusterClient]:
    """A real kube-apiserver (etcd, the `make envtest` binaries) with upstream's own CRDs, pinned."""
    from omectl.envtest import RealFleet

    fleet = RealFleet(1, name_prefix="upstream-", workdir=workdir / "real")
    await fleet.start()
    client: ClusterClient | None = None
    try:
        await fleet.apply([PINNED / "config" / "crd" / "bases"])
        server = fleet.servers[0]
        client = await _client(server.kubeconfig_entry(), server.name)
        yield client
    finally:
        if client is not None:
            await client.close()
        await fleet.stop()


async def measure(upstream: Path, commit: str, reference: bool) -> Measure:
    documents, not_yaml = collect(upstream, commit)
    with tempfile.TemporaryDirectory(prefix="omectl-upstream-aim-") as tmp:
        async with omectl_cluster(Path(tmp)) as client:
            ours = await apply_all(client, documents)
        theirs = None
        if reference:
            async with upstream_cluster(Path(tmp)) as client:
                theirs = await apply_all(client, documents)
    return Measure(documents, ours, theirs, commit, not_yaml)


# --- reporting ----------------------------------------------------------------------------------------------------


def report(found: Measure) -> str:
    docs, ours, theirs = found.documents, found.ours, found.reference
    kinds = sorted({d.kind for d in docs})
    today = dt.datetime.now(dt.UTC).date().isoformat()
    sources = ", ".join(f"{source} {count}" for source, count in Counter(d.source for d in docs).items())
    skipped = ""
    if found.not_yaml:
        skipped = f" ({len(found.not_yaml)} code block(s) with an AIM apiVersion are no YAML: {sorted(found.not_yaml)})"
    lines = [
        f"Upstream: amd-enterprise-ai/aim-engine@{found.commit}; measured {today}",
        "",
        f"Documents by source: {sources}; {len(docs)} in all{skipped}",
        "",
    ]
    header = ["Kind", "Documents", "Accepted", "Refused"]
    if theirs is not None:
        header += ["Upstream's CRDs accept", "Of those, accepted"]
    lines += ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]

    def row(name: str, picked: list[int]) -> str:
        accepted = sum(ours[i].accepted for i in picked)
        cells = [name, str(len(picked)), str(accepted), str(len(picked) - accepted)]
        if theirs is not None:
            reference = [i for i in picked if theirs[i].accepted]
            cells += [str(len(reference)), str(sum(ours[i].accepted for i in reference))]
        return "| " + " | ".join(cells) + " |"

    for kind in kinds:
        lines.append(row(kind, [i for i, d in enumerate(docs) if d.kind == kind]))
    lines.append(row("**all**", list(range(len(docs)))))
    if theirs is not None:
        over = [d.where for d, o, t in zip(docs, ours, theirs, strict=True) if o.accepted and not t.accepted]
        lines += [
            "",
            f"Accepted here but refused by upstream's CRDs: {len(over)}" + (f" ({', '.join(over)})" if over else ""),
        ]
    lines += ["", "Refusals here (one row per distinct reason; the first document it refused):", ""]
    lines += ["| Kind | Documents | Reason | First |", "| --- | --- | --- | --- |"]
    lines += _refusal_rows(docs, ours)
    if theirs is not None:
        lines += ["", "Refusals by upstream's CRDs on a real kube-apiserver:", ""]
        lines += ["| Kind | Documents | Reason | First |", "| --- | --- | --- | --- |"]
        lines += _refusal_rows(docs, theirs)
    return "\n".join(lines)


def _refusal_rows(docs: list[Document], outcomes: list[Outcome]) -> list[str]:
    by_reason: dict[tuple[str, str], list[Document]] = defaultdict(list)
    for document, outcome in zip(docs, outcomes, strict=True):
        if not outcome.accepted:
            by_reason[(document.kind, outcome.reason)].append(document)
    rows = []
    for (kind, reason), refused in sorted(by_reason.items(), key=lambda item: (item[0][0], -len(item[1]))):
        cell = reason.replace("|", "\\|")
        rows.append(f"| {kind} | {len(refused)} | {cell} | `{refused[0].where}` |")
    return rows or ["| - | 0 | - | - |"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream-dir", type=Path, required=True, help="a git clone or mirror of aim-engine")
    parser.add_argument("--commit", default=None, help="default: the commit of tests/fixtures/upstream/aim/SOURCE")
    parser.add_argument("--no-reference", action="store_true", help="skip the real kube-apiserver with upstream's CRDs")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)  # the controller's own logs are not the report
    try:
        if not args.upstream_dir.is_dir():
            raise InputError(f"--upstream-dir {args.upstream_dir}: no such directory")
        found = asyncio.run(measure(args.upstream_dir, args.commit or pinned_commit(), not args.no_reference))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BinariesMissing as exc:
        print(f"error: the reference needs a real kube-apiserver ({exc}); or run with --no-reference", file=sys.stderr)
        return 2
    except KubeError as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    print(report(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
