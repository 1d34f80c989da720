"""The RBAC evaluator (omectl/kube/rbac.py) against the API server authorizer's rules, table by table."""

from __future__ import annotations

import pytest

from omectl.kube.rbac import Grant, PolicyRule, Request, Role, denied, implied_requests, request_verb

CLUSTER_ROLE = Role.from_manifest(
    {
        "kind": "ClusterRole",
        "metadata": {"name": "r"},
        "rules": [
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list", "watch", "patch"]},
            {"apiGroups": [""], "resources": ["services", "pods/log"], "verbs": ["get"]},
            {"apiGroups": ["ome.io"], "resources": ["inferenceservices/status"], "verbs": ["update"]},
            {
                "apiGroups": ["admissionregistration.k8s.io"],
                "resources": ["validatingwebhookconfigurations"],
                "resourceNames": ["mine"],
                "verbs": ["patch", "delete"],
            },
            {"apiGroups": ["batch"], "resources": ["*/status"], "verbs": ["update"]},
            {"apiGroups": ["*"], "resources": ["widgets"], "verbs": ["*"]},
            {"nonResourceURLs": ["/healthz", "/metrics/*"], "verbs": ["get"]},
        ],
    }
)


@pytest.mark.parametrize(
    ("request_", "allowed"),
    [
        # verbs and groups
        (Request("get", "apps", "deployments", namespace="a", name="d"), True),
        (Request("list", "apps", "deployments"), True),
        (Request("watch", "apps", "deployments", namespace="a"), True),
        (Request("patch", "apps", "deployments", namespace="a", name="d"), True),
        (Request("create", "apps", "deployments", namespace="a"), False),
        (Request("update", "apps", "deployments", namespace="a", name="d"), False),
        (Request("delete", "apps", "deployments", namespace="a", name="d"), False),
        (Request("get", "", "deployments", namespace="a", name="d"), False),  # wrong group
        (Request("get", "extensions", "deployments", namespace="a", name="d"), False),
        # subresources are separate resources
        (Request("get", "apps", "deployments", "status", "a", "d"), False),
        (Request("get", "", "pods", "log", "a", "p"), True),
        (Request("get", "", "pods", "", "a", "p"), False),
        (Request("update", "ome.io", "inferenceservices", "status", "a", "i"), True),
        (Request("update", "ome.io", "inferenceservices", "", "a", "i"), False),
        (Request("patch", "ome.io", "inferenceservices", "status", "a", "i"), False),
        # */subresource
        (Request("update", "batch", "jobs", "status", "a", "j"), True),
        (Request("update", "batch", "cronjobs", "status", "a", "j"), True),
        (Request("update", "batch", "jobs", "", "a", "j"), False),
        (Request("update", "batch", "jobs", "scale", "a", "j"), False),
        # resourceNames: only requests naming one of them
        (Request("patch", "admissionregistration.k8s.io", "validatingwebhookconfigurations", name="mine"), True),
        (Request("delete", "admissionregistration.k8s.io", "validatingwebhookconfigurations", name="mine"), True),
        (Request("patch", "admissionregistration.k8s.io", "validatingwebhookconfigurations", name="other"), False),
        (Request("patch", "admissionregistration.k8s.io", "validatingwebhookconfigurations"), False),
        # wildcards
        (Request("deletecollection", "anything.io", "widgets", namespace="a"), True),
        (Request("escalate", "", "widgets", name="w"), True),
        # non-resource URLs: exact or a prefix ending in *
        (Request("get", path="/healthz"), True),
        (Request("get", path="/healthz/ready"), False),
        (Request("get", path="/metrics/x/y"), True),
        (Request("post", path="/healthz"), False),
        (Request("get", path="/apis"), False),
    ],
    ids=lambda v: v.describe() if isinstance(v, Request) else str(v),
)
def test_cluster_role_rules(request_: Request, allowed: bool) -> None:
    assert CLUSTER_ROLE.allows(request_) is allowed


ROLE = Role.from_manifest(
    {
        "kind": "Role",
        "metadata": {"name": "hub", "namespace": "omectl-system"},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list", "watch"]}],
    }
)


