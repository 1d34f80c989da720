"""Built-in workloads are stored with kube-apiserver's defaults, never overriding what the writer set."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from omectl.sim.apiserver.builtin_defaults import apply_builtin_defaults, image_pull_policy


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("registry.example:5000/team/engine", "Always"),
        ("registry.example:5000/team/engine:v1", "IfNotPresent"),
        ("vllm/vllm-openai:v0.9.0", "IfNotPresent"),
        ("repo/img@sha256:" + "0" * 64, "IfNotPresent"),
    ],
)
def test_the_pull_policy_follows_the_tag(image: str, policy: str) -> None:
    assert image_pull_policy(image) == policy


def deployment(container: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"spec": {**spec, "template": {"spec": {"containers": [container]}}}}


def test_a_deployment_gets_every_default_of_its_own_its_pod_and_its_container() -> None:
    obj = deployment({"name": "e", "image": "vllm/vllm-openai:v0.9.0", "ports": [{"containerPort": 8080}]})
    apply_builtin_defaults("apps", "Deployment", obj)
    assert obj == {
        "spec": {
            "replicas": 1,
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "e",
                            "image": "vllm/vllm-openai:v0.9.0",
                            "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                            "imagePullPolicy": "IfNotPresent",
                            "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "File",
                            "resources": {},
                        }
                    ],
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst",
                    "securityContext": {},
                    "schedulerName": "default-scheduler",
                }
            },
        }
    }


def test_what_the_writer_set_is_kept() -> None:
    container = {"name": "e", "image": "i:latest", "imagePullPolicy": "Never", "resources": {"limits": {"cpu": "1"}}}
    obj = deployment(container, replicas=0, strategy={"type": "Recreate"})
    apply_builtin_defaults("apps", "Deployment", obj)
    assert obj["spec"]["replicas"] == 0
    assert obj["spec"]["strategy"] == {"type": "Recreate"}  # no rollingUpdate for Recreate
    (stored,) = obj["spec"]["template"]["spec"]["containers"]
    assert (stored["imagePullPolicy"], stored["resources"]) == ("Never", {"limits": {"cpu": "1"}})


def test_defaulting_twice_changes_nothing_more() -> None:
    obj = deployment({"name": "e", "image": "i", "livenessProbe": {"httpGet": {"port": 80}}})
    apply_builtin_defaults("apps", "Deployment", obj)
    once = copy.deepcopy(obj)
    apply_builtin_defaults("apps", "Deployment", obj)
    assert obj == once
    probe = obj["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]
    assert probe == {
        "httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }


def test_a_job_and_a_pod() -> None:
    job: dict[str, Any] = {"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": []}}}}
    apply_builtin_defaults("batch", "Job", job)
    spec = job["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert (spec["completionMode"], spec["suspend"], spec["podReplacementPolicy"]) == (
        "NonIndexed",
        False,
        "TerminatingOrFailed",
    )
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    pod: dict[str, Any] = {
        "spec": {"containers": [{"name": "c", "image": "i"}], "volumes": [{"name": "v", "configMap": {"name": "x"}}]}
    }
    apply_builtin_defaults("", "Pod", pod)
    assert pod["spec"]["enableServiceLinks"] is True
    assert pod["spec"]["volumes"][0]["configMap"]["defaultMode"] == 0o644


def test_other_kinds_are_left_alone() -> None:
    config_map = {"data": {"a": "1"}}
    apply_builtin_defaults("", "ConfigMap", config_map)
    assert config_map == {"data": {"a": "1"}}


def test_a_service_gets_its_type_affinity_traffic_policy_and_port_defaults() -> None:
    service: dict[str, Any] = {"spec": {"ports": [{"port": 80}, {"port": 81, "targetPort": "http", "protocol": "UDP"}]}}
    apply_builtin_defaults("", "Service", service)
    assert service == {
        "spec": {
            "type": "ClusterIP",
            "sessionAffinity": "None",
            "internalTrafficPolicy": "Cluster",
            "ports": [
                {"port": 80, "protocol": "TCP", "targetPort": 80},
                {"port": 81, "targetPort": "http", "protocol": "UDP"},
            ],
        }
    }


def test_node_port_load_balancer_and_client_ip_services_get_theirs() -> None:
    balanced: dict[str, Any] = {"spec": {"type": "LoadBalancer", "sessionAffinity": "ClientIP", "ports": [{"port": 1}]}}
    apply_builtin_defaults("", "Service", balanced)
    spec = balanced["spec"]
    assert (spec["externalTrafficPolicy"], spec["allocateLoadBalancerNodePorts"]) == ("Cluster", True)
    assert spec["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}
    node_port: dict[str, Any] = {"spec": {"type": "NodePort", "externalTrafficPolicy": "Local", "ports": [{"port": 1}]}}
    apply_builtin_defaults("", "Service", node_port)
    assert node_port["spec"]["externalTrafficPolicy"] == "Local"
    assert "allocateLoadBalancerNodePorts" not in node_port["spec"]
    external: dict[str, Any] = {"spec": {"type": "ExternalName", "externalName": "example.com"}}
    apply_builtin_defaults("", "Service", external)
    assert external["spec"] == {"type": "ExternalName", "externalName": "example.com", "sessionAffinity": "None"}


def test_a_claim_is_filesystem_and_pending_unless_it_says_otherwise() -> None:
    claim: dict[str, Any] = {"spec": {"accessModes": ["ReadWriteOnce"]}}
    apply_builtin_defaults("", "PersistentVolumeClaim", claim)
    assert claim == {
        "spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem"},
        "status": {"phase": "Pending"},
    }
    block: dict[str, Any] = {"spec": {"volumeMode": "Block"}, "status": {"phase": "Bound"}}
    apply_builtin_defaults("", "PersistentVolumeClaim", block)
    assert block == {"spec": {"volumeMode": "Block"}, "status": {"phase": "Bound"}}


def test_a_pod_requests_what_it_limits_a_template_does_not() -> None:
    limited = {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}
    pod: dict[str, Any] = {"spec": {"containers": [{"name": "c", "image": "i", "resources": copy.deepcopy(limited)}]}}
    apply_builtin_defaults("", "Pod", pod)
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "500m", "memory": "1Gi"}
    template = deployment({"name": "c", "image": "i", "resources": copy.deepcopy(limited)})
    apply_builtin_defaults("apps", "Deployment", template)
    assert template["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "500m"}


def test_a_role_binding_names_the_rbac_group_for_users_and_groups() -> None:
    binding: dict[str, Any] = {
        "roleRef": {"kind": "Role", "name": "r"},
        "subjects": [
            {"kind": "ServiceAccount", "name": "sa"},
            {"kind": "User", "name": "u"},
            {"kind": "Group", "name": "g"},
        ],
    }
    apply_builtin_defaults("rbac.authorization.k8s.io", "ClusterRoleBinding", binding)
    assert binding["roleRef"]["apiGroup"] == "rbac.authorization.k8s.io"
    rbac = "rbac.authorization.k8s.io"
    assert [s.get("apiGroup") for s in binding["subjects"]] == [None, rbac, rbac]
