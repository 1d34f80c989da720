"""CRD validation rules as kubectl shows them: the embedded server's 422s through the real kubectl.

The CRD is test-only, shaped like the rules upstream AIM uses (exactly one of name/image/custom, immutability,
messageExpression, a list rule); the texts are kube-apiserver 1.34's for the same requests (the fidelity scenarios
`cel-rule-denial` and `cel-libraries-and-status` compare such texts with the real server).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.support import Kubectl

pytestmark = pytest.mark.kubectl

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "celmodels.cel.example.com"},
    "spec": {
        "group": "cel.example.com",
        "scope": "Namespaced",
        "names": {"plural": "celmodels", "singular": "celmodel", "kind": "Celmodel"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "model": {
                                        "type": "object",
                                        "properties": {
                                            "name": {"type": "string", "maxLength": 20},
                                            "image": {"type": "string", "maxLength": 20},
                                            "custom": {"type": "object"},
                                        },
                                        "x-kubernetes-validations": [
                                            {
                                                "rule": "(has(self.name) ? 1 : 0) + (has(self.image) ? 1 : 0) + "
                                                "(has(self.custom) ? 1 : 0) == 1",
                                                "message": "exactly one of name, image, or custom must be specified",
                                            },
                                            {"rule": "self == oldSelf", "message": "model is immutable"},
                                        ],
                                    },
                                    "replicas": {
                                        "type": "integer",
                                        "x-kubernetes-validations": [
                                            {
                                                "rule": "self <= 8",
                                                "messageExpression": "'replicas ' + string(self) + ' is above 8'",
                                            }
                                        ],
                                    },
                                    "ports": {
                                        "type": "array",
                                        "maxItems": 4,
                                        "items": {"type": "integer"},
                                        "x-kubernetes-validations": [
                                            {"rule": "self.all(p, p > 1024)", "message": "ports above 1024"},
                                            {"rule": "self.isSorted()", "message": "ports sorted"},
                                        ],
                                    },
                                },
                            }
                        },
                    }
                },
            }
        ],
    },
}


def model(name: str, **spec: Any) -> str:
    doc = {"apiVersion": "cel.example.com/v1", "kind": "Celmodel", "metadata": {"name": name}, "spec": spec}
    return yaml.safe_dump(doc)


async def denied(kubectl: Kubectl, *args: str, input: str | None = None) -> str:
    rc, out, err = await kubectl.arun(*args, input=input, check=False)
    assert rc == 1, out
    return err.strip()


async def test_kubectl_shows_each_rules_message_at_its_field(kubectl: Kubectl) -> None:
    await kubectl.arun("apply", "-f", "-", input=yaml.safe_dump(CRD))
    await kubectl.arun("wait", "--for=condition=Established", "crd/celmodels.cel.example.com", "--timeout=30s")
    await kubectl.arun("create", "-f", "-", input=model("ok", model={"name": "m"}, replicas=2, ports=[2000, 3000]))

    assert await denied(kubectl, "create", "-f", "-", input=model("two", model={"name": "m", "image": "i"})) == (
        'The Celmodel "two" is invalid: spec.model: Invalid value: "object": exactly one of name, image, or custom '
        "must be specified"
    )
    assert await denied(kubectl, "create", "-f", "-", input=model("big", model={"name": "m"}, replicas=9)) == (
        'The Celmodel "big" is invalid: spec.replicas: Invalid value: "integer": replicas 9 is above 8'
    )
    assert await denied(kubectl, "create", "-f", "-", input=model("ports", model={"name": "m"}, ports=[3000, 80])) == (
        'The Celmodel "ports" is invalid: \n* spec.ports: Invalid value: "array": ports above 1024\n'
        '* spec.ports: Invalid value: "array": ports sorted'
    )
    patch = ("patch", "celmodel", "ok", "--type=merge", "-p")
    assert await denied(kubectl, *patch, '{"spec":{"model":{"name":"other"}}}') == (
        'The Celmodel "ok" is invalid: spec.model: Invalid value: "object": model is immutable'
    )
    _, out, _ = await kubectl.arun(*patch, '{"spec":{"replicas":3}}')
    assert out.strip() == "celmodel.cel.example.com/ok patched"


async def test_kubectl_shows_why_a_crd_with_a_rule_that_does_not_compile_is_refused(kubectl: Kubectl) -> None:
    crd = yaml.safe_load(yaml.safe_dump(CRD))
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "self.modle.name == 'x'"}
    ]
    assert await denied(kubectl, "apply", "-f", "-", input=yaml.safe_dump(crd)) == (
        'The CustomResourceDefinition "celmodels.cel.example.com" is invalid: '
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: "
        '{"Rule":"self.modle.name == \'x\'","Message":"","MessageExpression":"","Reason":null,"FieldPath":"",'
        "\"OptionalOldSelf\":null}: compilation failed: ERROR: <input>:1:5: undefined field 'modle'\n"
        " | self.modle.name == 'x'\n"
        " | ....^"
    )


async def test_kubectl_shows_a_status_rules_message_on_a_status_patch(kubectl: Kubectl) -> None:
    crd = yaml.safe_load(yaml.safe_dump(CRD))
    version = crd["spec"]["versions"][0]
    version["subresources"] = {"status": {}}
    version["schema"]["openAPIV3Schema"]["properties"]["status"] = {
        "type": "object",
        "properties": {"ready": {"type": "integer"}},
        "x-kubernetes-validations": [
            {"rule": "!has(self.ready) || self.ready >= 0", "message": "ready may not be negative"}
        ],
    }
    await kubectl.arun("apply", "-f", "-", input=yaml.safe_dump(crd))
    await kubectl.arun("wait", "--for=condition=Established", "crd/celmodels.cel.example.com", "--timeout=30s")
    await kubectl.arun("create", "-f", "-", input=model("st", model={"name": "m"}))
    status = ("patch", "celmodel", "st", "--subresource=status", "--type=merge", "-p")
    assert await denied(kubectl, *status, '{"status":{"ready":-1}}') == (
        'The Celmodel "st" is invalid: status: Invalid value: "object": ready may not be negative'
    )
    _, out, _ = await kubectl.arun(*status, '{"status":{"ready":1}}')
    assert out.strip() == "celmodel.cel.example.com/st patched"
