"""Differential conformance, a first slice: kubectl scenarios against the embedded and the real server.

Every scenario runs the same kubectl steps against both (tests/envtest/fidelity.py); a difference must be listed in
`KNOWN` with the reason it stays, and a listed difference that has gone fails too. The last test writes
docs/fidelity.md from the results and fails when the committed page was stale.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from omectl.envtest import EnvtestBinaries
from omectl.envtest.controlplane import free_port
from omectl.sim.fleet import BackgroundFleet, EmbeddedFleet
from omectl.sim.simulator import parse_nodes_option
from omectl.tls import CertificateAuthority, server_ssl_context
from tests.conversion_webhook import GROUP as CONVERSION_GROUP
from tests.conversion_webhook import REFUSE_LABEL, ConversionWebhook, gizmo, gizmo_crd
from tests.support import Kubectl, real_kubectl_path, widget_crd
from tests.support import widget as namespaced_widget

from .conftest import CRDS, ROOT
from .fidelity import Result, Scenario, compare, render_fidelity_doc, run_scenario, step

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("envtest")]

FIDELITY_DOC = ROOT / "docs" / "fidelity.md"


def reapplied_webhook_config(timeout_seconds: int) -> dict[str, Any]:
    """A webhook configuration that leaves every defaulted field to the server (its rule matches nothing here)."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "fidelity-reapply"},
        "webhooks": [
            {
                "name": "nothing.fidelity.example.com",
                "clientConfig": {"url": "https://127.0.0.1:9/validate"},
                "rules": [
                    {
                        "operations": ["CREATE"],
                        "apiGroups": ["nothing.example.com"],
                        "apiVersions": ["v1"],
                        "resources": ["nothings"],
                    }
                ],
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "timeoutSeconds": timeout_seconds,
            }
        ],
    }


def dump(*docs: dict[str, Any]) -> str:
    return yaml.safe_dump_all(list(docs))


def widget(name: str, **spec: Any) -> dict[str, Any]:
    """A Widget without a namespace: each scenario runs in its own (`--namespace`)."""
    doc = namespaced_widget(name, **spec)
    del doc["metadata"]["namespace"]
    return doc


def service(name: str, ports: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": {"ports": ports}}


def deployment(name: str, container: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}},
        },
    }


def runtime(name: str, runner: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ServingRuntime",
        "metadata": {"name": name},
        "spec": {
            "supportedModelFormats": [
                {"modelFormat": {"name": "safetensors"}, "modelFramework": {"name": "transformers"}, "autoSelect": True}
            ],
            "engineConfig": {"runner": runner},
        },
    }


def event(name: str, involved_namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name},
        "involvedObject": {
            "kind": "Widget",
            "name": "w",
            "namespace": involved_namespace,
            "apiVersion": "example.com/v1",
        },
        "reason": "Tested",
        "message": "an event for the table",
        "type": "Normal",
        "count": 1,
        "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": "2026-01-01T00:00:00Z",
    }


def aim_profile_v1alpha1() -> dict[str, Any]:
    """Issue 18's example of a kind not served at a version: an AIMProfile at v1alpha1 (omectl's kind, served at
    v1alpha2 only; issue 18 found it with an AIMService, now served at both)."""
    return {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMProfile",
        "metadata": {"name": "profile"},
        "spec": {"modelName": "m"},
    }


SERVICES: list[dict[str, Any]] = [
    {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": spec,
    }
    for name, spec in (
        ("cluster-ip", {"selector": {"app": "a"}, "ports": [{"port": 80}]}),
        (
            "node-port",
            {
                "type": "NodePort",
                "ports": [
                    {"name": "web", "port": 80, "targetPort": "http"},
                    {"name": "q", "port": 443, "protocol": "UDP"},
                ],
            },
        ),
        ("load-balancer", {"type": "LoadBalancer", "ports": [{"port": 8080}]}),
        ("headless", {"clusterIP": "None", "selector": {"app": "a"}}),
        ("headless-unselected", {"clusterIP": "None", "ports": [{"name": "a", "port": 80}]}),
        ("external", {"type": "ExternalName", "externalName": "example.com"}),
        ("affinity", {"sessionAffinity": "ClientIP", "ports": [{"port": 80, "targetPort": 0}]}),
    )
]
CREATED: list[dict[str, Any]] = [
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "rb"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
        "subjects": [
            {"kind": "ServiceAccount", "name": "sa"},
            {"kind": "User", "name": "u"},
            {"kind": "Group", "name": "g"},
        ],
    },
    {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "pdb"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "a"}}},
    },
    {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "job"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i:1"}]}}},
    },
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "plain"},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    },
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "limited"},
        "spec": {
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 5,
                }
            ],
            "containers": [
                {"name": "c", "image": "i:1", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
                {"name": "d", "image": "i:1", "resources": {"requests": {"cpu": "100m"}}},
            ],
        },
    },
]
CLAIM: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "PersistentVolumeClaim",
    "metadata": {"name": "claim"},
    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    "status": {"phase": "Bound"},
}


def cel_rule_crd() -> dict[str, Any]:
    """A CRD whose schema has validation rules at the root, on spec, on fields, on list items and a transition rule."""
    spec = {
        "type": "object",
        "x-kubernetes-validations": [
            {
                "rule": "(has(self.a) ? 1 : 0) + (has(self.b) ? 1 : 0) == 1",
                "message": "exactly one of a or b must be set",
            },
            {
                "rule": "!has(self.min) || !has(self.max) || self.min <= self.max",
                "messageExpression": "'min is above max for ' + (has(self.a) ? self.a : self.b)",
            },
            {
                "rule": "!has(self.size) || self.size <= 10",
                "message": "size must be at most 10",
                "fieldPath": ".size",
                "reason": "FieldValueForbidden",
            },
        ],
        "properties": {
            "a": {
                "type": "string",
                "maxLength": 20,
                "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "a is immutable"}],
            },
            "b": {"type": "string", "maxLength": 20},
            "min": {"type": "integer"},
            "max": {"type": "integer"},
            "size": {"type": "integer"},
            "mode": {"type": "string", "enum": ["fast", "slow"]},
            "tags": {
                "type": "array",
                "maxItems": 5,
                "items": {
                    "type": "string",
                    "maxLength": 10,
                    "x-kubernetes-validations": [{"rule": "self.startsWith('t-')"}],
                },
            },
            "limits": {
                "type": "object",
                "properties": {"low": {"type": "integer"}, "high": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.low < self.high", "message": "low must be below high"}],
            },
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "celrules.cel.example.com"},
        "spec": {
            "group": "cel.example.com",
            "scope": "Namespaced",
            "names": {"plural": "celrules", "singular": "celrule", "kind": "Celrule"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-validations": [
                                {"rule": "self.metadata.name.startsWith('c-')", "message": "names start with c-"}
                            ],
                            "properties": {"spec": spec},
                        }
                    },
                }
            ],
        },
    }


