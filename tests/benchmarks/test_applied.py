"""benchmarks/applied.py reads back from an object's managedFields what one field manager server-side applied to
it, against the embedded API server: the body it sent, without what the server defaulted or others wrote."""

from __future__ import annotations

import copy
from typing import Any

from benchmarks.applied import applied_configuration
from tests.support import RawClient

APPLY = "application/apply-patch+yaml"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
SERVICES = "/api/v1/namespaces/default/services"


def deployment() -> dict[str, Any]:
    """Shaped like an engine the controller renders: keyed lists (containers, env, ports, volumes, mounts), an
    atomic one (args), nested maps (resources), labels and annotations."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "chat-engine",
            "namespace": "default",
            "labels": {"ome.io/inferenceservice": "chat", "app": "chat"},
            "annotations": {"omectl.io/render-hash": "abc"},
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "chat"}},
            "template": {
                "metadata": {"labels": {"app": "chat"}},
                "spec": {
                    "containers": [
                        {
                            "name": "ome-container",
                            "image": "sglang:v1",
                            "args": ["--model", "/mnt/models", "--port", "8080"],
                            "env": [{"name": "MODEL_PATH", "value": "/mnt/models"}, {"name": "B", "value": "2"}],
                            "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
                            "resources": {"limits": {"nvidia.com/gpu": "1"}, "requests": {"cpu": "2"}},
                            "volumeMounts": [{"name": "models", "mountPath": "/mnt/models"}],
                        },
                        {"name": "sidecar", "image": "busybox"},
                    ],
                    "volumes": [{"name": "models", "emptyDir": {}}],
                },
            },
        },
    }


def service() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "chat-engine", "namespace": "default", "labels": {"ome.io/inferenceservice": "chat"}},
        "spec": {
            "selector": {"app": "chat"},
            "ports": [{"name": "http", "port": 8080, "targetPort": 8080, "protocol": "TCP"}],
        },
    }


async def test_the_applied_configuration_is_the_body_applied_without_defaults_or_other_managers_fields(
    raw: RawClient,
) -> None:
    for path, body in ((DEPLOYMENTS, deployment()), (SERVICES, service())):
        name = body["metadata"]["name"]
        sent = copy.deepcopy(body)
        assert (await raw.patch(f"{path}/{name}?fieldManager=omectl&force=true", body, APPLY)).status in (200, 201)
        meta = {"name": name, "namespace": "default", "labels": {"team": "someone-else"}}
        other = {"apiVersion": body["apiVersion"], "kind": body["kind"], "metadata": meta}
        assert (await raw.patch(f"{path}/{name}?fieldManager=someone-else", other, APPLY)).status == 200
        live = (await raw.get(f"{path}/{name}")).body
        assert live["metadata"]["labels"]["team"] == "someone-else"  # the live object holds more than was applied

        assert applied_configuration(live, "omectl") == sent
        assert applied_configuration(live, "someone-else") == other
        assert applied_configuration(live, "never-applied") is None


async def test_an_item_dropped_from_a_later_apply_is_not_in_the_applied_configuration(raw: RawClient) -> None:
    body = deployment()
    await raw.patch(f"{DEPLOYMENTS}/chat-engine?fieldManager=omectl&force=true", body, APPLY)
    body["spec"]["template"]["spec"]["containers"].pop()  # the sidecar
    body["spec"]["template"]["spec"]["containers"][0]["env"].pop()  # env B
    await raw.patch(f"{DEPLOYMENTS}/chat-engine?fieldManager=omectl&force=true", body, APPLY)
    live = (await raw.get(f"{DEPLOYMENTS}/chat-engine")).body

    assert applied_configuration(live, "omectl") == body
