"""The AIM CRDs (`aim.eai.amd.com`), the third-party stand-ins AIM renders into, and the AIM samples.

Everything runs against the embedded API server over real HTTP and through the real kubectl.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.api import aim, crdgen, ome
from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.fleet import apply_document, manifest_documents
from tests.api.test_crds import CRDS_PATH, STRICT, TABLE, committed_crd, schema_nodes
from tests.support import Kubectl, RawClient

REPO = Path(__file__).resolve().parents[2]
CRD_DIR = REPO / "deploy" / "crds"
THIRDPARTY = CRD_DIR / "thirdparty"
OUR_THIRDPARTY = (
    THIRDPARTY / "serving.kserve.io_inferenceservices.yaml",
    THIRDPARTY / "gateway.networking.k8s.io_httproutes.yaml",
    THIRDPARTY / "gateway.networking.k8s.io_gateways.yaml",
)
SAMPLES = REPO / "deploy" / "samples" / "aim"
# In the order a reader would try them; same-name objects of later scenarios replace earlier ones.
SCENARIOS = (
    "storage",
    "routing-defaults",
    "routing",
    "routing-override",
    "env",
    "label-propagation",
    "cost-tracking",
    "missing-config",
    "models-and-caching",
)

AIM_CRDS = tuple(d for d in crdgen.CRDS if d.group == aim.GROUP)
CLUSTER_CONFIG, NS_CONFIG, SERVICE = AIM_CRDS[:3]
V1ALPHA2_CRDS = tuple(d for d in AIM_CRDS[3:] if aim.V1ALPHA2 in d.versions)
LAYERED = (
    "storage",
    "routing",
    "env",
    "labelPropagation",
    "model",
    "defaultStorageClassName",
    "pvcHeadroomPercent",
)

AIM = "/apis/aim.eai.amd.com"
ML_TEAM = "namespaces/ml-team"
KSERVE_ISVC = "/apis/serving.kserve.io/v1beta1/namespaces/ml-team/inferenceservices"
OME_ISVC = "/apis/ome.io/v1beta1/namespaces/ml-team/inferenceservices"
ROUTES = "/apis/gateway.networking.k8s.io/v1/namespaces/ml-team/httproutes"


def load(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def aim_crd(definition: crdgen.CRDDefinition) -> dict[str, Any]:
    return committed_crd(definition.file_name)


def service_body(name: str = "svc", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "aim.eai.amd.com/v1alpha2",
        "kind": "AIMService",
        "metadata": {"name": name, "namespace": "ml-team"},
        "spec": spec or {"model": {"name": "qwen-qwen3-32b"}},
    }


def path_of(doc: dict[str, Any]) -> str:
    """The REST path of a sample object (AIM kinds and the Gateway only)."""
    group, _, version = doc["apiVersion"].rpartition("/")
    plural = doc["kind"].lower() + "s"
    meta = doc["metadata"]
    ns = f"namespaces/{meta['namespace']}/" if meta.get("namespace") else ""
    return f"/apis/{group}/{version}/{ns}{plural}/{meta['name']}"


@pytest.fixture
async def installed(raw: RawClient) -> None:
    """The AIM CRDs and our third-party stand-ins, created from the committed YAML, plus the samples' namespaces."""
    for definition in AIM_CRDS:
        reply = await raw.post(CRDS_PATH, aim_crd(definition))
        assert reply.status == 201, reply.body
    for path in OUR_THIRDPARTY:
        (crd,) = load(path)
        reply = await raw.post(CRDS_PATH, crd)
        assert reply.status == 201, reply.body
    for doc in load(SAMPLES / "00-namespaces.yaml"):
        assert (await raw.post("/api/v1/namespaces", doc)).status == 201


# -- the generator: AIM CRDs, versions, names; --check leaves thirdparty/ alone ----------------------------


def test_generator_knows_the_aim_crds_by_file_name() -> None:
    assert [d.file_name for d in AIM_CRDS] == [
        "aim.eai.amd.com_aimclusterruntimeconfigs.yaml",
        "aim.eai.amd.com_aimruntimeconfigs.yaml",
        "aim.eai.amd.com_aimservices.yaml",
        "aim.eai.amd.com_aimmodels.yaml",
        "aim.eai.amd.com_aimclustermodels.yaml",
        "aim.eai.amd.com_aimprofiles.yaml",
        "aim.eai.amd.com_aimclusterprofiles.yaml",
        "aim.eai.amd.com_aimprofilesets.yaml",
        "aim.eai.amd.com_aimprofilecaches.yaml",
        "aim.eai.amd.com_aimartifacts.yaml",
        "aim.eai.amd.com_aimclustermodelsources.yaml",
        "aim.eai.amd.com_aimtemplatecaches.yaml",
        "aim.eai.amd.com_aimservicetemplates.yaml",
        "aim.eai.amd.com_aimclusterservicetemplates.yaml",
    ]
    assert {p.name for p in CRD_DIR.glob("*.yaml")} == {d.file_name for d in crdgen.CRDS}


def test_check_passes_on_the_committed_tree_and_ignores_files_it_does_not_generate(tmp_path: Path) -> None:
    assert crdgen.main(["--check", "--out", str(CRD_DIR)]) == 0
    assert crdgen.main(["--out", str(tmp_path)]) == 0
    own = tmp_path / "thirdparty" / "example.com_widgets.yaml"
    own.write_text("# hand-written\n")
    assert crdgen.main(["--check", "--out", str(tmp_path)]) == 0
    assert crdgen.main(["--out", str(tmp_path)]) == 0
    assert own.read_text() == "# hand-written\n"
    # a stand-in rendered from a template is checked like the rest
    (tmp_path / "thirdparty" / "serving.kserve.io_inferenceservices.yaml").write_text("# edited\n")
    assert crdgen.main(["--check", "--out", str(tmp_path)]) == 1