def celrule(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "cel.example.com/v1", "kind": "Celrule", "metadata": {"name": name}, "spec": spec}


def cel_compile_crd() -> dict[str, Any]:
    """A CRD whose rules do not type-check: an undefined field, a syntax error, a type mismatch, an unknown function,
    a rule that is not a bool, a messageExpression that is not a string, and metadata beyond name at the root."""
    spec = {
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.nope == 1"},
            {"rule": "self.a ==", "message": "syntax"},
            {"rule": "self.m.x == 1"},
            {"rule": "self.a.frob()"},
            {"rule": "self.a"},
            {"rule": "true", "messageExpression": "1"},
            {"rule": "self.a.size() > 0 && self.__namespace__ != 'x'", "messageExpression": "self.a + 1"},
            {"rule": "oldSelf.hasValue() || self.pu.foo == 1", "optionalOldSelf": True},
        ],
        "properties": {
            "a": {"type": "string", "maxLength": 10},
            "namespace": {"type": "string", "maxLength": 10},
            "m": {"type": "object", "maxProperties": 5, "additionalProperties": {"type": "string", "maxLength": 10}},
            "pu": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }
    return _cel_crd(
        "celcompiles",
        "Celcompile",
        {
            "type": "object",
            "x-kubernetes-validations": [{"rule": "self.metadata.labels.size() > 0"}],
            "properties": {"spec": spec},
        },
    )


def cel_shape_crd() -> dict[str, Any]:
    """A CRD whose validation entries are malformed: no rule, a message with a line break, an unknown reason, a
    fieldPath outside the schema (and a rule that does not compile, not reported while those are)."""
    spec = {
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.nope == 1"},
            {"rule": "  "},
            {"rule": "true", "message": "two\nlines"},
            {"rule": "true", "reason": "FieldValueOdd"},
            {"rule": "true", "fieldPath": ".missing"},
            {"rule": "true", "fieldPath": ".a"},
        ],
        "properties": {"a": {"type": "string", "maxLength": 10}},
    }
    return _cel_crd("celshapes", "Celshape", {"type": "object", "properties": {"spec": spec}})


def cel_status_crd() -> dict[str, Any]:
    """A CRD with rules calling the Kubernetes CEL libraries, an optionalOldSelf rule, and rules on status."""

    def rule(kind: str, text: str, message: str, **extra: Any) -> dict[str, Any]:
        limit = {"maxItems": 5} if kind == "array" else {"maxLength": 40}
        items = {"items": {"type": "integer"}} if kind == "array" else {}
        return {
            "type": kind,
            **limit,
            **items,
            "x-kubernetes-validations": [{"rule": text, "message": message, **extra}],
        }

    spec = {
        "type": "object",
        "properties": {
            "q": rule("string", "isQuantity(self) && quantity(self).isLessThan(quantity('10Gi'))", "q under 10Gi"),
            "u": rule("string", "isURL(self) && url(self).getScheme() == 'https'", "https URL"),
            "l": rule("array", "self.isSorted() && self.sum() < 10", "sorted, sum under 10"),
            "f": rule("string", "self.find('[0-9]+') == '42'", "first number 42"),
            "o": rule("string", "oldSelf.hasValue() || self == 'first'", "created as first", optionalOldSelf=True),
            "ip": rule(
                "string", "isIP(self) && ip(self).family() == 4 && !ip(self).isLoopback()", "IPv4, not loopback"
            ),
            "net": rule("string", "isCIDR(self) && cidr('10.0.0.0/8').containsCIDR(self)", "inside 10.0.0.0/8"),
            "ts": {
                "type": "string",
                "format": "date-time",
                "x-kubernetes-validations": [
                    {"rule": "self > timestamp('2020-01-01T00:00:00Z')", "message": "after 2020"}
                ],
            },
            "dur": {
                "type": "string",
                "format": "duration",
                "x-kubernetes-validations": [{"rule": "self < duration('1h')", "message": "under an hour"}],
            },
        },
    }
    status = {
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "!has(self.phase) || self.phase != 'Bad'", "message": "phase may not be Bad"}
        ],
        "properties": {
            "phase": {
                "type": "string",
                "maxLength": 20,
                "x-kubernetes-validations": [
                    {"rule": "self != 'Done' || oldSelf == 'Running'", "message": "Done only after Running"}
                ],
            },
            "count": {"type": "integer", "maximum": 5},
        },
    }
    crd = _cel_crd("celstatuses", "Celstatus", {"type": "object", "properties": {"spec": spec, "status": status}})
    crd["spec"]["versions"][0]["subresources"] = {"status": {}}
    return crd


def _cel_crd(plural: str, kind: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.cel.example.com"},
        "spec": {
            "group": "cel.example.com",
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}],
        },
    }


def celstatus(name: str, **spec: Any) -> dict[str, Any]:
    good = {
        "q": "1Gi",
        "u": "https://x.example/p?a=1",
        "l": [1, 2, 3],
        "f": "ab42cd7",
        "o": "first",
        "ip": "10.0.0.1",
        "net": "10.2.0.0/16",
        "ts": "2021-05-01T00:00:00Z",
        "dur": "30m",
    }
    return {
        "apiVersion": "cel.example.com/v1",
        "kind": "Celstatus",
        "metadata": {"name": name},
        "spec": {**good, **spec},
    }


EVENT_TIME = {
    "eventTime": "2026-01-01T00:00:00.000000Z",
    "reportingComponent": "fidelity",
    "reportingInstance": "fidelity-1",
    "action": "Testing",
}

ENGINE = {"name": "engine", "image": "vllm/vllm-openai:v0.9.0"}

REFUSED = {REFUSE_LABEL: "true"}  # the test conversion webhook refuses objects labelled so

