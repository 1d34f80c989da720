"""No secret reaches a log line, an Event, a span or the CLI's output.

A controller runs on an embedded cluster registered with an inline kubeconfig holding a bearer token (plus a broken
and an unreachable registration with tokens of their own), against runtimes and an AIM runtime config whose env has
`HF_TOKEN=<secret>` and a `secretKeyRef` to a Secret, with failures that log (a runtime whose parent is missing, an
InferenceService naming no runtime, injected 500s on the engine's applies, an AIMService naming a missing config).
Every captured log line, every Event in the cluster, every span in the trace file, `/metrics` and the output of
`omectl runtime effective -o yaml|json`, `trace explain`, `trace list`, `cluster status` and `cluster list` are
searched for the secrets.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import io
import logging
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.controller.app import ControllerApp
from omectl.observability.logs import configure_logging
from omectl.observability.redact import REDACTED
from omectl.settings import Settings
from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.fleet import EmbeddedFleet, manifest_documents
from omectl.sim.kubeconfig import write_kubeconfig
from tests.observability.support import CRDS, OME_SAMPLES, ROOT, apply_all, namespace, scrape, serving_runtime, until
from tests.observability.support import inference_service as isvc_doc

pytestmark = pytest.mark.xdist_group("e2e")

CLUSTER = "sec-1"
TOKEN = "kubeconfig-bearer-9f8e7d6c5b4a3"
BROKEN_TOKEN = "broken-bearer-0a1b2c3d4e5f6"
UNREACHABLE_TOKEN = "unreachable-bearer-5e6f7a8b9c"
USERINFO_PASSWORD = "userinfo-pass-3c4d5e6f7a"  # in the unreachable cluster's server URL
ENV_SECRET = "hf_envsecret_1a2b3c4d5e6f"
REF_SECRET = "hf-secretref-value-77aa88bb"
SECRETS = [
    TOKEN,
    BROKEN_TOKEN,
    UNREACHABLE_TOKEN,
    USERINFO_PASSWORD,
    ENV_SECRET,
    REF_SECRET,
    base64.b64encode(REF_SECRET.encode()).decode(),
    base64.b64encode(TOKEN.encode()).decode(),
]
NS = "llama-demo"
AIM_NS = "ml-team"
SECRET_ENV = [
    {"name": "HF_TOKEN", "value": ENV_SECRET},
    {"name": "HF_FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}},
]


@dataclass
class Running:
    server: EmbeddedAPIServer
    app: ControllerApp
    base: Path
    log: io.StringIO


def registration(name: str, kubeconfig: dict[str, Any], context: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "omectl.io/v1alpha1",
            "kind": "ClusterRegistration",
            "metadata": {"name": name},
            "spec": {"kubeconfig": {"inline": yaml.safe_dump(kubeconfig)}, "context": context},
        }
    )


@pytest.fixture
async def running(tmp_path: Path) -> AsyncIterator[Running]:
    stream = io.StringIO()
    root = logging.getLogger()
    level = root.level
    handler = configure_logging("DEBUG", "json", stream)
    fleet = EmbeddedFleet(1, name_prefix="sec-")
    server = fleet[CLUSTER]
    server.token = TOKEN
    await fleet.start()
    try:
        await fleet.apply([CRDS])
        path = write_kubeconfig(tmp_path / "kc.yaml", [server.kubeconfig_entry()], current=CLUSTER)
        kubeconfig = yaml.safe_load(path.read_text())
        assert TOKEN in path.read_text()
        broken = copy.deepcopy(kubeconfig)
        broken["users"][0]["user"]["token"] = BROKEN_TOKEN
        unreachable = copy.deepcopy(kubeconfig)
        unreachable["users"][0]["user"]["token"] = UNREACHABLE_TOKEN
        # nothing listens (discard); the URL carries credentials no output may show
        unreachable["clusters"][0]["cluster"]["server"] = f"http://admin:{USERINFO_PASSWORD}@127.0.0.1:9"
        clusters = tmp_path / "clusters"
        clusters.mkdir()
        (clusters / "sec-1.yaml").write_text(registration(CLUSTER, kubeconfig, CLUSTER))
        (clusters / "broken.yaml").write_text(registration("broken", broken, "no-such-context"))
        (clusters / "unreachable.yaml").write_text(registration("unreachable", unreachable, CLUSTER))
        settings = Settings.load(
            webhook_port=0,
            clusters_dir=clusters,
            trace_file=tmp_path / "traces.jsonl",
            install_webhooks=False,
            metrics_port=0,
        )
        app = ControllerApp(settings, status_file=tmp_path / "status.json")
        await app.start()
        try:
            await app.ready.wait()
            await app.controller.clusters[CLUSTER].wait_synced(30)
            yield Running(server, app, tmp_path, stream)
        finally:
            await app.stop()
    finally:
        await fleet.stop()
        root.removeHandler(handler)
        root.setLevel(level)


def with_env(doc: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["spec"]["engineConfig"]["runner"]["env"] = copy.deepcopy(SECRET_ENV)
    return doc


def secret(namespace: str) -> dict[str, Any]:
    data = {"token": base64.b64encode(REF_SECRET.encode()).decode()}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "hf-token", "namespace": namespace},
        "data": data,
    }


def aim_service(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "aim.eai.amd.com/v1alpha2",
        "kind": "AIMService",
        "metadata": {"name": name, "namespace": AIM_NS},
        "spec": {"model": {"name": "qwen-qwen3-32b"}, **spec},
    }


def stored(server: EmbeddedAPIServer, group: str, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
    return server.api.store.get((group, plural), namespace, name)


def events(server: EmbeddedAPIServer) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for key in (("", "events"), ("events.k8s.io", "events")):
        found.extend(server.api.store.items(key))
    return found


def read(path: Path) -> str:
    return path.read_text()


async def omectl(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OMECTL_"))}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "omectl", *args, cwd=cwd, env=dict(env, PYTHONPATH=str(ROOT), COLUMNS="400"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return f"$ omectl {' '.join(args)} (exit {proc.returncode})\n{out.decode()}{err.decode()}"


async def test_no_secret_reaches_logs_events_spans_metrics_or_the_cli(running: Running) -> None:
    server, app = running.server, running.app
    profile, runtime, model = manifest_documents(
        [OME_SAMPLES / f for f in ("profile.yaml", "runtime.yaml", "clusterbasemodel.yaml")]
    )
    await apply_all(
        server, namespace(NS), namespace(AIM_NS), secret(NS), secret(AIM_NS), with_env(profile), runtime, model
    )
    # failures that log: the engine's first applies answer 500, a runtime's parent is missing, a service names none
    server.faults.fail_next(2, 500, method="PATCH", path_contains="/deployments/")
    await apply_all(
        server,
        serving_runtime("orphan", NS, "no-such-profile", env=copy.deepcopy(SECRET_ENV)),
        isvc_doc("llama-3-2-3b-instruct", NS, "sglang-llama-3-2-3b"),
        isvc_doc("orphaned", NS, "orphan"),
        {
            "apiVersion": "aim.eai.amd.com/v1alpha1",
            "kind": "AIMRuntimeConfig",
            "metadata": {"name": "default", "namespace": AIM_NS},
            "spec": {"env": copy.deepcopy(SECRET_ENV)},
        },
        aim_service("chat"),
        aim_service("missing", runtimeConfigName="non-existent"),
    )

    def engine_env() -> dict[str, Any]:
        deployment = stored(server, "apps", "deployments", NS, "llama-3-2-3b-instruct-engine") or {}
        containers = (((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
        return {e["name"]: e.get("value") for c in containers for e in c.get("env") or []}

    def reasons() -> set[str]:
        return {e.get("reason", "") for e in events(server)}

    async def settled() -> bool:
        logged = running.log.getvalue()
        return (
            engine_env().get("HF_TOKEN") == ENV_SECRET  # the secret really flowed into the rendered workload
            and {"ParentNotFound", "ReferenceNotFound"} <= reasons()
            and stored(server, "serving.kserve.io", "inferenceservices", AIM_NS, "chat") is not None
            and '"level":"WARNING"' in logged
            and "failed (retry" in logged
        )

    await until(settled, "the reconciles, failures and events")
    kserve = stored(server, "serving.kserve.io", "inferenceservices", AIM_NS, "chat") or {}
    assert ENV_SECRET in str(kserve)  # the AIM config's env reached its InferenceService too
    assert any("broken.yaml" in source for source in app.controller.registry_errors)

    app.write_status_file()
    app.tracing.force_flush()
    assert app.status_server is not None
    metrics = str(await scrape(app.status_server.base_url))
    base, trace_file, clusters = running.base, str(running.base / "traces.jsonl"), str(running.base / "clusters")
    effective = (
        "runtime",
        "effective",
        "llama-3-2-3b-instruct",
        "-n",
        NS,
        "--cluster",
        CLUSTER,
        "--clusters-dir",
        clusters,
    )
    cli = [
        await omectl(base, *effective, "-o", "yaml"),
        await omectl(base, *effective, "-o", "json"),
        await omectl(base, "trace", "explain", "ClusterServingRuntime", "sglang-profile", "-f", trace_file),
        await omectl(base, "trace", "explain", "ServingRuntime", f"{NS}/orphan", "-f", trace_file, "-o", "json"),
        await omectl(base, "trace", "list", "-f", trace_file),
        await omectl(base, "cluster", "status", "--status-file", str(base / "status.json")),
        await omectl(base, "cluster", "list", "--clusters-dir", clusters),
    ]
    assert f"value: {REDACTED}" in cli[0] and "secretKeyRef" in cli[0]  # the env is shown, its secret is not
    assert "env[name=HF_TOKEN].value" in cli[2]
    assert "broken" in cli[5] and "unreachable" in cli[5]
    assert "http://127.0.0.1:9" in cli[6]  # the server shown, without its user and password
    for written in (base / "status.json", Path(trace_file)):  # what the controller writes: its owner's only
        assert written.stat().st_mode & 0o777 == 0o600, written
    # the failed reconcile's span, with its exception event
    failed = next(line.split()[-1] for line in cli[4].splitlines() if " error " in line)
    cli.append(await omectl(base, "trace", "show", failed, "-f", trace_file))
    assert "injected fault" in cli[-1]

    logged = running.log.getvalue()
    log_lines = logged.splitlines()
    assert any('"cluster":"sec-1"' in line and "trace_id" in line for line in log_lines)
    places = {
        "log": logged,
        "events": str(events(server)),
        "traces": read(Path(trace_file)),
        "metrics": metrics,
        "status file": read(base / "status.json"),
        **{f"cli {i}": out for i, out in enumerate(cli)},
    }
    leaks = [(where, s) for where, text in places.items() for s in SECRETS if s in text]
    assert not leaks, leaks
