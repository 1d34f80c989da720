"""Shared test helpers: a sample CRD, raw HTTP calls, a kubectl runner with its own cache dir (and bound to one
cluster), a simulated fleet served from a background thread, `omectl` as a real process, and a deadline to wait for
an outcome."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import aiohttp
import orjson
import pytest
import yaml

if TYPE_CHECKING:
    from omectl.sim.fleet import BackgroundFleet
    from omectl.sim.simulator import SimulatorConfig

ROOT = Path(__file__).resolve().parents[1]
T = TypeVar("T")


def widget_crd(*, plural: str = "widgets", group: str = "example.com", scope: str = "Namespaced") -> dict[str, Any]:
    """A small CRD exercising the schema rules, the status subresource and printer columns."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {
                "plural": plural,
                "singular": plural.rstrip("s"),
                "kind": plural.rstrip("s").capitalize(),
                "shortNames": ["wd"] if plural == "widgets" else [],
                "categories": ["all"],
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                        {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
                        {
                            "name": "Ready",
                            "type": "string",
                            "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
                        },
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {
                                        "size": {"type": "integer", "minimum": 0, "maximum": 100},
                                        "color": {"type": "string", "enum": ["red", "green", "blue"]},
                                        "mode": {"type": "string", "default": "auto"},
                                        "tags": {"type": "array", "items": {"type": "string"}},
                                        "extra": {
                                            "type": "object",
                                            "x-kubernetes-preserve-unknown-fields": True,
                                        },
                                    },
                                },
                                "status": {
                                    "type": "object",
                                    "properties": {
                                        "phase": {"type": "string"},
                                        "conditions": {
                                            "type": "array",
                                            "x-kubernetes-list-type": "map",
                                            "x-kubernetes-list-map-keys": ["type"],
                                            "items": {
                                                "type": "object",
                                                "required": ["type", "status"],
                                                "properties": {
                                                    "type": {"type": "string"},
                                                    "status": {"type": "string"},
                                                    "reason": {"type": "string"},
                                                },
                                            },
                                        },
                                    },
                                },
                            },
                        }
                    },
                }
            ],
        },
    }


def widget(name: str, namespace: str = "default", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec or {"size": 1},
    }


@dataclass
class Reply:
    status: int
    body: Any
    headers: Any


class RawClient:
    """Exact-body HTTP calls against one embedded server (`headers`: its `auth_headers`)."""

    def __init__(self, base: str, session: aiohttp.ClientSession, headers: dict[str, str] | None = None) -> None:
        self.base = base
        self.session = session
        self.headers = headers or {}

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> Reply:
        data = raw if raw is not None else (orjson.dumps(body) if body is not None else None)
        hdrs = {"Content-Type": content_type, **self.headers, **(headers or {})}
        async with self.session.request(method, self.base + path, data=data, headers=hdrs) as resp:
            text = await resp.read()
            try:
                parsed = orjson.loads(text) if text else None
            except orjson.JSONDecodeError:
                parsed = text.decode()
            return Reply(resp.status, parsed, resp.headers)

    async def get(self, path: str, **kw: Any) -> Reply:
        return await self.call("GET", path, **kw)

    async def post(self, path: str, body: Any, **kw: Any) -> Reply:
        return await self.call("POST", path, body, **kw)

    async def put(self, path: str, body: Any, **kw: Any) -> Reply:
        return await self.call("PUT", path, body, **kw)

    async def patch(self, path: str, body: Any, content_type: str, **kw: Any) -> Reply:
        return await self.call("PATCH", path, body, content_type=content_type, **kw)

    async def delete(self, path: str, body: Any = None, **kw: Any) -> Reply:
        return await self.call("DELETE", path, body, **kw)


def kubectl_path() -> str:
    """The kubectl binary, or a skip (an error in CI, where kubectl must exist)."""
    found = shutil.which("kubectl")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("kubectl is required in CI but was not found on PATH")
        pytest.skip("kubectl is not installed")
    return found