@pytest.mark.parametrize(
    ("definition", "kind", "scope", "short", "versions"),
    [
        (CLUSTER_CONFIG, "AIMClusterRuntimeConfig", "Cluster", "aimclrc", ["v1alpha1", "v1alpha2"]),
        (NS_CONFIG, "AIMRuntimeConfig", "Namespaced", "aimrc", ["v1alpha1", "v1alpha2"]),
        (SERVICE, "AIMService", "Namespaced", "aimsvc", ["v1alpha2", "v1alpha1"]),
    ],
    ids=lambda v: v.kind if isinstance(v, crdgen.CRDDefinition) else None,
)
def test_names_scope_and_versions(
    definition: crdgen.CRDDefinition, kind: str, scope: str, short: str, versions: list[str]
) -> None:
    crd = aim_crd(definition)
    spec = crd["spec"]
    assert crd["metadata"]["name"] == f"{kind.lower()}s.aim.eai.amd.com"
    assert spec["group"] == "aim.eai.amd.com"
    assert spec["scope"] == scope
    assert spec["names"] == {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": f"{kind.lower()}s",
        "singular": kind.lower(),
        "shortNames": [short],
        "categories": ["aim", "all"],
    }
    assert [v["name"] for v in spec["versions"]] == versions
    assert [v["storage"] for v in spec["versions"]] == [True] + [False] * (len(versions) - 1)
    for version in spec["versions"]:
        assert version["served"] is True
        assert version["subresources"] == {"status": {}}
    # One schema for every version but a converted one (upstream's v1alpha1: tests/api/test_aim_versions_crds.py):
    # the server converts them with the None strategy.
    schemas = [v["schema"] for v in spec["versions"] if v["name"] in definition.versions]
    assert all(s == schemas[0] for s in schemas)


def test_the_two_config_kinds_share_one_schema() -> None:
    cluster = aim_crd(CLUSTER_CONFIG)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    namespaced = aim_crd(NS_CONFIG)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert cluster["properties"]["spec"] == namespaced["properties"]["spec"]
    assert cluster["properties"]["status"] == namespaced["properties"]["status"]


UNLAYERED_DEFAULTS: dict[tuple[str, str], str] = {
    ("AIMTemplateCache", ".spec.mode"): "upstream's default (Shared); a cache's mode is no runtime-config layer",
    ("AIMTemplateCache", ".spec.imagePullSecrets[*].name"): "Kubernetes' own LocalObjectReference default",
    ("AIMTemplateCache", ".status.status"): "upstream's default (Pending) of a status nothing of ours writes yet",
    **{
        (kind, path): why
        for kind in ("AIMServiceTemplate", "AIMClusterServiceTemplate")
        for path, why in (
            (".spec.hardware.gpu.resourceName", "upstream's default (amd.com/gpu); hardware is no config layer"),
            (".spec.imagePullSecrets[*].name", "Kubernetes' own LocalObjectReference default"),
            (".status.status", "upstream's default (Pending) of a status nothing of ours writes yet"),
            (".status.resolvedHardware.gpu.resourceName", "upstream's default, as on spec.hardware"),
        )
    },
    ("AIMServiceTemplate", ".spec.caching.enabled"): "upstream's default (false); a template's caching is no layer",
}
"""Schema defaults on fields no runtime-config layering reads, and why they are there."""


@pytest.mark.parametrize("definition", AIM_CRDS, ids=lambda d: d.kind)
def test_no_schema_default_anywhere_in_the_aim_crds(definition: crdgen.CRDDefinition) -> None:
    """No layered field has a schema default. The only defaults are Kubernetes' own inside an env var's
    `valueFrom` (its key references' `name: ""`, `optional: false`, as upstream's CRDs have them): an env var is
    layered whole, by name, so they never mask a lower layer; and those of `UNLAYERED_DEFAULTS`."""
    schema = aim_crd(definition)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    defaulted = [path for path, node in schema_nodes(schema) if "default" in node]
    unlayered = {path for kind, path in UNLAYERED_DEFAULTS if kind == definition.kind}
    assert sorted(unlayered - set(defaulted)) == [], "listed in UNLAYERED_DEFAULTS but not defaulted"
    defaulted = [path for path in defaulted if path not in unlayered]
    assert [path for path in defaulted if ".valueFrom." not in path] == []
    assert all(path.rsplit(".", 1)[-1] in ("name", "optional") for path in defaulted)


def test_runtime_config_spec_fields() -> None:
    spec = aim_crd(NS_CONFIG)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    props = spec["properties"]
    assert set(props) == set(LAYERED)
    assert props["storage"]["properties"].keys() == {"defaultStorageClassName", "pvcHeadroomPercent"}
    assert props["storage"]["properties"]["pvcHeadroomPercent"]["minimum"] == 0
    assert props["pvcHeadroomPercent"]["minimum"] == 0
    assert props["model"]["properties"] == {"autoDiscovery": props["model"]["properties"]["autoDiscovery"]}
    assert props["model"]["properties"]["autoDiscovery"]["type"] == "boolean"
    routing = props["routing"]["properties"]
    assert routing.keys() == {"enabled", "gatewayRef", "pathTemplate", "requestTimeout", "annotations"}
    assert routing["requestTimeout"]["type"] == "string"
    assert routing["annotations"]["additionalProperties"] == {"type": "string"}
    gateway_ref = routing["gatewayRef"]
    assert gateway_ref["required"] == ["name"]
    assert gateway_ref["properties"].keys() == {"group", "kind", "name", "namespace", "sectionName", "port"}
    env = props["env"]
    assert env["x-kubernetes-list-type"] == "map"
    assert env["x-kubernetes-list-map-keys"] == ["name"]
    assert env["items"]["required"] == ["name"]
    value_from = env["items"]["properties"]["valueFrom"]
    assert {"configMapKeyRef", "secretKeyRef", "fieldRef", "resourceFieldRef"} <= value_from["properties"].keys()
    assert "x-kubernetes-preserve-unknown-fields" not in value_from  # Kubernetes' EnvVarSource, as upstream's
    assert props["labelPropagation"]["properties"]["match"]["items"] == {"type": "string"}
    assert "upstream" in spec["description"] and "dropped" in spec["description"]