SCENARIOS = [
    Scenario(
        "api-resources",
        "kubectl api-resources for a CRD's group",
        (step("api-resources", "--api-group=example.com"),),
    ),
    Scenario(
        "apply-client-side",
        "client-side apply: created, unchanged, configured, and the object after",
        (
            step("apply", "-f", "-", input=dump(widget("csa", size=1))),
            step("apply", "-f", "-", input=dump(widget("csa", size=1))),
            step("apply", "-f", "-", input=dump(widget("csa", size=2))),
            step("get", "widget", "csa", "-o", "json", json=True),
        ),
    ),
    Scenario(
        "apply-server-side-conflict",
        "server-side apply: a conflict with another manager, then --force-conflicts",
        (
            step("apply", "--server-side", "-f", "-", input=dump(widget("ssa", size=1))),
            step("apply", "--server-side", "--field-manager=other", "-f", "-", input=dump(widget("ssa", size=5))),
            step(
                "apply",
                "--server-side",
                "--field-manager=other",
                "--force-conflicts",
                "-f",
                "-",
                input=dump(widget("ssa", size=5)),
            ),
            step("get", "widget", "ssa", "-o", "jsonpath={.spec.size}"),
        ),
    ),
    Scenario(
        "printer-columns",
        "a CRD's printer columns in `kubectl get`, after a status patch",
        (
            step("apply", "-f", "-", input=dump(widget("tbl", size=7, color="red"))),
            step(
                "patch",
                "widget",
                "tbl",
                "--subresource=status",
                "--type=merge",
                "-p",
                '{"status":{"conditions":[{"type":"Ready","status":"True"}]}}',
            ),
            step("get", "widgets", "tbl"),
            step("get", "wd", "tbl", "-o", "custom-columns=NAME:.metadata.name,READY:.status.conditions[0].status"),
        ),
    ),
    Scenario(
        "patch-types",
        "merge and JSON patches on a custom resource; a strategic merge patch is refused",
        (
            step("apply", "-f", "-", input=dump(widget("pt", size=1))),
            step("patch", "widget", "pt", "--type=merge", "-p", '{"spec":{"size":4}}'),
            step("patch", "widget", "pt", "--type=json", "-p", '[{"op":"add","path":"/spec/color","value":"green"}]'),
            step("patch", "widget", "pt", "-p", '{"spec":{"size":5}}'),
            step("get", "widget", "pt", "-o", "jsonpath={.spec}"),
        ),
    ),
    Scenario(
        "crd-schema-validation",
        "a value outside the CRD schema's maximum, and a value outside its enum",
        (
            step("apply", "-f", "-", input=dump(widget("bad", size=1000))),
            step("apply", "-f", "-", input=dump(widget("bad2", size=1, color="purple"))),
        ),
    ),
    Scenario(
        "crd-null-values",
        "nulls in a custom resource: dropped where the schema allows none and has no default (even with an enum), "
        "defaulted where it has one, kept under x-kubernetes-preserve-unknown-fields; on create and after a patch",
        (
            step("create", "-f", "-", input=dump(widget("nulls", size=None, color=None, mode=None, extra={"k": None}))),
            step("get", "widget", "nulls", "-o", "json", json=True),
            step("patch", "widget", "nulls", "--type=json", "-p", '[{"op":"add","path":"/spec/color","value":null}]'),
            step("get", "widget", "nulls", "-o", "json", json=True),
        ),
    ),
    Scenario(
        "cel-rule-denial",
        "CRD validation rules (x-kubernetes-validations): passing and failing objects, messageExpression, fieldPath "
        "and reason, list items, an evaluation error, a type error, and a transition rule on update",
        (
            step("apply", "-f", "-", input=dump(cel_rule_crd())),
            step("wait", "--for=condition=Established", "crd/celrules.cel.example.com", "--timeout=30s"),
            step("create", "-f", "-", input=dump(celrule("c-ok", a="x", min=1, max=2, size=1, tags=["t-1"]))),
            step("create", "-f", "-", input=dump(celrule("c-two", a="x", b="bee"))),
            step("create", "-f", "-", input=dump(celrule("c-minmax", b="bee", min=5, max=2))),
            step("create", "-f", "-", input=dump(celrule("c-size", b="bee", size=20))),
            step("create", "-f", "-", input=dump(celrule("c-tags", b="bee", tags=["t-1", "bad"]))),
            step("create", "-f", "-", input=dump(celrule("bad-name", b="bee"))),
            step("create", "-f", "-", input=dump(celrule("c-limits", b="bee", limits={"low": 1}))),
            step("create", "-f", "-", input=dump(celrule("c-type", a="x", b="bee", size="big"))),
            step("create", "-f", "-", input=dump(celrule("c-enum", a="x", b="bee", mode="odd"))),
            step("patch", "celrule", "c-ok", "--type=merge", "-p", '{"spec":{"a":"changed"}}'),
            step("patch", "celrule", "c-ok", "--type=merge", "-p", '{"spec":{"a":null,"b":"now-b"}}'),
            step("create", "-f", "-", input=dump(celrule("c-long", a="x" * 30, b="bee"))),
            step(
                "create",
                "-f",
                "-",
                input=dump(celrule("c-many", a="x", b="bee", size=20, limits={"low": 3, "high": 1})),
            ),
            step("create", "-f", "-", input=dump(celrule("c-items", b="bee", tags=["bad", "t-2", "bad3"]))),
            step("patch", "celrule", "c-ok", "--type=merge", "-p", '{"spec":{"a":"back","b":null}}'),
            step("get", "celrule", "c-ok", "-o", "jsonpath={.spec}"),
        ),
    ),
    Scenario(
        "cel-rule-compile",
        "a CRD whose validation rules do not type-check is refused, each rule with cel-go's compile error; one "
        "whose validation entries are malformed (no rule, a message with a line break, an unknown reason, a "
        "fieldPath outside the schema) is refused for those alone",
        (
            step("apply", "-f", "-", input=dump(cel_compile_crd())),
            step("get", "crd", "celcompiles.cel.example.com"),
            step("apply", "-f", "-", input=dump(cel_shape_crd())),
        ),
    ),
    Scenario(
        "cel-libraries-and-status",
        "validation rules calling the Kubernetes CEL libraries (quantity, URL, lists, regex, IP, CIDR), date-time "
        "and duration strings as timestamps and durations, an optionalOldSelf rule on create and update, and rules "
        "and the schema on status through the status subresource, a transition rule included",
        (
            step("apply", "-f", "-", input=dump(cel_status_crd())),
            step("wait", "--for=condition=Established", "crd/celstatuses.cel.example.com", "--timeout=30s"),
            step("create", "-f", "-", input=dump(celstatus("s1"))),
            step("create", "-f", "-", input=dump(celstatus("s-q", q="20Gi"))),
            step("create", "-f", "-", input=dump(celstatus("s-u", u="http://x.example/"))),
            step("create", "-f", "-", input=dump(celstatus("s-l", l=[3, 1]))),
            step("create", "-f", "-", input=dump(celstatus("s-f", f="a7b"))),
            step("create", "-f", "-", input=dump(celstatus("s-o", o="second"))),
            step("create", "-f", "-", input=dump(celstatus("s-ip", ip="127.0.0.1"))),
            step("create", "-f", "-", input=dump(celstatus("s-ip6", ip="::ffff:1.2.3.4"))),
            step("create", "-f", "-", input=dump(celstatus("s-net", net="11.0.0.0/8"))),
            step("create", "-f", "-", input=dump(celstatus("s-ts", ts="2019-05-01T00:00:00Z"))),
            step("create", "-f", "-", input=dump(celstatus("s-dur", dur="1h30m"))),
            step("patch", "celstatus", "s1", "--type=merge", "-p", '{"spec":{"o":"changed"}}'),
            step(
                "patch", "celstatus", "s1", "--subresource=status", "--type=merge", "-p", '{"status":{"phase":"Bad"}}'
            ),
            step("patch", "celstatus", "s1", "--subresource=status", "--type=merge", "-p", '{"status":{"count":9}}'),
            step(
                "patch", "celstatus", "s1", "--subresource=status", "--type=merge", "-p", '{"status":{"phase":"Done"}}'
            ),
            step(
                "patch",
                "celstatus",
                "s1",
                "--subresource=status",
                "--type=merge",
                "-p",
                '{"status":{"phase":"Running"}}',
            ),
            step(
                "patch", "celstatus", "s1", "--subresource=status", "--type=merge", "-p", '{"status":{"phase":"Done"}}'
            ),
            step("patch", "celstatus", "s1", "--type=merge", "-p", '{"spec":{"o":"again"}}'),
            step("get", "celstatus", "s1", "-o", "jsonpath={.spec.o} {.status.phase}"),
        ),
    ),
    Scenario(
        "crd-unknown-field",
        "an unknown field in a custom resource: kubectl's default (Strict) field validation, then --validate=false",
        (
            step("apply", "-f", "-", input=dump(widget("unk", size=1, bogus=True))),
            step("apply", "--validate=false", "-f", "-", input=dump(widget("unk", size=1, bogus=True))),
            step("get", "widget", "unk", "-o", "jsonpath={.spec}"),
        ),
    ),
    Scenario(
        "dry-run-server",
        "a server-side dry run creates nothing",
        (
            step("apply", "--dry-run=server", "-f", "-", input=dump(widget("dry"))),
            step("get", "widget", "dry"),
        ),
    ),
    Scenario(
        "not-found-and-delete",
        "get of a missing object; delete, then get",
        (
            step("get", "widget", "nope"),
            step("apply", "-f", "-", input=dump(widget("gone"))),
            step("delete", "widget", "gone"),
            step("get", "widget", "gone"),
        ),
    ),
    Scenario(
        "label-selector",
        "label an object and select by the label",
        (
            step("apply", "-f", "-", input=dump(widget("lab1"), widget("lab2"))),
            step("label", "widget", "lab1", "tier=gold"),
            step("get", "widgets", "-l", "tier=gold", "-o", "name"),
            step("get", "widgets", "-l", "tier!=gold,tier", "-o", "name"),
        ),
    ),
    Scenario(
        "unknown-kind",
        "apply of a kind no resource serves",
        (
            step(
                "apply",
                "-f",
                "-",
                input=dump({"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": "g"}}),
            ),
        ),
    ),
    Scenario(
        "deployment-bad-quantity",
        "a Deployment whose container asks for `cpu: lots`",
        (
            step(
                "apply", "-f", "-", input=dump(deployment("lots", {**ENGINE, "resources": {"limits": {"cpu": "lots"}}}))
            ),
        ),
    ),
    Scenario(
        "service-ports",
        "Services without ports, with a port out of range, an unknown protocol, two unnamed ports, a duplicate name",
        tuple(
            step("apply", "-f", "-", input=dump(service(name, ports)))
            for name, ports in (
                ("noports", []),
                ("zero", [{"port": 0}]),
                ("target", [{"port": 80, "targetPort": 70000}]),
                ("proto", [{"port": 80, "protocol": "FOO"}]),
                ("unnamed", [{"port": 80}, {"port": 81}]),
                ("dupe", [{"name": "http", "port": 80}, {"name": "http", "port": 81}]),
                ("good", [{"name": "http", "port": 80}, {"name": "grpc", "port": 81, "protocol": "UDP"}]),
            )
        ),
    ),
    Scenario(
        "deployment-unknown-field",
        "unknown fields in built-in kinds (a Deployment's container, a Service's port): Strict, then --validate=false",
        (
            step("apply", "-f", "-", input=dump(deployment("unknown", {**ENGINE, "bogus": "x"}))),
            step("apply", "--validate=false", "-f", "-", input=dump(deployment("unknown", {**ENGINE, "bogus": "x"}))),
            step(
                "get",
                "deployment",
                "unknown",
                "-o",
                "jsonpath={.spec.template.spec.containers[0].name} {.spec.template.spec.containers[0].bogus}",
            ),
            step("apply", "-f", "-", input=dump(service("unknown", [{"name": "http", "port": 80, "bogus": 1}]))),
            step("apply", "--validate=false", "-f", "-", input=dump(service("unknown", [{"port": 80, "bogus": 1}]))),
            step("get", "service", "unknown", "-o", "jsonpath={.spec.ports[0].port} {.spec.ports[0].bogus}"),
        ),
    ),
    Scenario(
        "pod-template-defaults",
        "a Deployment as stored: its defaults, its pod template's and its container's",
        (
            step("apply", "-f", "-", input=dump(deployment("defaults", ENGINE))),
            step("get", "deployment", "defaults", "-o", "jsonpath={.spec.template.spec.containers[0]}"),
            step("get", "deployment", "defaults", "-o", "jsonpath={.spec}"),
        ),
    ),
    Scenario(
        "deployment-missing-image",
        "a Deployment whose container has no image, and one whose selector does not match its template",
        (
            step("apply", "-f", "-", input=dump(deployment("noimage", {"name": "engine"}))),
            step(
                "apply",
                "-f",
                "-",
                input=dump(
                    {
                        **deployment("mismatch", ENGINE),
                        "spec": {
                            **deployment("mismatch", ENGINE)["spec"],
                            "selector": {"matchLabels": {"app": "other"}},
                        },
                    }
                ),
            ),
        ),
    ),
    Scenario(
        "deployment-table",
        "a Deployment made available by the simulator, in `kubectl get`",
        (
            step("apply", "-f", "-", input=dump(deployment("web", ENGINE))),
            step("wait", "--for=condition=Available", "deployment/web", "--timeout=30s"),
            step("get", "deployment", "web"),
            step("get", "deployment", "web", "-o", "jsonpath={.status.conditions[*].type}"),
        ),
    ),
    Scenario(
        "servingruntime-validation",
        "OME ServingRuntime: accepted, then refused without runner.name (CRD schema)",
        (
            step("apply", "-f", "-", input=dump(runtime("rt-ok", ENGINE))),
            step("apply", "-f", "-", input=dump(runtime("rt-bad", {"image": "vllm/vllm-openai:v0.9.0"}))),
            step("get", "servingruntimes"),
        ),
    ),
    Scenario(
        "configmap-generator",
        "kubectl create configmap (a protobuf body), then read it",
        (
            step("create", "configmap", "gen", "--from-literal=a=b"),
            step("get", "configmap", "gen", "-o", "jsonpath={.data}"),
            step("create", "configmap", "gen", "--from-literal=a=b"),
        ),
    ),
    Scenario(
        "namespace-lifecycle",
        "create a namespace, then an object in a namespace that does not exist",
        (
            step("create", "namespace", "fid-ns"),
            step("get", "namespace", "fid-ns"),
            step("create", "configmap", "x", "-n", "no-such-ns", "--from-literal=a=b"),
        ),
    ),
    Scenario(
        "explain",
        "kubectl explain on a CRD field (OpenAPI v3)",
        (step("explain", "widgets.spec.size"),),
    ),
    Scenario(
        "status-subresource",
        "a status patch ignores spec, a main-resource patch ignores status; generation moves on spec changes only",
        (
            step("apply", "-f", "-", input=dump(widget("st", size=1))),
            step(
                "patch",
                "widget",
                "st",
                "--subresource=status",
                "--type=merge",
                "-p",
                '{"spec":{"size":9},"status":{"phase":"Running"}}',
            ),
            step("patch", "widget", "st", "--type=merge", "-p", '{"status":{"phase":"Lost"}}'),
            step("get", "widget", "st", "-o", "jsonpath={.spec.size} {.status.phase} {.metadata.generation}"),
            step("patch", "widget", "st", "--type=merge", "-p", '{"spec":{"size":2}}'),
            step("get", "widget", "st", "-o", "jsonpath={.spec.size} {.status.phase} {.metadata.generation}"),
        ),
    ),
    Scenario(
        "finalizer-delete",
        "delete of an object with a finalizer marks it; removing the finalizer lets it go",
        (
            step(
                "apply",
                "-f",
                "-",
                input=dump({**widget("fin"), "metadata": {"name": "fin", "finalizers": ["x.io/hold"]}}),
            ),
            step("delete", "widget", "fin", "--wait=false"),
            step("get", "widget", "fin", "-o", "jsonpath={.metadata.deletionTimestamp} {.metadata.finalizers}"),
            step("patch", "widget", "fin", "--type=merge", "-p", '{"spec":{"size":3}}'),
            step(
                "patch",
                "widget",
                "fin",
                "--type=json",
                "-p",
                '[{"op":"add","path":"/metadata/finalizers/-","value":"y.io/new"}]',
            ),
            step("patch", "widget", "fin", "--type=merge", "-p", '{"metadata":{"finalizers":null}}'),
            step("get", "widget", "fin"),
        ),
    ),
    Scenario(
        "webhook-denial",
        "a validating admission webhook over TLS with `caBundle` denies a create, allows another",
        (
            step("label", "namespace", "@NS@", "fidelity-webhook=on"),
            step("apply", "-f", "-", input="@WEBHOOK_CONFIG@"),
            step("apply", "-f", "-", input=dump(widget("denied-red", color="red")), until_exit=1),
            step("apply", "-f", "-", input=dump(widget("allowed-red", color="red"))),
            step("delete", "validatingwebhookconfiguration", "fidelity-webhook"),
        ),
    ),
    Scenario(
        "webhook-config-reapply",
        "a ValidatingWebhookConfiguration server-side applied, then applied again with one field changed: the "
        "server's defaults (a rule's `scope`, `matchPolicy`, the selectors) on both writes",
        (
            step("apply", "--server-side", "-f", "-", input=dump(reapplied_webhook_config(10))),
            step("get", "validatingwebhookconfiguration", "fidelity-reapply", "-o", "json", json=True),
            step("apply", "--server-side", "-f", "-", input=dump(reapplied_webhook_config(5))),
            step("get", "validatingwebhookconfiguration", "fidelity-reapply", "-o", "json", json=True),
            step("delete", "validatingwebhookconfiguration", "fidelity-reapply"),
        ),
    ),
    Scenario(
        "ssa-builtin-conflict",
        "server-side apply on a ConfigMap: a second manager's conflict on a data key",
        (
            step(
                "apply",
                "--server-side",
                "-f",
                "-",
                input=dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "1"}}),
            ),
            step(
                "apply",
                "--server-side",
                "--field-manager=other",
                "-f",
                "-",
                input=dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "2"}}),
            ),
            step("get", "configmap", "cm", "-o", "jsonpath={.data}"),
        ),
    ),
    Scenario(
        "configmap-immutable",
        "an immutable ConfigMap refuses a change of its data",
        (
            step(
                "apply",
                "-f",
                "-",
                input=dump(
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "frozen"},
                        "data": {"a": "1"},
                        "immutable": True,
                    }
                ),
            ),
            step("patch", "configmap", "frozen", "--type=merge", "-p", '{"data":{"a":"2"}}'),
            step("get", "configmap", "frozen", "-o", "jsonpath={.data}"),
        ),
    ),
    Scenario(
        "secret-immutable",
        "a Secret's stringData folded into data; an immutable Secret refuses a change of data, and of its type",
        (
            step(
                "apply",
                "-f",
                "-",
                input=dump(
                    {
                        "apiVersion": "v1",
                        "kind": "Secret",
                        "metadata": {"name": "frozen"},
                        "stringData": {"token": "s3cret"},
                        "data": {"other": "MQ=="},
                        "immutable": True,
                    }
                ),
            ),
            step("get", "secret", "frozen", "-o", "jsonpath={.data}"),
            step("patch", "secret", "frozen", "--type=merge", "-p", '{"data":{"other":"Mg=="}}'),
            step("patch", "secret", "frozen", "--type=merge", "-p", '{"immutable":false}'),
            step("patch", "secret", "frozen", "--type=merge", "-p", '{"type":"example.com/custom"}'),
        ),
    ),
    Scenario(
        "workload-validation",
        "a Pod without containers, a Job whose container has no name, a Pod asking for `memory: 2 GB`, a valid Pod",
        (
            step("create", "-f", "-", input=dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "empty"}})),
            step(
                "create",
                "-f",
                "-",
                input=dump(
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "metadata": {"name": "noname"},
                        "spec": {
                            "template": {
                                "spec": {"containers": [{"image": "busybox:1"}], "restartPolicy": "Never"},
                            }
                        },
                    }
                ),
            ),
            step(
                "create",
                "-f",
                "-",
                input=dump(
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {"name": "spaced"},
                        "spec": {
                            "containers": [
                                {"name": "c", "image": "busybox:1", "resources": {"limits": {"memory": "2 GB"}}}
                            ]
                        },
                    }
                ),
            ),
            step(
                "create",
                "-f",
                "-",
                input=dump(
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {"name": "fine"},
                        "spec": {
                            "containers": [
                                {"name": "c", "image": "busybox:1", "resources": {"requests": {"cpu": "250m"}}}
                            ]
                        },
                    }
                ),
            ),
        ),
    ),
    Scenario(
        "selectors-and-sorting",
        "field selectors (supported and not) and --sort-by on custom resources",
        (
            step("apply", "-f", "-", input=dump(widget("s3", size=3), widget("s1", size=1), widget("s2", size=2))),
            step("get", "widgets", "--field-selector=metadata.name=s2", "-o", "name"),
            step("get", "widgets", "--field-selector=spec.size=2", "-o", "name"),
            step("get", "widgets", "--sort-by=.spec.size", "-o", "name"),
        ),
    ),
    Scenario(
        "invalid-metadata",
        "an invalid name and an invalid label value",
        (
            step("apply", "-f", "-", input=dump(widget("Bad_Name"))),
            step(
                "apply",
                "-f",
                "-",
                input=dump({**widget("badlabel"), "metadata": {"name": "badlabel", "labels": {"tier": "-x-"}}}),
            ),
        ),
    ),
    Scenario(
        "replace-conflict",
        "kubectl replace with a stale resourceVersion",
        (
            step("apply", "-f", "-", input=dump(widget("rv", size=1))),
            step("patch", "widget", "rv", "--type=merge", "-p", '{"spec":{"size":2}}'),
            step(
                "replace",
                "-f",
                "-",
                input=dump({**widget("rv", size=3), "metadata": {"name": "rv", "resourceVersion": "1"}}),
            ),
        ),
    ),
    Scenario(
        "diff",
        "kubectl diff (a server-side dry run) of a changed object",
        (
            step("apply", "-f", "-", input=dump(widget("df", size=1, color="red"))),
            step("diff", "-f", "-", input=dump(widget("df", size=2, color="red"))),
        ),
    ),
    Scenario(
        "explain-builtin",
        "kubectl explain on a built-in field",
        (step("explain", "deployment.spec.replicas"),),
    ),
    Scenario(
        "protected-group-crd",
        "a CRD in a `*.k8s.io` group without the `api-approved.kubernetes.io` annotation, with it, with a bad one",
        (
            step("apply", "-f", "-", input=dump(widget_crd(group="fidelity.k8s.io", plural="gadgets"))),
            step(
                "apply",
                "-f",
                "-",
                input=dump(
                    {
                        **widget_crd(group="approved.k8s.io", plural="gadgets"),
                        "metadata": {
                            "name": "gadgets.approved.k8s.io",
                            "annotations": {"api-approved.kubernetes.io": "https://example.com/pull/1"},
                        },
                    }
                ),
            ),
            step(
                "apply",
                "-f",
                "-",
                input=dump(
                    {
                        **widget_crd(group="maybe.k8s.io", plural="gadgets"),
                        "metadata": {
                            "name": "gadgets.maybe.k8s.io",
                            "annotations": {"api-approved.kubernetes.io": "soon"},
                        },
                    }
                ),
            ),
        ),
    ),
    Scenario(
        "event-namespace",
        "an Event whose involvedObject has no namespace, created in a namespace; with eventTime, then in default",
        (
            step("create", "-f", "-", input=dump(event("ev0", ""))),
            step("create", "-f", "-", input=dump({**event("ev2", ""), **EVENT_TIME})),
            step("create", "-n", "default", "-f", "-", input=dump(event("ev3", ""))),
            step("delete", "-n", "default", "event", "ev3"),
        ),
    ),
    Scenario(
        "events-table",
        "an Event in `kubectl get events`",
        (step("create", "-f", "-", input=dump(event("ev1", "@NS@"))), step("get", "events")),
    ),
    Scenario(
        "explain-builtin-fields",
        "kubectl explain on built-in fields with enums and references, and a whole kind",
        (
            step("explain", "pod.spec.containers.imagePullPolicy"),
            step("explain", "deployment.spec.strategy"),
            step("explain", "pvc.spec.volumeMode"),
            step("explain", "service.spec.ports"),
            step("explain", "configmaps"),
        ),
    ),
    Scenario(
        "explain-openapi-v2",
        "kubectl explain from /openapi/v2 (gnostic protobuf): a built-in field, and a custom resource's",
        (
            step("explain", "deployment.spec.replicas", "--output=plaintext-openapiv2"),
            step("explain", "widgets.spec", "--output=plaintext-openapiv2"),
        ),
    ),
    Scenario(
        "kind-not-served-at-version",
        "apply of a kind its group does not serve at that version, and of a served kind at an unserved version",
        (
            step("apply", "-f", "-", input=dump(aim_profile_v1alpha1())),
            step("apply", "-f", "-", input=dump({**widget("w9"), "apiVersion": "example.com/v9"})),
            step("apply", "--server-side", "-f", "-", input=dump({**widget("w9"), "apiVersion": "example.com/v9"})),
        ),
    ),
    Scenario(
        "service-defaults",
        "Services as stored (ClusterIP, NodePort, LoadBalancer, headless with and without a selector, ExternalName, "
        "ClientIP affinity): defaults, cluster IPs, IP families, node ports; then a replace that leaves them out",
        (
            step("apply", "-f", "-", input=dump(*SERVICES)),
            step("get", "services", "-o", "json", json=True),
            step("get", "services"),
            step("replace", "-f", "-", input=dump(SERVICES[1])),
            step("get", "service", SERVICES[1]["metadata"]["name"], "-o", "json", json=True),
        ),
    ),
    Scenario(
        "builtin-create-defaults",
        "a RoleBinding, a PodDisruptionBudget, a Job, two Pods and a Deployment sent with a status, as created: "
        "defaults, starting status, the "
        "Priority and DefaultTolerationSeconds admission plugins, a Job's generated selector, QoS classes",
        tuple(step("create", "-f", "-", "-o", "json", input=dump(doc), json=True) for doc in CREATED),
    ),
    Scenario(
        "pvc-defaults",
        "a PersistentVolumeClaim as created: its volume mode, and the status it was sent dropped for Pending",
        (step("create", "-f", "-", "-o", "json", input=dump(CLAIM), json=True),),
    ),
    Scenario(
        "conversion-webhook",
        "a CRD served at v1 (stored) and v2, converted by a TLS webhook (v1's `spec.size` is v2's `spec.replicas`): "
        "created in v2 and in v1, read in both versions and in kubectl's preferred one (v2), a merge patch and a "
        "status patch in v2, and a create the v2 schema refuses although v1's would take it",
        (
            step("apply", "-f", "-", input="@GIZMO_CRD@"),
            step("create", "-f", "-", input=dump(gizmo("v2", "made-in-v2", 3)), until_exit=0),
            step("create", "-f", "-", input=dump(gizmo("v1", "made-in-v1", 7))),
            step("get", f"gizmos.v1.{CONVERSION_GROUP}", "made-in-v2", "-o", "json", json=True),
            step("get", f"gizmos.v2.{CONVERSION_GROUP}", "made-in-v2", "-o", "json", json=True),
            step("get", "gizmos"),
            step("get", f"gizmos.v1.{CONVERSION_GROUP}"),
            step(
                "patch", f"gizmos.v2.{CONVERSION_GROUP}", "made-in-v2", "--type=merge", "-p", '{"spec":{"replicas":5}}'
            ),
            step(
                "patch",
                f"gizmos.v2.{CONVERSION_GROUP}",
                "made-in-v2",
                "--subresource=status",
                "--type=merge",
                "-p",
                '{"status":{"phase":"Up"}}',
            ),
            step("get", f"gizmos.v1.{CONVERSION_GROUP}", "made-in-v2", "-o", "json", json=True),
            step("create", "-f", "-", input=dump(gizmo("v2", "too-many", 7))),
        ),
    ),
    Scenario(
        "conversion-webhook-list-watch",
        "the converted CRD listed and watched in v2 (the watch's initial events), objects written in either version",
        (
            step("apply", "-f", "-", input="@GIZMO_CRD@"),
            step("create", "-f", "-", input=dump(gizmo("v1", "listed-a", 1)), until_exit=0),
            step("create", "-f", "-", input=dump(gizmo("v2", "listed-b", 2))),
            step("get", f"gizmos.v2.{CONVERSION_GROUP}", "-o", "json", json=True),
            step(
                "get",
                "--raw",
                f"/apis/{CONVERSION_GROUP}/v2/namespaces/@NS@/gizmos?watch=true&timeoutSeconds=1",
                json_lines=True,
            ),
        ),
    ),
    Scenario(
        "conversion-webhook-failure",
        "a conversion webhook answering `result.status: Failure` for an object: its create in v2 fails; created in "
        "v1 (the storage version, no conversion), it reads in v1 and fails to read or list in v2, until deleted",
        (
            step("apply", "-f", "-", input="@REFUSAL_CRD@"),
            step("get", f"refusals.v2.{CONVERSION_GROUP}", until_exit=0),
            step("create", "-f", "-", input=dump(gizmo("v2", "refused-in-v2", 1, kind="Refusal", labels=REFUSED))),
            step("create", "-f", "-", input=dump(gizmo("v1", "refused-in-v1", 1, kind="Refusal", labels=REFUSED))),
            step("get", f"refusals.v1.{CONVERSION_GROUP}", "refused-in-v1", "-o", "name"),
            step("get", f"refusals.v2.{CONVERSION_GROUP}", "refused-in-v1"),
            step("get", "refusals"),
            step("delete", f"refusals.v1.{CONVERSION_GROUP}", "refused-in-v1"),
            step("get", "refusals", until_exit=0),
        ),
    ),
    Scenario(
        "conversion-webhook-down",
        "a CRD whose conversion webhook is down (nothing listens at its URL): v1, the storage version, reads and "
        "writes; v2 fails to read, list and create with the dial error",
        (
            step("apply", "-f", "-", input="@DOWN_CRD@"),
            step("get", f"downs.v1.{CONVERSION_GROUP}", until_exit=0),
            step("create", "-f", "-", input=dump(gizmo("v1", "stored", 1, kind="Down"))),
            step("get", f"downs.v1.{CONVERSION_GROUP}", "stored", "-o", "name"),
            step("get", f"downs.v2.{CONVERSION_GROUP}", "stored"),
            step("get", "downs"),
            step("create", "-f", "-", input=dump(gizmo("v2", "not-stored", 1, kind="Down"))),
            step("delete", f"downs.v1.{CONVERSION_GROUP}", "stored"),
        ),
    ),
]