def real_kubectl_path(server_version: str) -> str:
    """kubectl within one minor of the server: the dispatcher's own `kubectl.1.<minor-1>` when it has one.

    The dispatcher picks its client from the server's /version, but knows only 1.27-1.33: for a 1.34 server it
    falls back to its default 1.32 (two minors of skew, outside kubectl's supported +/-1).
    """
    dispatcher = kubectl_path()
    match = re.match(r"v1\.(\d+)\.", server_version)
    if match:
        resolved = Path(os.path.realpath(dispatcher)).parent
        for minor in (int(match.group(1)), int(match.group(1)) - 1):
            candidate = resolved / f"kubectl.1.{minor}"
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    return dispatcher


class Kubectl:
    """Runs the real kubectl against a kubeconfig, with a private cache dir."""

    def __init__(self, binary: str, kubeconfig: Path, cache_dir: Path) -> None:
        self.binary = binary
        self.kubeconfig = kubeconfig
        self.cache_dir = cache_dir

    def argv(self, *args: str) -> list[str]:
        return [
            self.binary,
            f"--kubeconfig={self.kubeconfig}",
            f"--cache-dir={self.cache_dir}",
            "--request-timeout=20s",
            *args,
        ]

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("KUBECONFIG", None)
        env["HOME"] = str(self.cache_dir)
        return env

    def run(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Blocking: only for tests whose API servers run on another thread (BackgroundFleet)."""
        proc = subprocess.run(
            self.argv(*args), input=input, capture_output=True, text=True, env=self.env(), timeout=timeout
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}{proc.stdout}")
        return proc

    async def arun(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60
    ) -> tuple[int, str, str]:
        """Non-blocking variant for tests that serve the API on their own event loop."""
        proc = await asyncio.create_subprocess_exec(
            *self.argv(*args),
            stdin=asyncio.subprocess.PIPE if input is not None else None,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.env(),
        )
        out, err = await asyncio.wait_for(proc.communicate(input.encode() if input is not None else None), timeout)
        rc = proc.returncode or 0
        if check and rc != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({rc}):\n{err.decode()}{out.decode()}")
        return rc, out.decode(), err.decode()


class ClusterKubectl:
    """kubectl on one cluster of a fleet (`--context=<cluster>`), as the e2e tests' environments drive it: a command's
    whole result (`run`) or its output, the command having succeeded (`k`), documents applied, an object read."""

    def __init__(self, kubectl: Kubectl, cluster: str) -> None:
        self.kubectl = kubectl
        self.cluster = cluster

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return self.kubectl.run(f"--context={self.cluster}", *args, input=stdin, check=False)

    def k(self, *args: str, stdin: str | None = None) -> str:
        return self.kubectl.run(f"--context={self.cluster}", *args, input=stdin).stdout

    def apply(self, *docs: dict[str, Any]) -> None:
        self.k("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))

    def get(self, resource: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """`kubectl get <resource> <name> -o json`, None when it is not found (any other failure fails the test)."""
        proc = self.run("get", resource, name, "-o", "json", *(["-n", namespace] if namespace else []))
        if proc.returncode != 0:
            assert "NotFound" in proc.stderr, proc.stderr
            return None
        found: dict[str, Any] = orjson.loads(proc.stdout)
        return found


def until(probe: Callable[[], T | None], what: str, timeout: float = 30) -> T:
    """Re-run `probe` until it returns something truthy, within `timeout` seconds (a deadline, not a sleep: the
    controller works asynchronously); an AssertionError naming `what` and the last answer otherwise."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"never: {what} (last: {last!r})")


class LoopTurns:
    """Counts the turns of the running event loop: a callback that re-queues itself runs once per turn (what is
    scheduled during a turn runs in the next). `now` is the current turn's number; stop with `stop()`."""

    def __init__(self) -> None:
        self.now = 0
        self._loop = asyncio.get_running_loop()
        self._handle = self._loop.call_soon(self._tick)

    def _tick(self) -> None:
        self.now += 1
        self._handle = self._loop.call_soon(self._tick)

    def stop(self) -> None:
        self._handle.cancel()


def spin(seconds: float) -> float:
    """Hold the CPU (and so the event loop) for `seconds`, as a render or a handler's fan-out would; returns the
    seconds it took."""
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        pass
    return time.perf_counter() - started


@dataclass
class SimulatedFleet:
    """Embedded clusters served from a background thread, every CRD of deploy/crds applied, and kubectl for them
    (`--context=<cluster>`)."""

    bg: BackgroundFleet
    kubectl: Kubectl

    def k(self, cluster: str, *args: str, **kw: Any) -> str:
        return self.kubectl.run(f"--context={cluster}", *args, **kw).stdout

    def get(self, cluster: str, *what: str) -> dict[str, Any] | None:
        """`kubectl get ... -o json`, None when it is not there."""
        proc = self.kubectl.run(f"--context={cluster}", "get", *what, "-o", "json", check=False)
        found: dict[str, Any] | None = orjson.loads(proc.stdout) if proc.returncode == 0 else None
        return found


@contextlib.contextmanager
def simulated_fleet(
    base: Path, count: int, prefix: str, *, simulator: SimulatorConfig | dict[str, SimulatorConfig] | None = None
) -> Iterator[SimulatedFleet]:
    """`count` embedded clusters `<prefix>1..N` (their kubeconfig `base/fleet.kubeconfig`); stopped on exit."""
    from omectl.sim.fleet import BackgroundFleet, EmbeddedFleet

    bg = BackgroundFleet(EmbeddedFleet(count, name_prefix=prefix, simulator=simulator))
    bg.start()
    try:
        bg.run(bg.fleet.apply([ROOT / "deploy" / "crds"]))
        kubeconfig = bg.fleet.write_kubeconfig(base / "fleet.kubeconfig")
        yield SimulatedFleet(bg, Kubectl(kubectl_path(), kubeconfig, base / "kube-cache"))
    finally:
        bg.stop()


def omectl_env() -> dict[str, str]:
    """The environment for an `omectl` process of a test: none of the runner's OMECTL_ or OTEL_ settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OMECTL_", "KUBECONFIG"))}


def omectl_process(*args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    """The installed `omectl` with `args`, run to its end; its exit status must be `code`."""
    binary = str(Path(sys.executable).parent / "omectl")
    proc = subprocess.run([binary, *args], capture_output=True, text=True, env=omectl_env(), timeout=60)
    assert proc.returncode == code, f"omectl {' '.join(args)}: exit {proc.returncode}\n{proc.stderr}{proc.stdout}"
    return proc


def omectl(*args: str, code: int = 0) -> str:
    """The installed `omectl` with `args`: its stdout, or with a failing `code` its stderr."""
    proc = omectl_process(*args, code=code)
    return proc.stdout if code == 0 else proc.stderr


def start_omectl_run(log: Path, *args: str) -> subprocess.Popen[str]:
    """`omectl run` as a real process (its stderr to `log`), with free webhook and metrics ports and no webhooks
    installed; `args` add to (or override) those."""
    argv = [sys.executable, "-m", "omectl", "run", "--no-install-webhooks", "--webhook-port", "0"]
    argv += ["--metrics-port", "0", "--status-file", str(log.with_suffix(".status.json"))]
    argv += ["--trace-file", str(log.with_suffix(".traces.jsonl")), *args]
    env = dict(omectl_env(), PYTHONPATH=str(ROOT))
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log.open("w"), text=True, env=env, cwd=log.parent)


def stop_process(proc: subprocess.Popen[str]) -> None:
    """SIGTERM (30 s to finish), then SIGKILL."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
