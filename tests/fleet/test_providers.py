"""Registration providers: a directory of files (rescanned) and labelled Secrets in an embedded hub cluster."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.fleet.providers import (
    DirectoryProvider,
    RegistrationProvider,
    RegistryChange,
    SecretProvider,
    clusters_dir_from_env,
    provider_from_settings,
)
from omectl.kube.client import ClusterClient
from omectl.sim.apiserver.api import WriteOptions
from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.kubeconfig import KubeconfigEntry, build_kubeconfig, write_kubeconfig

DEADLINE = 10.0


def kubeconfig(path: Path, name: str, *, token: str = "t0", port: int = 7000) -> Path:
    return write_kubeconfig(path, [KubeconfigEntry(name=name, server=f"http://127.0.0.1:{port}", token=token)])


def register(directory: Path, file: str, name: str, kubeconfig_path: str, labels: dict[str, str] | None = None) -> Path:
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = labels
    document = {
        "apiVersion": "omectl.io/v1alpha1",
        "kind": "ClusterRegistration",
        "metadata": metadata,
        "spec": {"kubeconfig": {"path": kubeconfig_path}},
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / file
    path.write_text(yaml.safe_dump(document))
    return path


def summary(batch: list[RegistryChange]) -> list[tuple[str, str]]:
    return [(change.kind, change.registration.name) for change in batch]


async def next_batch(stream: AsyncIterator[list[RegistryChange]]) -> list[RegistryChange]:
    return await asyncio.wait_for(anext(stream), DEADLINE)


@pytest.fixture
def clusters(tmp_path: Path) -> Path:
    directory = tmp_path / "clusters"
    directory.mkdir()
    kubeconfig(directory / "a.kubeconfig", "a")
    kubeconfig(directory / "b.kubeconfig", "b")
    return directory


# --- DirectoryProvider -------------------------------------------------------------------------------------


async def test_directory_first_batch_is_everything_present_and_other_yaml_is_ignored(clusters: Path) -> None:
    register(clusters, "b.yaml", "b", "b.kubeconfig")
    register(clusters, "a.yml", "a", "a.kubeconfig", {"region": "eu"})
    (clusters / "kind.yaml").write_text("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes: []\n")
    (clusters / "notes.txt").write_text("not yaml at all: [")
    (clusters / "nested").mkdir()
    register(clusters / "nested", "c.yaml", "c", "../a.kubeconfig")
    provider = DirectoryProvider(clusters, poll_interval=3600)
    stream = provider.watch()
    first = await next_batch(stream)
    assert summary(first) == [("added", "a"), ("added", "b")]
    assert sorted(provider.snapshot()) == ["a", "b"]
    assert provider.snapshot()["a"].labels == {"region": "eu"}
    assert provider.errors == {}
    assert isinstance(provider, RegistrationProvider)
    await stream.aclose()


async def test_directory_first_batch_is_empty_for_an_empty_directory(tmp_path: Path) -> None:
    provider = DirectoryProvider(tmp_path, poll_interval=3600)
    stream = provider.watch()
    assert await next_batch(stream) == []
    await stream.aclose()


async def test_directory_add_change_and_remove_reach_a_running_watch(clusters: Path) -> None:
    register(clusters, "a.yaml", "a", "a.kubeconfig")
    provider = DirectoryProvider(clusters, poll_interval=3600)
    stream = provider.watch()
    assert summary(await next_batch(stream)) == [("added", "a")]

    register(clusters, "b.yaml", "b", "b.kubeconfig")
    assert summary(await provider.rescan()) == [("added", "b")]
    assert summary(await next_batch(stream)) == [("added", "b")]

    register(clusters, "b.yaml", "b", "b.kubeconfig", {"gpu": "h200"})
    changed = await provider.rescan()
    assert summary(changed) == [("changed", "b")]
    assert changed[0].registration.labels == {"gpu": "h200"}
    assert await next_batch(stream) == changed

    old_a = provider.snapshot()["a"]
    (clusters / "a.yaml").unlink()
    removed = await provider.rescan()
    assert removed == [RegistryChange("removed", old_a)]
    assert await next_batch(stream) == removed
    assert sorted(provider.snapshot()) == ["b"]

    assert await provider.rescan() == []
    await stream.aclose()


async def test_directory_rotated_kubeconfig_content_is_a_change(clusters: Path) -> None:
    register(clusters, "a.yaml", "a", "a.kubeconfig")
    provider = DirectoryProvider(clusters, poll_interval=3600)
    await provider.rescan()
    before = provider.snapshot()["a"]
    kubeconfig(clusters / "a.kubeconfig", "a", token="rotated")
    changes = await provider.rescan()
    assert summary(changes) == [("changed", "a")]
    after = changes[0].registration
    assert after.kubeconfig_path == before.kubeconfig_path
    assert after.fingerprint != before.fingerprint


async def test_directory_duplicate_name_keeps_the_first_file_and_reports_the_second(clusters: Path) -> None:
    register(clusters, "b-second.yaml", "a", "b.kubeconfig")
    register(clusters, "a-first.yaml", "a", "a.kubeconfig")
    provider = DirectoryProvider(clusters, poll_interval=3600)
    await provider.rescan()
    assert provider.snapshot()["a"].source == str(clusters / "a-first.yaml")
    assert provider.errors == {
        str(clusters / "b-second.yaml"): 'duplicate cluster name "a" in a-first.yaml and b-second.yaml'
    }


async def test_directory_bad_files_are_reported_while_the_others_load(clusters: Path) -> None:
    register(clusters, "a.yaml", "a", "a.kubeconfig")
    register(clusters, "gone.yaml", "gone", "missing.kubeconfig")
    (clusters / "broken.yaml").write_text("apiVersion: omectl.io/v1alpha1\nkind: ClusterRegistration\n")
    (clusters / "ctx.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "omectl.io/v1alpha1",
                "kind": "ClusterRegistration",
                "metadata": {"name": "ctx"},
                "spec": {"kubeconfig": {"path": "b.kubeconfig"}, "context": "nope"},
            }
        )
    )
    provider = DirectoryProvider(clusters, poll_interval=3600)
    stream = provider.watch()
    assert summary(await next_batch(stream)) == [("added", "a")]
    assert provider.errors == {
        str(clusters / "broken.yaml"): f"{clusters / 'broken.yaml'}: metadata.name is required",
        str(clusters / "gone.yaml"): f"kubeconfig file not found: {clusters / 'missing.kubeconfig'}",
        str(clusters / "ctx.yaml"): (
            f'{clusters / "ctx.yaml"}: unknown context "nope" in {clusters / "b.kubeconfig"}; contexts: b'
        ),
    }

    kubeconfig(clusters / "missing.kubeconfig", "gone")
    assert summary(await provider.rescan()) == [("added", "gone")]
    assert summary(await next_batch(stream)) == [("added", "gone")]
    assert str(clusters / "gone.yaml") not in provider.errors
    await stream.aclose()


async def test_directory_scans_follow_the_kubeconfig_text_not_a_kept_verdict(clusters: Path) -> None:
    """Each registration's kubeconfig is parsed again only when its text changes (scans come every second): a
    kubeconfig broken and then mended is reported and then resolves, at the next scan each time."""
    for name in ("a", "a2", "a3"):
        register(clusters, f"{name}.yaml", name, "a.kubeconfig")
    provider = DirectoryProvider(clusters, poll_interval=3600)
    stream = provider.watch()
    assert sorted(summary(await next_batch(stream))) == [("added", "a"), ("added", "a2"), ("added", "a3")]
    assert await provider.rescan() == [] and provider.errors == {}

    text = (clusters / "a.kubeconfig").read_text()
    (clusters / "a.kubeconfig").write_text("clusters: [unclosed\n")
    await provider.rescan()
    assert sorted(provider.errors) == [str(clusters / f"{name}.yaml") for name in ("a", "a2", "a3")]
    assert all("cannot parse kubeconfig" in error for error in provider.errors.values())

    (clusters / "a.kubeconfig").write_text(text)
    await provider.rescan()
    assert provider.errors == {}
    await stream.aclose()


async def test_directory_missing_directory_is_an_error_until_it_appears(tmp_path: Path) -> None:
    directory = tmp_path / "later"
    provider = DirectoryProvider(directory, poll_interval=3600)
    stream = provider.watch()
    assert await next_batch(stream) == []
    assert provider.errors == {str(directory): f"clusters directory not found: {directory}"}
    kubeconfig(directory / "x.kubeconfig", "x")
    register(directory, "x.yaml", "x", "x.kubeconfig")
    assert summary(await provider.rescan()) == [("added", "x")]
    assert provider.errors == {}
    await stream.aclose()


async def test_directory_polling_notices_changes_without_a_manual_rescan(clusters: Path) -> None:
    provider = DirectoryProvider(clusters, poll_interval=0.01)
    stream = provider.watch()
    assert await next_batch(stream) == []
    register(clusters, "a.yaml", "a", "a.kubeconfig")
    assert summary(await next_batch(stream)) == [("added", "a")]
    await stream.aclose()


async def test_directory_close_ends_a_running_watch(clusters: Path) -> None:
    provider = DirectoryProvider(clusters, poll_interval=3600)
    stream = provider.watch()
    await next_batch(stream)
    pending = asyncio.ensure_future(anext(stream))
    await provider.close()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(pending, DEADLINE)


def test_clusters_dir_comes_from_the_argument_then_the_environment_then_the_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("OMECTL_CLUSTERS_DIR", raising=False)
    assert clusters_dir_from_env() == Path("clusters")
    monkeypatch.setenv("OMECTL_CLUSTERS_DIR", str(tmp_path / "env"))
    assert clusters_dir_from_env() == tmp_path / "env"
    assert clusters_dir_from_env(tmp_path / "flag") == tmp_path / "flag"


async def test_provider_from_settings_picks_a_directory_or_a_hub(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, server: EmbeddedAPIServer
) -> None:
    monkeypatch.setenv("OMECTL_CLUSTERS_DIR", str(tmp_path / "env"))
    by_env = await provider_from_settings()
    assert isinstance(by_env, DirectoryProvider)
    assert by_env.directory == tmp_path / "env"
    hub = await provider_from_settings(hub_kubeconfig=server.write_kubeconfig(tmp_path / "hub"), hub_namespace="ns")
    assert isinstance(hub, SecretProvider)
    assert (hub.namespace, hub.hub.server) == ("ns", server.url)
    await hub.close()


# --- SecretProvider ----------------------------------------------------------------------------------------

NAMESPACE = "omectl-system"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def kubeconfig_text(name: str, token: str = "t0", *, contexts: tuple[str, ...] = ()) -> str:
    names = contexts or (name,)
    entries = [KubeconfigEntry(name=n, server=f"http://127.0.0.1:{7100 + i}", token=token) for i, n in enumerate(names)]
    return yaml.safe_dump(build_kubeconfig(entries))


def secret(
    name: str,
    *,
    kubeconfig: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    context: str | None = None,
    registered: bool = True,
) -> dict[str, Any]:
    data = {"kubeconfig": b64(kubeconfig if kubeconfig is not None else kubeconfig_text(name))}
    if context is not None:
        data["context"] = b64(context)
    all_labels = {"omectl.io/cluster": "true"} if registered else {}
    all_labels.update(labels or {})
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": all_labels, "annotations": annotations or {}},
        "data": data,
    }


SECRETS = f"/api/v1/namespaces/{NAMESPACE}/secrets"


@pytest.fixture
async def hub(server: EmbeddedAPIServer, tmp_path: Path) -> AsyncIterator[ClusterClient]:
    client = await ClusterClient.from_kubeconfig(server.write_kubeconfig(tmp_path / "hub.kubeconfig"), name="hub")
    await client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": NAMESPACE}})
    yield client
    await client.close()


@pytest.fixture
async def secrets_provider(hub: ClusterClient) -> AsyncIterator[SecretProvider]:
    provider = SecretProvider(hub, NAMESPACE, backoff_initial=0.01, backoff_max=0.05)
    yield provider
    await provider.close()


async def until(provider: SecretProvider, condition: Callable[[], bool]) -> None:
    """Wait, within the deadline, for a refresh of the provider after which `condition` holds."""
    async with asyncio.timeout(DEADLINE):
        while not condition():
            await provider.wait_updated()


async def test_secrets_first_batch_maps_names_contexts_and_labels(
    hub: ClusterClient, secrets_provider: SecretProvider
) -> None:
    await hub.request("POST", SECRETS, body=secret("plain"))
    await hub.request(
        "POST",
        SECRETS,
        body=secret(
            "kc-east",
            kubeconfig=kubeconfig_text("east", contexts=("one", "two")),
            labels={"omectl.io/cluster-name": "east"},
            annotations={"omectl.io/label.region": "us-east", "omectl.io/label.gpu": "mi300x", "other": "x"},
            context="two",
        ),
    )
    await hub.request(
        "POST",
        SECRETS,
        body=secret(
            "by-annotation",
            kubeconfig=kubeconfig_text("x", contexts=("one", "two")),
            annotations={"omectl.io/context": "one"},
        ),
    )
    await hub.request("POST", SECRETS, body=secret("unlabelled", registered=False))
    stream = secrets_provider.watch()
    first = await next_batch(stream)
    assert summary(first) == [("added", "by-annotation"), ("added", "east"), ("added", "plain")]
    east = secrets_provider.snapshot()["east"]
    assert (east.context, east.labels, east.source) == (
        "two",
        {"region": "us-east", "gpu": "mi300x"},
        f"secret {NAMESPACE}/kc-east",
    )
    assert east.kubeconfig_inline == kubeconfig_text("east", contexts=("one", "two"))
    assert secrets_provider.snapshot()["by-annotation"].context == "one"
    assert secrets_provider.errors == {}
    await stream.aclose()


async def test_secrets_create_rotate_and_delete_reach_a_running_watch(
    hub: ClusterClient, secrets_provider: SecretProvider
) -> None:
    stream = secrets_provider.watch()
    assert await next_batch(stream) == []

    await hub.request("POST", SECRETS, body=secret("c1"))
    added = await next_batch(stream)
    assert summary(added) == [("added", "c1")]

    rotated = secret("c1", kubeconfig=kubeconfig_text("c1", token="rotated"))
    await hub.request("PUT", f"{SECRETS}/c1", body=rotated)
    changed = await next_batch(stream)
    assert summary(changed) == [("changed", "c1")]
    assert changed[0].registration.fingerprint != added[0].registration.fingerprint

    # A change that is not the registration's (an unrelated annotation) publishes nothing; the next real one does.
    await hub.request(
        "PATCH",
        f"{SECRETS}/c1",
        body={"metadata": {"annotations": {"note": "x"}}},
        content_type="application/merge-patch+json",
    )
    await hub.request("POST", SECRETS, body=secret("c2"))
    assert summary(await next_batch(stream)) == [("added", "c2")]

    await hub.request("DELETE", f"{SECRETS}/c1")
    removed = await next_batch(stream)
    assert summary(removed) == [("removed", "c1")]
    assert sorted(secrets_provider.snapshot()) == ["c2"]

    # Removing the label takes the cluster out of the selector: the watch reports it as deleted.
    await hub.request(
        "PATCH",
        f"{SECRETS}/c2",
        body={"metadata": {"labels": {"omectl.io/cluster": None}}},
        content_type="application/merge-patch+json",
    )
    assert summary(await next_batch(stream)) == [("removed", "c2")]
    await stream.aclose()


async def test_secrets_bad_and_duplicate_entries_are_reported_while_others_load(
    hub: ClusterClient, secrets_provider: SecretProvider
) -> None:
    bad = secret("no-kubeconfig")
    bad["data"] = {"other": b64("x")}
    await hub.request("POST", SECRETS, body=bad)
    await hub.request("POST", SECRETS, body=secret("ctx", context="nope"))
    await hub.request("POST", SECRETS, body=secret("a-first", labels={"omectl.io/cluster-name": "dup"}))
    await hub.request("POST", SECRETS, body=secret("b-second", labels={"omectl.io/cluster-name": "dup"}))
    await hub.request("POST", SECRETS, body=secret("good"))
    stream = secrets_provider.watch()
    assert summary(await next_batch(stream)) == [("added", "dup"), ("added", "good")]
    assert secrets_provider.snapshot()["dup"].source == f"secret {NAMESPACE}/a-first"
    source = f"secret {NAMESPACE}"
    assert secrets_provider.errors == {
        f"{source}/no-kubeconfig": f"{source}/no-kubeconfig: data.kubeconfig is missing",
        f"{source}/ctx": (
            f'{source}/ctx: unknown context "nope" in the inline kubeconfig of {source}/ctx; contexts: ctx'
        ),
        f"{source}/b-second": 'duplicate cluster name "dup" in secret a-first and secret b-second',
    }
    await stream.aclose()


async def test_secrets_missed_changes_are_found_by_a_relist_after_410(
    server: EmbeddedAPIServer, hub: ClusterClient, secrets_provider: SecretProvider
) -> None:
    await hub.request("POST", SECRETS, body=secret("keep"))
    await hub.request("POST", SECRETS, body=secret("drop"))
    stream = secrets_provider.watch()
    assert summary(await next_batch(stream)) == [("added", "drop"), ("added", "keep")]

    await server.partition()
    await until(secrets_provider, lambda: "hub" in secrets_provider.errors)
    assert secrets_provider.errors["hub"].startswith(f"hub secrets in {NAMESPACE}: cluster hub: ")
    assert sorted(secrets_provider.snapshot()) == ["drop", "keep"]  # an unreachable hub removes nothing

    # While the hub is cut off, a registration goes away and the history that recorded it is compacted.
    rt = server.api.types.lookup("", "v1", "secrets")
    assert rt is not None
    await server.api.delete(rt, NAMESPACE, "drop", {}, WriteOptions(field_manager="test"))
    server.api.store.compact()
    await server.heal()

    assert summary(await next_batch(stream)) == [("removed", "drop")]
    assert "hub" not in secrets_provider.errors
    await stream.aclose()


async def test_secrets_a_watch_refused_with_410_or_500_lists_again_or_reports_and_resumes(
    server: EmbeddedAPIServer, hub: ClusterClient, secrets_provider: SecretProvider
) -> None:
    await hub.request("POST", SECRETS, body=secret("first"))
    stream = secrets_provider.watch()
    assert summary(await next_batch(stream)) == [("added", "first")]
    seq = server.request_log.total
    # The next watch is answered 410 (its resourceVersion too old): the provider lists again, losing nothing.
    server.faults.fail_next(1, 410, method="GET", path_contains="/secrets", include_watches=True)
    server.api.store.close_all_watches()  # the running watch ends; the provider resumes it
    await hub.request("POST", SECRETS, body=secret("second"))
    assert summary(await next_batch(stream)) == [("added", "second")]
    after = [r for r in server.request_log.records(seq) if r.resource == "secrets" and r.verb in ("list", "watch")]
    refused = next(r for r in after if r.verb == "watch" and r.code == 410)
    assert any(r.verb == "list" and r.code == 200 and r.seq > refused.seq for r in after)
    # A watch refused with a 500 is reported as the hub's error until the hub answers again.
    server.faults.fail_next(1, 500, method="GET", path_contains="/secrets", include_watches=True)
    server.api.store.close_all_watches()
    await until(secrets_provider, lambda: "injected fault" in secrets_provider.errors.get("hub", ""))
    await hub.request("POST", SECRETS, body=secret("third"))
    assert summary(await next_batch(stream)) == [("added", "third")]
    assert "hub" not in secrets_provider.errors
    await stream.aclose()