def test_service_schema_fields_and_columns() -> None:
    version = aim_crd(SERVICE)["spec"]["versions"][0]
    schema = version["schema"]["openAPIV3Schema"]["properties"]
    spec = schema["spec"]
    assert spec["required"] == ["model"]
    props = spec["properties"]
    assert props.keys() == {
        "model",
        "runtimeConfigName",
        "runtimeConfig",
        "routing",
        "env",
        "storage",
        "replicas",
        "resources",
        "caching",
    }
    assert props["model"]["properties"].keys() == {"name", "image"}
    assert [r["message"] for r in props["model"]["x-kubernetes-validations"]] == [
        "exactly one of name or image must be specified",
        "model selection is immutable after creation",
    ]
    assert props["runtimeConfig"]["properties"].keys() == {"storage", "routing", "env", "labelPropagation"}
    config = aim_crd(NS_CONFIG)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert props["routing"] == config["properties"]["routing"] | {"description": props["routing"]["description"]}
    assert props["storage"]["properties"].keys() >= {"defaultStorageClassName", "size", "storageClassName"}
    assert props["storage"]["properties"]["size"]["x-kubernetes-int-or-string"] is True
    assert props["replicas"]["minimum"] == 0
    assert props["resources"]["properties"]["limits"]["additionalProperties"]["x-kubernetes-int-or-string"] is True
    status = schema["status"]["properties"]
    assert status["status"]["enum"] == ["Pending", "Starting", "Running", "Degraded", "Failed"]
    assert status["conditions"]["x-kubernetes-list-map-keys"] == ["type"]
    assert status["conditions"]["items"]["properties"].keys() >= {
        "type",
        "status",
        "reason",
        "message",
        "lastTransitionTime",
        "observedGeneration",
    }
    resolved = status["resolvedRuntimeConfig"]["properties"]
    assert resolved.keys() == {"kind", "name", "namespace", "scope", "uid"}
    assert resolved["scope"]["enum"] == ["Namespace", "Cluster"]
    assert status["routing"]["properties"].keys() == {"path"}
    assert "observedGeneration" in status
    columns = [(c["name"], c["jsonPath"]) for c in version["additionalPrinterColumns"]]
    assert columns == [
        ("Status", ".status.status"),
        ("Model", ".spec.model.name"),
        ("Path", ".status.routing.path"),
        ("Age", ".metadata.creationTimestamp"),
    ]


# -- the models parse the samples and the spec's status examples --------------------------------------------


def sample_docs() -> Iterator[tuple[str, dict[str, Any]]]:
    for path in sorted(SAMPLES.rglob("*.yaml")):
        for doc in load(path):
            yield str(path.relative_to(SAMPLES)), doc


MODELS: dict[str, type[ome.Resource]] = {d.kind: d.model for d in AIM_CRDS}


