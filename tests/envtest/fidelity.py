"""The differential harness: one kubectl scenario against the embedded and the real server, normalised, compared.

A scenario is a list of kubectl steps (arguments, optional stdin), run in a namespace of its own (`fid-<name>`,
created first), so scenarios never see each other's objects nor those of other tests. Both servers get the same
steps from the same kubectl binary; each step's exit code, stdout and stderr are normalised (server URLs, cluster
and namespace names, uids, resourceVersions, timestamps, ages) into a transcript, and the two transcripts are
compared line by line.
`render_fidelity_doc` turns the results into `docs/fidelity.md`.
"""

from __future__ import annotations

import difflib
import json
import re
import textwrap
import time
from dataclasses import dataclass, field
from typing import Any

from tests.support import Kubectl


@dataclass(frozen=True)
class Step:
    args: tuple[str, ...]
    input: str | None = None
    json: bool = False  # stdout is JSON: normalise it structurally (volatile metadata dropped, keys sorted)
    json_lines: bool = False  # stdout is one JSON document a line (a watch): each normalised as `json` does
    # Re-run (every 0.2 s, 15 s at most) until the exit code is this one; only the last run is recorded. For what a
    # real server does eventually (a new webhook configuration takes effect within a second), never for outputs.
    until_exit: int | None = None


def step(
    *args: str, input: str | None = None, json: bool = False, json_lines: bool = False, until_exit: int | None = None
) -> Step:
    return Step(tuple(args), input, json, json_lines, until_exit)


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace(f"@{key}@", value)
    return text


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    steps: tuple[Step, ...]

    @property
    def namespace(self) -> str:
        return f"fid-{self.name}"


@dataclass
class Result:
    scenario: Scenario
    embedded: list[str]
    real: list[str]
    known: str | None = None  # why the difference stays (None: not a known difference)
    diff: list[str] = field(default_factory=list)

    @property
    def same(self) -> bool:
        return self.embedded == self.real


_VOLATILE_META = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation")
_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"https?://(127\.0\.0\.1|localhost):\d+"), "<server>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uid>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z\b"), "<time>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d+ [+-]\d{4}\b"), "<time>"),  # kubectl diff's files
    (re.compile(r"/tmp/(LIVE|MERGED)-\d+/"), r"/tmp/\1-<n>/"),
    (re.compile(r'(resourceVersion["\']?:\s*["\']?)\d+'), r"\1<rv>"),
    # what a Service's storage allocates: cluster IPs (10.0.0.0/16 on both servers) and node ports
    (re.compile(r"\b10\.0\.\d{1,3}\.\d{1,3}\b"), "<cluster-ip>"),
    (re.compile(r'("nodePort":\s*)\d+'), r"\1<node-port>"),
    (re.compile(r"\b(\d+):3\d{4}/(TCP|UDP|SCTP)\b"), r"\1:<node-port>/\2"),
    (re.compile(r"(?<![\w.-])(\d+d)?(\d+h)?(\d+m)?(\d+s)?(?<=[smhd])(?![\w.-])"), "<age>"),
]


def _drop_volatile(value: Any) -> Any:
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key == "metadata" and isinstance(item, dict):
                item = {k: v for k, v in item.items() if k not in _VOLATILE_META}
            out[key] = _drop_volatile(item)
        return out
    if isinstance(value, list):
        return [_drop_volatile(v) for v in value]
    return value


def normalise(text: str, names: tuple[str, ...]) -> list[str]:
    """`names`: the cluster names, then the scenario's namespace."""
    for cluster in names[:-1]:
        text = text.replace(cluster, "<cluster>")
    text = text.replace(names[-1], "<ns>")
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    # kubectl pads table columns to the widest cell; the cells, not the padding, are what the server decides
    return [re.sub(r"\s{2,}", "  ", line.rstrip()) for line in text.splitlines()]


def run_scenario(
    kubectl: Kubectl, scenario: Scenario, clusters: tuple[str, ...], values: dict[str, str] | None = None
) -> list[str]:
    """The normalised transcript; `@NS@` and `@KEY@` for each of `values` are filled in arguments and stdin."""
    transcript: list[str] = []
    kubectl.run("create", "namespace", scenario.namespace)
    names = (*clusters, scenario.namespace)
    fill = {"NS": scenario.namespace, **(values or {})}
    for s in scenario.steps:
        args = [_fill(a, fill) for a in s.args]
        stdin = _fill(s.input, fill) if s.input is not None else None
        deadline = time.monotonic() + 15
        while True:
            proc = kubectl.run(f"--namespace={scenario.namespace}", *args, input=stdin, check=False, timeout=60)
            if s.until_exit is None or proc.returncode == s.until_exit or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        transcript.append(f"$ kubectl {' '.join(s.args)}")
        stdout = proc.stdout
        if s.json and proc.returncode == 0:
            stdout = json.dumps(_drop_volatile(json.loads(stdout)), indent=1, sort_keys=True)
        elif s.json_lines and proc.returncode == 0:
            documents = [json.loads(line) for line in stdout.splitlines() if line.strip()]
            stdout = "\n".join(json.dumps(_drop_volatile(d), indent=1, sort_keys=True) for d in documents)
        transcript.extend(f"  {line}" for line in normalise(stdout, names))
        transcript.extend(f"  stderr: {line}" for line in normalise(proc.stderr, names))
        transcript.append(f"  exit {proc.returncode}")
    return transcript


def compare(result: Result) -> None:
    result.diff = list(difflib.unified_diff(result.embedded, result.real, "embedded", "real", lineterm="", n=1))


def render_fidelity_doc(results: list[Result], versions: str) -> str:
    same = [r for r in results if r.same]
    different = [r for r in results if not r.same]
    intro = (
        "GENERATED by `tests/envtest/test_fidelity.py` (the real-server suite) on every run that has the real "
        "binaries (`make envtest`); do not edit. Each scenario runs the same kubectl steps (kubectl 1.33, the same "
        "binary for both, in a namespace of the scenario's own) against the embedded server and a real "
        f"{versions}. Outputs are normalised (server URLs, cluster and namespace names, uids, resourceVersions, "
        "timestamps, ages, cluster IPs and node ports, column padding) and compared. A difference not listed in "
        "the suite's `KNOWN` table "
        "fails it, and so does a listed one that has gone, so this page is always what the two servers do."
    )
    lines = [
        "# Fidelity: the embedded API server against the real kube-apiserver",
        "",
        *textwrap.wrap(intro, 116),
        "",
        f"{len(results)} scenarios: {len(same)} the same, {len(different)} different.",
        "",
        "| scenario | result |",
        "| --- | --- |",
    ]
    for r in results:
        lines.append(f"| `{r.scenario.name}`: {r.scenario.title} | {'same' if r.same else '**different**'} |")
    for r in different:
        lines += ["", f"## `{r.scenario.name}`: {r.scenario.title}", ""]
        lines += [*textwrap.wrap(r.known or "(not yet explained)", 116), ""]
        lines += ["```diff", *r.diff[2:], "```"]
    return "\n".join(lines) + "\n"