# Differences that stay, each with its reason (docs/fidelity.md shows them).
KNOWN: dict[str, str] = {
    "pvc-defaults": (
        "Stays: kube-apiserver's StorageObjectInUseProtection admission plugin gives every new claim the "
        "`kubernetes.io/pvc-protection` finalizer, which kube-controller-manager's pvc-protection controller removes "
        "once no Pod uses the claim. The embedded server has no such controller (nor Pods that mount claims), so "
        "with the finalizer every deleted claim would stay Terminating for ever; the defaults and the status are "
        "the same."
    ),
}


@pytest.fixture(scope="module")
def crd_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fidelity") / "widget-crd.yaml"
    path.write_text(dump(widget_crd()))
    return path


@pytest.fixture(scope="module")
def kubectl_binary(envtest_binaries: EnvtestBinaries) -> str:
    return real_kubectl_path(envtest_binaries.kube_version)


@pytest.fixture(scope="module")
def embedded_side(
    kubectl_binary: str, crd_file: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Kubectl, tuple[str, ...]]]:
    fleet = BackgroundFleet(EmbeddedFleet(1, name_prefix="fidelity-", simulator=parse_nodes_option([])))
    fleet.start()
    try:
        fleet.run(fleet.fleet.apply([CRDS, crd_file]))
        base = tmp_path_factory.mktemp("fidelity-embedded")
        kubeconfig = fleet.fleet.write_kubeconfig(base / "kubeconfig")
        yield Kubectl(kubectl_binary, kubeconfig, base / "cache"), ("fidelity-1",)
    finally:
        fleet.stop()