@pytest.mark.parametrize(
    ("name", "doc"),
    [(n, d) for n, d in sample_docs() if d["kind"] in MODELS],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_models_parse_every_aim_sample_and_dump_it_back_unchanged(name: str, doc: dict[str, Any]) -> None:
    assert MODELS[doc["kind"]].model_validate(doc).to_dict() == doc


def test_model_defaults_match_the_versions() -> None:
    assert aim.AIMClusterRuntimeConfig().to_dict()["apiVersion"] == "aim.eai.amd.com/v1alpha1"
    assert aim.AIMRuntimeConfig().to_dict()["kind"] == "AIMRuntimeConfig"
    assert aim.AIMService().to_dict() == {"apiVersion": "aim.eai.amd.com/v1alpha2", "kind": "AIMService"}


def test_status_examples_of_the_spec_parse() -> None:
    for scope, kind, ns in (("Namespace", "AIMRuntimeConfig", "ml-team"), ("Cluster", "AIMClusterRuntimeConfig", "")):
        ref = {"kind": kind, "name": "default", "namespace": ns, "scope": scope, "uid": "abc123-def456-..."}
        status = aim.AIMServiceStatus.model_validate({"resolvedRuntimeConfig": ref, "status": "Running"})
        assert status.resolved_runtime_config is not None
        assert status.resolved_runtime_config.scope == scope
        assert status.to_dict()["resolvedRuntimeConfig"] == ref


@pytest.mark.parametrize("model", [{}, {"name": "a", "image": "b"}, {"name": ""}])
def test_service_model_needs_exactly_one_of_name_and_image(model: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="model"):
        aim.AIMServiceSpec.model_validate({"model": model})


def test_service_storage_size_must_be_a_quantity() -> None:
    assert aim.ServiceStorage.model_validate({"size": "100Gi"}).size == "100Gi"
    assert aim.ServiceStorage.model_validate({"size": 1024}).size == 1024
    with pytest.raises(ValueError, match="quantity"):
        aim.ServiceStorage.model_validate({"size": "lots"})


def test_unset_layered_fields_stay_unset() -> None:
    config = aim.RuntimeConfigSpec.model_validate({"labelPropagation": {"match": ["a/*"]}, "storage": {}})
    assert config.to_dict() == {"labelPropagation": {"match": ["a/*"]}, "storage": {}}
    assert config.label_propagation is not None and config.label_propagation.enabled is None
    assert config.storage is not None and config.storage.pvc_headroom_percent is None


# -- the API server: samples, pruning, versions, status, columns ------------------------------------------


async def test_every_aim_and_thirdparty_crd_is_established(raw: RawClient, installed: None) -> None:
    names = [d.name for d in AIM_CRDS] + [load(p)[0]["metadata"]["name"] for p in OUR_THIRDPARTY]
    for name in names:
        got = (await raw.get(f"{CRDS_PATH}/{name}")).body
        conditions = {c["type"]: c["status"] for c in got["status"]["conditions"]}
        assert conditions["Established"] == "True", name
    for plural in ("aimclusterruntimeconfigs", "aimruntimeconfigs"):
        for version in ("v1alpha1", "v1alpha2"):
            listed = await raw.get(f"{AIM}/{version}/{plural}")
            assert listed.status == 200, (version, plural)


@pytest.mark.kubectl
async def test_every_sample_scenario_applies_with_kubectl_and_is_stored_whole(raw: RawClient, kubectl: Kubectl) -> None:
    crds = [str(CRD_DIR / d.file_name) for d in AIM_CRDS] + [str(p) for p in OUR_THIRDPARTY]
    await kubectl.arun("apply", *(a for f in crds for a in ("-f", f)))
    await kubectl.arun("wait", "--for=condition=Established", "crd", "--all")
    await kubectl.arun("apply", "-f", str(SAMPLES / "00-namespaces.yaml"), "-f", str(SAMPLES / "gateway.yaml"))
    gateway = (await raw.get(path_of(load(SAMPLES / "gateway.yaml")[0]))).body
    assert gateway["spec"] == load(SAMPLES / "gateway.yaml")[0]["spec"]

    assert sorted(p.name for p in SAMPLES.iterdir() if p.is_dir()) == sorted(SCENARIOS)
    for scenario in SCENARIOS:
        # kubectl's default --validate=strict: a field the schema does not know fails the apply.
        await kubectl.arun("apply", "-f", str(SAMPLES / scenario))
        for path in sorted((SAMPLES / scenario).glob("*.yaml")):
            for doc in load(path):
                stored = (await raw.get(path_of(doc))).body
                assert stored["spec"] == doc["spec"], (scenario, path.name)  # nothing pruned, nothing defaulted
                assert stored["metadata"].get("labels") == doc["metadata"].get("labels")


async def test_the_demo_applier_takes_the_whole_crd_tree_and_the_samples(server: EmbeddedAPIServer) -> None:
    docs = manifest_documents([CRD_DIR, SAMPLES / "00-namespaces.yaml", SAMPLES / "gateway.yaml", SAMPLES / "routing"])
    kinds = {d["metadata"]["name"] for d in docs if d["kind"] == "CustomResourceDefinition"}
    assert {d.name for d in crdgen.CRDS} <= kinds
    assert "inferenceservices.serving.kserve.io" in kinds
    for doc in docs:
        assert await apply_document(server, doc) == "created", doc["metadata"]["name"]


async def test_unknown_fields_fail_strict_and_are_pruned_otherwise(raw: RawClient, installed: None) -> None:
    body = service_body(
        model={"name": "m"},
        routing={"pathTemplate": "/x", "bogus": 1},
        runtimeConfig={"storage": {"defaultStorageClassName": "ssd", "extra": True}},
    )
    reply = await raw.post(f"{AIM}/v1alpha2/{ML_TEAM}/aimservices{STRICT}", body)
    assert reply.status == 400, reply.body
    assert 'unknown field "spec.routing.bogus"' in reply.body["message"]
    assert 'unknown field "spec.runtimeConfig.storage.extra"' in reply.body["message"]

    reply = await raw.post(f"{AIM}/v1alpha2/{ML_TEAM}/aimservices", body)
    assert reply.status == 201, reply.body
    assert reply.body["spec"] == {
        "model": {"name": "m"},
        "routing": {"pathTemplate": "/x"},
        "runtimeConfig": {"storage": {"defaultStorageClassName": "ssd"}},
    }


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"model": {"name": "m", "image": "i"}},
            'spec.model: Invalid value: "object": exactly one of name or image must be specified',
        ),
        ({"model": {}}, 'spec.model: Invalid value: "object": exactly one of name or image must be specified'),
        ({"replicas": 1}, "spec.model: Required value"),
        ({"model": {"name": "m"}, "replicas": -1}, "spec.replicas: Invalid value: -1"),
        ({"model": {"name": "m"}, "storage": {"size": "lots"}}, "spec.storage.size: Invalid value"),
        ({"model": {"name": "m"}, "routing": {"gatewayRef": {"namespace": "g"}}}, "spec.routing.gatewayRef.name"),
        (
            {"model": {"name": "m"}, "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]},
            'spec.env[1]: Duplicate value: {"name":"A"}',
        ),
        (
            {"model": {"name": "m"}, "runtimeConfig": {"storage": {"pvcHeadroomPercent": -5}}},
            "spec.runtimeConfig.storage.pvcHeadroomPercent: Invalid value: -5",
        ),
    ],
    ids=["name-and-image", "no-model-field", "no-model", "replicas", "size", "gateway-name", "env-dup", "headroom"],
)
async def test_invalid_services_are_rejected_with_422(
    raw: RawClient, installed: None, spec: dict[str, Any], message: str
) -> None:
    reply = await raw.post(f"{AIM}/v1alpha2/{ML_TEAM}/aimservices", service_body(**spec))
    assert reply.status == 422, reply.body
    assert message in reply.body["message"]


FROZEN_MODEL = 'spec.model: Invalid value: "object": model selection is immutable after creation'


@pytest.mark.parametrize(
    ("field", "before", "after", "message"),
    [
        ("model", {"name": "m"}, {"name": "other"}, FROZEN_MODEL),
        ("model", {"name": "m"}, {"image": "i"}, FROZEN_MODEL),
        (
            "caching",
            {"enabled": False},
            {"enabled": True},
            'spec.caching: Invalid value: "object": caching mode is immutable after creation',
        ),
    ],
    ids=["model-name", "model-image", "caching"],
)
async def test_a_services_model_and_caching_cannot_change_after_creation(
    raw: RawClient, installed: None, field: str, before: dict[str, Any], after: dict[str, Any], message: str
) -> None:
    """Upstream's transition rules (`self == oldSelf`), evaluated by the API server on update only."""
    body = service_body(name=f"frozen-{field}", **{"model": {"name": "m"}, field: before})
    assert (await raw.post(f"{AIM}/v1alpha2/{ML_TEAM}/aimservices", body)).status == 201
    url = f"{AIM}/v1alpha2/{ML_TEAM}/aimservices/frozen-{field}"
    patch = [{"op": "replace", "path": f"/spec/{field}", "value": after}]
    reply = await raw.patch(url, patch, "application/json-patch+json")
    assert reply.status == 422, reply.body
    assert message in reply.body["message"]
    unchanged = await raw.patch(url, {"spec": {"replicas": 2}}, "application/merge-patch+json")
    assert unchanged.status == 200, unchanged.body