@pytest.mark.parametrize(
    ("request_", "allowed"),
    [
        (Request("list", "", "secrets", namespace="omectl-system"), True),
        (Request("watch", "", "secrets", namespace="omectl-system"), True),
        (Request("get", "", "secrets", namespace="omectl-system", name="s"), False),
        (Request("list", "", "secrets", namespace="default"), False),  # a Role grants only in its namespace
        (Request("list", "", "secrets"), False),  # all namespaces
        (Request("list", "", "configmaps", namespace="omectl-system"), False),
    ],
    ids=lambda v: v.describe() if isinstance(v, Request) else str(v),
)
def test_a_role_grants_only_in_its_namespace(request_: Request, allowed: bool) -> None:
    assert ROLE.allows(request_) is allowed


@pytest.mark.parametrize(
    ("method", "named", "watch", "verb"),
    [
        ("GET", True, False, "get"),
        ("GET", False, False, "list"),
        ("GET", False, True, "watch"),
        ("GET", True, True, "watch"),
        ("HEAD", True, False, "get"),
        ("POST", False, False, "create"),
        ("PUT", True, False, "update"),
        ("PATCH", True, False, "patch"),
        ("DELETE", True, False, "delete"),
        ("DELETE", False, False, "deletecollection"),
        ("patch", True, False, "patch"),
    ],
)
def test_request_verb(method: str, named: bool, watch: bool, verb: str) -> None:
    assert request_verb(method, named, watch) == verb


@pytest.mark.parametrize(
    ("verb", "code", "extra"),
    [("patch", 201, True), ("update", 201, True), ("patch", 200, False), ("create", 201, False), ("get", 200, False)],
)
def test_a_write_that_creates_is_also_a_create(verb: str, code: int, extra: bool) -> None:
    request = Request(verb, "apps", "deployments", namespace="a", name="d")
    implied = implied_requests(request, code)
    assert implied[0] == request
    assert implied[1:] == ([Request("create", "apps", "deployments", namespace="a")] if extra else [])


def test_an_apply_that_creates_needs_create_even_where_patch_is_limited_by_name() -> None:
    request = Request("patch", "admissionregistration.k8s.io", "validatingwebhookconfigurations", name="mine")
    assert denied(CLUSTER_ROLE, implied_requests(request, 200)) == []
    assert [r.verb for r in denied(CLUSTER_ROLE, implied_requests(request, 201))] == ["create"]


def test_matching_rules_and_grants() -> None:
    assert CLUSTER_ROLE.matching_rules(Request("get", "apps", "deployments", namespace="a", name="d")) == [0]
    assert CLUSTER_ROLE.matching_rules(Request("create", "apps", "deployments", namespace="a")) == []
    grants = [g for g in CLUSTER_ROLE.grants() if g.rule in (0, 3)]
    assert [g.describe() for g in grants] == [
        "get deployments.apps",
        "list deployments.apps",
        "watch deployments.apps",
        "patch deployments.apps",
        "patch validatingwebhookconfigurations.admissionregistration.k8s.io [mine]",
        "delete validatingwebhookconfigurations.admissionregistration.k8s.io [mine]",
    ]
    named = Grant(3, "admissionregistration.k8s.io", "validatingwebhookconfigurations", "patch", ("mine",))
    hit = Request("patch", "admissionregistration.k8s.io", "validatingwebhookconfigurations", name="mine")
    assert CLUSTER_ROLE.grant_allows(named, hit)
    assert not CLUSTER_ROLE.grant_allows(named, Request("patch", hit.group, hit.resource, name="x"))
    assert ROLE.grant_allows(next(ROLE.grants()), Request("list", "", "secrets", namespace="omectl-system"))
    assert not ROLE.grant_allows(next(ROLE.grants()), Request("list", "", "secrets", namespace="kube-system"))


def test_from_dict_reads_every_field_and_rejects_other_kinds() -> None:
    rule = PolicyRule.from_dict(
        {"apiGroups": ["a"], "resources": ["r"], "resourceNames": ["n"], "verbs": ["get"], "nonResourceURLs": []}
    )
    assert rule == PolicyRule(("get",), ("a",), ("r",), ("n",), ())
    with pytest.raises(ValueError, match="not a Role"):
        Role.from_manifest({"kind": "RoleBinding"})