@pytest.fixture(scope="module")
def real_side(
    real_fleet: BackgroundFleet, kubectl_binary: str, crd_file: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Kubectl, tuple[str, ...]]:
    real_fleet.run(real_fleet.fleet.apply([crd_file]))
    base = tmp_path_factory.mktemp("fidelity-real")
    kubeconfig = real_fleet.fleet.write_kubeconfig(base / "kubeconfig")
    return Kubectl(kubectl_binary, kubeconfig, base / "cache"), tuple(s.name for s in real_fleet.fleet.servers)


@pytest.fixture(scope="module")
def webhook(real_fleet: BackgroundFleet) -> Iterator[dict[str, str]]:
    """A TLS admission webhook both servers call: it denies Widgets named `denied-*` in namespaces labelled
    `fidelity-webhook=on`; `WEBHOOK_CONFIG` is its ValidatingWebhookConfiguration (with the `caBundle`)."""
    ca = CertificateAuthority.generate()

    async def review(request: web.Request) -> web.Response:
        body = await request.json()
        name = body["request"]["object"]["metadata"]["name"]
        response: dict[str, Any] = {"uid": body["request"]["uid"], "allowed": not name.startswith("denied-")}
        if not response["allowed"]:
            response["status"] = {"code": 403, "message": "widgets named denied-* are not allowed"}
        return web.json_response({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})

    async def start() -> tuple[web.AppRunner, int]:
        app = web.Application()
        app.router.add_post("/validate", review)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_ssl_context(ca.issue(["127.0.0.1"])))
        await site.start()
        return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    runner, port = real_fleet.run(start())
    config = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "fidelity-webhook"},
        "webhooks": [
            {
                "name": "names.widgets.example.com",
                "clientConfig": {
                    "url": f"https://127.0.0.1:{port}/validate",
                    "caBundle": base64.b64encode(ca.cert_pem).decode(),
                },
                "rules": [
                    {
                        "operations": ["CREATE", "UPDATE"],
                        "apiGroups": ["example.com"],
                        "apiVersions": ["*"],
                        "resources": ["widgets"],
                    }
                ],
                "namespaceSelector": {"matchLabels": {"fidelity-webhook": "on"}},
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "failurePolicy": "Fail",
            }
        ],
    }
    try:
        yield {"WEBHOOK_CONFIG": dump(config)}
    finally:
        real_fleet.run(runner.cleanup())