async def test_an_artifacts_source_uri_cannot_change(raw: RawClient, installed: None) -> None:
    body = {
        "apiVersion": "aim.eai.amd.com/v1alpha2",
        "kind": "AIMArtifact",
        "metadata": {"name": "files", "namespace": "ml-team"},
        "spec": {"sourceUri": "hf://a/b"},
    }
    url = f"{AIM}/v1alpha2/{ML_TEAM}/aimartifacts"
    assert (await raw.post(url, body)).status == 201
    reply = await raw.patch(f"{url}/files", {"spec": {"sourceUri": "hf://a/c"}}, "application/merge-patch+json")
    assert reply.status == 422, reply.body
    assert reply.body["message"] == (
        'AIMArtifact.aim.eai.amd.com "files" is invalid: spec.sourceUri: Invalid value: "string": '
        "sourceUri is immutable"
    )


async def test_config_stored_as_v1alpha1_reads_back_as_v1alpha2_and_back(raw: RawClient, installed: None) -> None:
    (doc,) = load(SAMPLES / "routing" / "ml-team-default.yaml")
    assert (await raw.post(f"{AIM}/v1alpha1/{ML_TEAM}/aimruntimeconfigs{STRICT}", doc)).status == 201
    got = (await raw.get(f"{AIM}/v1alpha2/{ML_TEAM}/aimruntimeconfigs/default")).body
    assert got["apiVersion"] == "aim.eai.amd.com/v1alpha2"
    assert got["spec"] == doc["spec"]

    # Written through v1alpha2, read through v1alpha1: one object, one store.
    v2 = {**got, "spec": {**got["spec"], "pvcHeadroomPercent": 0}}
    reply = await raw.put(f"{AIM}/v1alpha2/{ML_TEAM}/aimruntimeconfigs/default{STRICT}", v2)
    assert reply.status == 200, reply.body
    back = (await raw.get(f"{AIM}/v1alpha1/{ML_TEAM}/aimruntimeconfigs/default")).body
    assert back["apiVersion"] == "aim.eai.amd.com/v1alpha1"
    assert back["spec"]["pvcHeadroomPercent"] == 0  # a present 0 is kept, not dropped
    assert back["metadata"]["uid"] == got["metadata"]["uid"]

    (cluster,) = load(SAMPLES / "cost-tracking" / "cluster-default.yaml")
    cluster["apiVersion"] = "aim.eai.amd.com/v1alpha2"
    assert (await raw.post(f"{AIM}/v1alpha2/aimclusterruntimeconfigs{STRICT}", cluster)).status == 201
    got = (await raw.get(f"{AIM}/v1alpha1/aimclusterruntimeconfigs/default")).body
    assert got["spec"] == cluster["spec"]


@pytest.mark.kubectl
async def test_kubectl_reads_a_v1alpha1_config_as_v1alpha2(raw: RawClient, installed: None, kubectl: Kubectl) -> None:
    await kubectl.arun("apply", "-f", str(SAMPLES / "env" / "ml-team-default.yaml"))
    _, out, _ = await kubectl.arun(
        "get", "aimruntimeconfigs.v1alpha2.aim.eai.amd.com", "default", "-n", "ml-team", "-o", "json"
    )
    got = json.loads(out)
    assert got["apiVersion"] == "aim.eai.amd.com/v1alpha2"
    assert got["spec"] == {"env": [{"name": "AIM_DOWNLOADER_PROTOCOL", "value": "HTTP"}]}
    _, out, _ = await kubectl.arun("get", "aimrc", "-n", "ml-team", "-o", "jsonpath={.items[0].apiVersion}")
    assert out == "aim.eai.amd.com/v1alpha2"  # the preferred version
    _, out, _ = await kubectl.arun("get", "aimruntimeconfigs.v1alpha1.aim.eai.amd.com", "-n", "ml-team", "-o", "name")
    assert out.strip() == "aimruntimeconfig.aim.eai.amd.com/default"


@pytest.mark.kubectl
async def test_service_status_subresource_and_printer_columns(
    raw: RawClient, installed: None, kubectl: Kubectl
) -> None:
    await kubectl.arun("apply", "-f", str(SAMPLES / "routing" / "qwen-chat.yaml"))
    url = f"{AIM}/v1alpha2/{ML_TEAM}/aimservices/qwen-chat"
    created = (await raw.get(url)).body
    status = {
        "status": "Running",
        "observedGeneration": created["metadata"]["generation"],
        "conditions": [
            {
                "type": "RuntimeConfigReady",
                "status": "True",
                "reason": "RuntimeConfigResolved",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
                "observedGeneration": created["metadata"]["generation"],
            }
        ],
        "resolvedRuntimeConfig": {
            "kind": "AIMRuntimeConfig",
            "name": "default",
            "namespace": "ml-team",
            "scope": "Namespace",
            "uid": "abc123",
        },
        "routing": {"path": "/ml/ml-team/conversational-ai"},
    }
    reply = await raw.put(f"{url}/status{STRICT}", {**created, "status": status})
    assert reply.status == 200, reply.body
    assert reply.body["status"] == status
    assert reply.body["metadata"]["generation"] == created["metadata"]["generation"]

    # A write through the main resource leaves status alone.
    spec = {"model": {"name": "qwen-qwen3-32b"}, "replicas": 2}
    reply = await raw.put(url, {**reply.body, "status": {"status": "Failed"}, "spec": spec})
    assert reply.status == 200, reply.body
    assert reply.body["status"] == status
    assert reply.body["spec"] == spec

    _, out, _ = await kubectl.arun("get", "aimservice", "-n", "ml-team")
    header, row = (line.split() for line in out.strip().splitlines())
    assert header == ["NAME", "STATUS", "MODEL", "PATH", "AGE"]
    assert row[:4] == ["qwen-chat", "Running", "qwen-qwen3-32b", "/ml/ml-team/conversational-ai"]
    _, out, _ = await kubectl.arun("get", "aimsvc", "-n", "ml-team", "-o", "name")
    assert out.strip() == "aimservice.aim.eai.amd.com/qwen-chat"
    _, out, _ = await kubectl.arun("get", "aim", "-n", "ml-team", "-o", "name")
    assert out.strip() == "aimservice.aim.eai.amd.com/qwen-chat"

    table = (await raw.get(url, headers={"Accept": TABLE})).body
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Status", "Model", "Path", "Age"]


# -- third-party stand-ins: KServe InferenceService beside OME's, Gateway API routes ----------------------


def kserve_isvc(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": "ml-team"},
        "spec": {
            "predictor": {
                "model": {"modelFormat": {"name": "aim"}, "runtime": "aim-runtime"},
                "containers": [{"name": "kserve-container", "image": "amdenterpriseai/aim-qwen:0.8"}],
                "minReplicas": 1,
            }
        },
    }


def ome_isvc(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": "ml-team"},
        "spec": {"model": {"name": "llama"}, "runtime": {"name": "sglang"}},
    }


@pytest.mark.kubectl
async def test_kserve_and_ome_inference_services_live_side_by_side(
    raw: RawClient, installed: None, kubectl: Kubectl
) -> None:
    (ome_crd,) = [d for d in crdgen.CRDS if d.name == "inferenceservices.ome.io"]
    assert (await raw.post(CRDS_PATH, committed_crd(ome_crd.file_name))).status == 201
    kserve = (await raw.post(KSERVE_ISVC + STRICT, kserve_isvc("qwen-chat"))).body
    assert kserve["spec"] == kserve_isvc("qwen-chat")["spec"]  # predictor kept as written
    assert (await raw.post(OME_ISVC, ome_isvc("llama-ome"))).status == 201

    status = {
        "observedGeneration": 1,
        "url": "http://qwen-chat.ml-team.example.com",
        "address": {"url": "http://qwen-chat-predictor.ml-team.svc.cluster.local"},
        "components": {"predictor": {"latestReadyRevision": "qwen-chat-predictor-00001"}},
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
    }
    reply = await raw.put(f"{KSERVE_ISVC}/qwen-chat/status{STRICT}", {**kserve, "status": status})
    assert reply.status == 200, reply.body
    assert reply.body["status"] == status

    _, out, _ = await kubectl.arun("get", "inferenceservices.serving.kserve.io", "-n", "ml-team")
    header, row = (line.split() for line in out.strip().splitlines())
    assert header == ["NAME", "URL", "READY", "AGE"]
    assert row[:3] == ["qwen-chat", "http://qwen-chat.ml-team.example.com", "True"]
    # The bare plural and OME's short name resolve to ome.io, which sorts first among the groups.
    for resource in ("inferenceservices", "inferenceservice", "isvc"):
        _, out, _ = await kubectl.arun("get", resource, "-n", "ml-team", "-o", "name")
        assert out.strip() == "inferenceservice.ome.io/llama-ome", resource
    _, out, _ = await kubectl.arun("get", "inferenceservices.ome.io", "-n", "ml-team", "-o", "name")
    assert out.strip() == "inferenceservice.ome.io/llama-ome"
    _, out, _ = await kubectl.arun("api-resources", "--api-group=serving.kserve.io", "--no-headers")
    (row,) = (line.split() for line in out.strip().splitlines())
    assert row == ["inferenceservices", "serving.kserve.io/v1beta1", "true", "InferenceService"]


async def test_kserve_isvc_requires_a_predictor(raw: RawClient, installed: None) -> None:
    body = kserve_isvc("x")
    body["spec"] = {}
    reply = await raw.post(KSERVE_ISVC, body)
    assert reply.status == 422, reply.body
    assert "spec.predictor: Required value" in reply.body["message"]


@pytest.mark.kubectl
async def test_httproute_as_aim_renders_it_round_trips_with_status(
    raw: RawClient, installed: None, kubectl: Kubectl
) -> None:
    await kubectl.arun("apply", "-f", str(SAMPLES / "gateway.yaml"))
    parent_ref = {
        "group": "gateway.networking.k8s.io",
        "kind": "Gateway",
        "name": "inference-gateway",
        "namespace": "gateways",
    }
    route: dict[str, Any] = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "qwen-chat", "namespace": "ml-team", "annotations": {"a": "b"}},
        "spec": {
            "parentRefs": [parent_ref],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/ml/ml-team/conversational-ai"}}],
                    "filters": [
                        {
                            "type": "URLRewrite",
                            "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}},
                        }
                    ],
                    "backendRefs": [{"name": "qwen-chat-predictor", "port": 80}],
                    "timeouts": {"request": "180s"},
                }
            ],
        },
    }
    created = await raw.post(ROUTES + STRICT, route)
    assert created.status == 201, created.body
    assert created.body["spec"] == route["spec"]
    status = {
        "parents": [
            {
                "parentRef": parent_ref,
                "controllerName": "omectl.io/sim-gateway",
                "conditions": [
                    {"type": "Accepted", "status": "True", "reason": "Accepted", "observedGeneration": 1},
                    {"type": "ResolvedRefs", "status": "True", "reason": "ResolvedRefs", "observedGeneration": 1},
                ],
            }
        ]
    }
    reply = await raw.put(f"{ROUTES}/qwen-chat/status{STRICT}", {**created.body, "status": status})
    assert reply.status == 200, reply.body
    assert reply.body["status"] == status

    missing_name = {**route, "metadata": {"name": "bad", "namespace": "ml-team"}}
    missing_name["spec"] = {"parentRefs": [{"namespace": "gateways"}]}
    reply = await raw.post(ROUTES, missing_name)
    assert reply.status == 422, reply.body
    assert "spec.parentRefs[0].name: Required value" in reply.body["message"]

    _, out, _ = await kubectl.arun("get", "httproutes", "-n", "ml-team", "-o", "name")
    assert out.strip() == "httproute.gateway.networking.k8s.io/qwen-chat"
    _, out, _ = await kubectl.arun("get", "gtw", "-n", "gateways")
    header, row = (line.split() for line in out.strip().splitlines())
    assert header == ["NAME", "CLASS", "ADDRESS", "PROGRAMMED", "AGE"]
    assert row[:2] == ["inference-gateway", "omectl-sim"]