@pytest.fixture(scope="module")
def conversion_webhook(real_fleet: BackgroundFleet) -> Iterator[dict[str, str]]:
    """The test conversion webhook (tests/conversion_webhook.py) both servers call, and three CRDs converted
    through it: `GIZMO_CRD`, `REFUSAL_CRD` (another kind, so a refused object breaks no other scenario's v2) and
    `DOWN_CRD`, whose webhook URL is a port nothing listens on."""
    hook = real_fleet.run(ConversionWebhook().start())
    down = {"url": f"https://127.0.0.1:{free_port()}/convert", "caBundle": hook.ca_bundle}
    try:
        yield {
            "GIZMO_CRD": dump(gizmo_crd(hook.client_config())),
            "REFUSAL_CRD": dump(gizmo_crd(hook.client_config(), plural="refusals", kind="Refusal")),
            "DOWN_CRD": dump(gizmo_crd(down, plural="downs", kind="Down")),
        }
    finally:
        real_fleet.run(hook.stop())


@pytest.fixture(scope="module")
def fidelity_results(
    embedded_side: tuple[Kubectl, tuple[str, ...]],
    real_side: tuple[Kubectl, tuple[str, ...]],
    webhook: dict[str, str],
    conversion_webhook: dict[str, str],
) -> dict[str, Result]:
    """Every scenario against both servers, once per process that runs any test of this module (the page needs
    all of them, wherever pytest-xdist puts the tests)."""
    values = {**webhook, **conversion_webhook}

    def transcripts(side: tuple[Kubectl, tuple[str, ...]]) -> list[list[str]]:
        return [run_scenario(side[0], scenario, side[1], values) for scenario in SCENARIOS]

    # the two servers share nothing a scenario writes: each side's steps run in order while the other side runs its
    # own, so the module waits for the slower side's kubectl calls rather than for both in turn
    with ThreadPoolExecutor(2) as pool:
        embedded_runs, real_runs = pool.submit(transcripts, embedded_side), pool.submit(transcripts, real_side)
        sides = zip(embedded_runs.result(), real_runs.result(), strict=True)
    results = {}
    for scenario, (embedded, real) in zip(SCENARIOS, sides, strict=True):
        result = Result(scenario, embedded=embedded, real=real, known=KNOWN.get(scenario.name))
        compare(result)
        results[scenario.name] = result
    dump_dir = os.environ.get("OMECTL_FIDELITY_DUMP")  # a directory: both transcripts of every scenario go there
    if dump_dir:
        Path(dump_dir).mkdir(parents=True, exist_ok=True)
        for name, result in results.items():
            for side in ("embedded", "real"):
                (Path(dump_dir) / f"{name}.{side}.txt").write_text("\n".join(getattr(result, side)) + "\n")
    return results


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_scenario_matches_the_real_server(scenario: Scenario, fidelity_results: dict[str, Result]) -> None:
    result = fidelity_results[scenario.name]
    if result.same:
        assert result.known is None, f"{scenario.name} no longer differs: remove it from KNOWN"
    else:
        assert result.known is not None, "a difference not in KNOWN:\n" + "\n".join(result.diff)


def test_known_differences_name_scenarios_that_exist() -> None:
    assert set(KNOWN) <= {s.name for s in SCENARIOS}


def test_fidelity_doc_is_what_the_suite_found(
    fidelity_results: dict[str, Result], envtest_binaries: EnvtestBinaries
) -> None:
    """docs/fidelity.md, written from this run; fails (after rewriting it) when the committed page was stale."""
    versions = f"kube-apiserver {envtest_binaries.kube_version} with etcd {envtest_binaries.etcd_version}"
    page = render_fidelity_doc([fidelity_results[s.name] for s in SCENARIOS], versions)
    before = FIDELITY_DOC.read_text() if FIDELITY_DOC.exists() else ""
    if before != page:
        FIDELITY_DOC.write_text(page)
    assert before == page, "docs/fidelity.md was stale; the suite rewrote it: review and commit it"