def test_thirdparty_files_are_minimal_stand_ins_with_a_header() -> None:
    for path in OUR_THIRDPARTY:
        text = path.read_text()
        generated, first = text.splitlines()[:2]
        assert generated.startswith("# Generated by `python -m omectl.api.crdgen` from omectl/api/templates/"), (
            path.name
        )
        assert first.startswith("# Minimal stand-in for "), path.name
        assert "NOT the upstream" in text, path.name
        (crd,) = load(path)
        spec = crd["spec"]
        assert path.name == f"{spec['group']}_{spec['names']['plural']}.yaml"
        assert [v["subresources"] for v in spec["versions"]] == [{"status": {}}]
    (kserve,) = load(OUR_THIRDPARTY[0])
    assert "shortNames" not in kserve["spec"]["names"]  # `isvc` belongs to ome.io


# -- v1alpha2 models, profiles, profile sets, caches, artifacts and model sources -----------------------------

V1ALPHA2_KINDS = (
    ("AIMModel", "Namespaced", ("aimmdl",)),
    ("AIMClusterModel", "Cluster", ("aimclmdl",)),
    ("AIMProfile", "Namespaced", ()),
    ("AIMClusterProfile", "Cluster", ()),
    ("AIMProfileSet", "Namespaced", ()),
    ("AIMProfileCache", "Namespaced", ()),
    ("AIMArtifact", "Namespaced", ("aimart",)),
    ("AIMClusterModelSource", "Cluster", ("aimclsrc",)),
)
OWN_STATUS = {
    "AIMModel": {"profileCount", "imageMetadata", "sourceType"},  # the last two upstream's (docs/aim-versions.md)
    "AIMClusterModel": {"profileCount", "imageMetadata", "sourceType"},
    "AIMProfile": set(),
    "AIMClusterProfile": set(),
    "AIMProfileSet": {"profileCount"},
    "AIMProfileCache": {"artifacts"},
    "AIMArtifact": {"persistentVolumeClaim", "allocatedSize", "download", "progress", "discoveredSizeBytes"},
    "AIMClusterModelSource": {"modelCount", "availableModels", "modelsLimitReached", "lastSyncTime"},
}


def openapi(definition: crdgen.CRDDefinition) -> dict[str, Any]:
    schema: dict[str, Any] = aim_crd(definition)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


@pytest.mark.parametrize(
    ("definition", "expected"),
    list(zip(V1ALPHA2_CRDS, V1ALPHA2_KINDS, strict=True)),
    ids=[k for k, _, _ in V1ALPHA2_KINDS],
)
def test_v1alpha2_kinds_names_scope_and_common_fields(
    definition: crdgen.CRDDefinition, expected: tuple[str, str, tuple[str, ...]]
) -> None:
    kind, scope, short = expected
    crd = aim_crd(definition)
    spec = crd["spec"]
    assert (definition.kind, spec["scope"]) == (kind, scope)
    names = {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": f"{kind.lower()}s",
        "singular": kind.lower(),
        "categories": ["aim", "all"],
    }
    if short:
        names["shortNames"] = list(short)
    assert spec["names"] == names
    storage = [v for v in spec["versions"] if v["storage"]]
    assert [v["name"] for v in storage] == ["v1alpha2"]
    assert [v["name"] for v in spec["versions"]] == ["v1alpha2", *(v.name for v in definition.converted)]
    (version,) = storage
    assert version["subresources"] == {"status": {}}
    columns = [c["name"] for c in version["additionalPrinterColumns"]]
    assert columns[0] == "Status" and columns[-1] == "Age"
    schema = openapi(definition)["properties"]
    assert schema["spec"]["properties"]["runtimeConfigName"]["type"] == "string"
    status = schema["status"]["properties"]
    assert set(status) == {"status", "conditions", "resolvedRuntimeConfig", "observedGeneration"} | OWN_STATUS[kind]
    assert status["resolvedRuntimeConfig"]["properties"].keys() == {"kind", "name", "namespace", "scope", "uid"}
    assert status["conditions"]["x-kubernetes-list-map-keys"] == ["type"]


def test_v1alpha2_spec_fields() -> None:
    by_kind = {d.kind: openapi(d)["properties"]["spec"] for d in V1ALPHA2_CRDS}
    assert by_kind["AIMModel"]["required"] == ["image"]
    assert by_kind["AIMModel"]["properties"].keys() == {
        "image",
        "runtimeConfigName",
        "modelSources",
        "env",
        "discovery",
    }
    source = by_kind["AIMModel"]["properties"]["modelSources"]
    assert source["x-kubernetes-list-map-keys"] == ["name"]
    assert source["items"]["required"] == ["name", "sourceUri"]
    assert source["items"]["properties"].keys() == {"name", "sourceUri", "modelId", "size", "env"}
    profile = by_kind["AIMProfile"]["properties"]
    assert profile.keys() >= {"modelName", "containerEnv", "engineEnv", "gpu", "gpuCount", "precision", "metric"}
    for env in ("containerEnv", "engineEnv"):
        assert profile[env]["x-kubernetes-list-map-keys"] == ["name"]
    assert by_kind["AIMProfileSet"]["properties"]["profiles"]["items"]["required"] == ["name"]
    cache = by_kind["AIMProfileCache"]["properties"]
    assert cache["profileScope"]["enum"] == ["Namespace", "Cluster"]
    assert cache.keys() >= {"profileName", "storageClassName", "env", "modelSources", "runtimeConfigName"}
    artifact = by_kind["AIMArtifact"]
    assert artifact["required"] == ["sourceUri"]
    assert artifact["properties"].keys() >= {"sourceUri", "modelId", "size", "storageClassName", "env", "downloadImage"}
    assert artifact["properties"]["size"]["x-kubernetes-int-or-string"] is True
    assert by_kind["AIMClusterModelSource"]["properties"]["models"]["items"]["required"] == ["image", "name"]
    download = openapi(V1ALPHA2_CRDS[6])["properties"]["status"]["properties"]["download"]["properties"]
    assert download.keys() == {"job", "protocol", "protocolSequence", "attempt", "totalAttempts", "message"}


async def test_every_v1alpha2_sample_is_created_and_stored_whole(raw: RawClient, installed: None) -> None:
    for path in sorted((SAMPLES / "models-and-caching").glob("*.yaml")):
        for doc in load(path):
            group_version = doc["apiVersion"]
            plural = doc["kind"].lower() + "s"
            ns = f"namespaces/{doc['metadata']['namespace']}/" if doc["metadata"].get("namespace") else ""
            reply = await raw.post(f"/apis/{group_version}/{ns}{plural}{STRICT}", doc)
            assert reply.status == 201, (path.name, reply.body)
            assert reply.body["spec"] == doc["spec"]
    for definition in V1ALPHA2_CRDS:
        listed = await raw.get(f"{AIM}/v1alpha2/{definition.plural}")
        assert listed.status == 200 and listed.body["items"], definition.kind


@pytest.mark.parametrize(
    ("plural", "spec", "message"),
    [
        ("aimartifacts", {"size": "10Gi"}, "spec.sourceUri: Required value"),
        ("aimartifacts", {"sourceUri": "hf://x", "size": "lots"}, "spec.size: Invalid value"),
        ("aimmodels", {"modelSources": []}, "spec.image: Required value"),
        ("aimprofilecaches", {"profileName": "p", "profileScope": "Galaxy"}, "spec.profileScope: Unsupported value"),
        ("aimprofiles", {"modelName": "m", "gpuCount": -1}, "spec.gpuCount: Invalid value: -1"),
    ],
)
async def test_invalid_v1alpha2_objects_are_rejected(
    raw: RawClient, installed: None, plural: str, spec: dict[str, Any], message: str
) -> None:
    body = {"apiVersion": "aim.eai.amd.com/v1alpha2", "metadata": {"name": "bad", "namespace": "ml-team"}, "spec": spec}
    reply = await raw.post(f"{AIM}/v1alpha2/{ML_TEAM}/{plural}", body)
    assert reply.status == 422, reply.body
    assert message in reply.body["message"]


@pytest.mark.kubectl
async def test_artifact_status_subresource_columns_and_short_names(
    raw: RawClient, installed: None, kubectl: Kubectl
) -> None:
    await kubectl.arun("apply", "-f", str(SAMPLES / "models-and-caching"))
    url = f"{AIM}/v1alpha2/{ML_TEAM}/aimartifacts/qwen3-32b-weights"
    created = (await raw.get(url)).body
    status = {
        "status": "Ready",
        "observedGeneration": 1,
        "conditions": [
            {"type": "RuntimeConfigReady", "status": "True", "reason": "DefaultConfigNotFound", "message": ""},
            {"type": "Ready", "status": "True", "reason": "AllComponentsReady", "message": "All components are ready"},
        ],
        "persistentVolumeClaim": "qwen3-32b-weights-cache-0123abcd",
        "allocatedSize": "72Gi",
        "download": {
            "job": "qwen3-32b-weights-download-0123abcd",
            "protocol": "XET",
            "protocolSequence": "XET,HTTP",
            "attempt": 1,
            "totalAttempts": 2,
            "message": "Complete",
        },
    }
    reply = await raw.put(f"{url}/status{STRICT}", {**created, "status": status})
    assert reply.status == 200, reply.body
    assert reply.body["status"] == status

    _, out, _ = await kubectl.arun("get", "aimart", "-n", "ml-team")
    header, row = (line.split() for line in out.strip().splitlines())
    assert header == ["NAME", "STATUS", "MODELID", "SIZE", "PVC", "PROTOCOL", "AGE"]
    assert row[:6] == ["qwen3-32b-weights", "Ready", "Qwen/Qwen3-32B", "72Gi", status["persistentVolumeClaim"], "XET"]
    for short, name in (("aimclsrc", "amd-catalog"), ("aimclmdl", "qwen-qwen3-32b"), ("aimmdl", "qwen")):
        _, out, _ = await kubectl.arun("get", short, "-n", "ml-team", "-o", "name")
        assert out.strip().endswith(f"/{name}"), short
    _, out, _ = await kubectl.arun("get", "aimprofiles", "-n", "ml-team")
    header, row = (line.split() for line in out.strip().splitlines())
    assert header == ["NAME", "STATUS", "MODEL", "GPU", "GPUS", "PRECISION", "METRIC", "AGE"]
    assert row[0] == "qwen-mi300x-fp8" and row[1:6] == ["qwen", "MI300X", "1", "fp8", "latency"]
    _, out, _ = await kubectl.arun("get", "aim", "-n", "ml-team", "-o", "name")
    kinds = {line.split("/")[0] for line in out.split()}
    assert {"aimmodel.aim.eai.amd.com", "aimprofileset.aim.eai.amd.com", "aimartifact.aim.eai.amd.com"} <= kinds
