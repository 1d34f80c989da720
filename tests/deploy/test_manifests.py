"""deploy/: kustomize renders every overlay, the dev overlay is accepted by a (simulated) hub through the real
`kubectl apply -k`, the CRDs and the webhook template match what omectl generates, the RBAC covers what the code
calls, the helper scripts work, and the kind targets stop at once without a Docker engine."""

from __future__ import annotations

import base64
import copy
import json
import re
import shutil
import ssl
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.api import crdgen
from omectl.fleet.providers import registration_from_secret
from omectl.kube import resources
from omectl.settings import Settings
from omectl.sim.apiserver.builtin_defaults import apply_builtin_defaults
from omectl.sim.fleet import BackgroundFleet, EmbeddedFleet
from tests.support import Kubectl, kubectl_path

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
SCRIPTS = ROOT / "scripts"
OVERLAYS = sorted(p.name for p in (DEPLOY / "overlays").iterdir() if (p / "kustomization.yaml").exists())
KUSTOMIZATIONS = ["base", "hub/crds", "member", "member/crds", "member/rbac", "thirdparty-crds"] + [
    f"overlays/{o}" for o in OVERLAYS
]
HUB = "hub-1"
# Built-in kinds the embedded API server does not serve (omectl/sim/apiserver/registry.py builtin_types): kubectl
# reports "no matches for kind" for them. It serves every kind the overlays use, so everything must be accepted.
KNOWN_UNSERVED: set[str] = set()
NO_DOCKER = "kind targets need a Docker engine; none is available here"
# libyaml when present: the rendered overlays carry the OME CRDs (~6 MB), which the pure-Python loader takes seconds on
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# One worker runs the whole module, so each kustomization is rendered and parsed once (see `_kustomized`); the group is
# the one the other tests driving kubectl against an embedded server share.
pytestmark = pytest.mark.xdist_group("kubectl")


@cache
def _kustomized(path: str) -> tuple[dict[str, Any], ...]:
    """deploy/ does not change while the tests run, so each kustomization is rendered once per worker (the module's
    tests share one xdist group, so once per run)."""
    proc = subprocess.run(
        [kubectl_path(), "kustomize", str(DEPLOY / path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, f"kubectl kustomize deploy/{path} failed:\n{proc.stderr}"
    # A line `---` always starts a document (it ends a block scalar too), so the split is the parser's own.
    return tuple(d for text in _DOCUMENT_START.split(proc.stdout) for d in _parsed(text) if d)


_DOCUMENT_START = re.compile(r"^---$\n?", re.M)


@cache
def _parsed(document: str) -> tuple[Any, ...]:
    """The same CRDs are rendered by several kustomizations, byte for byte: each text is parsed once."""
    return tuple(yaml.load_all(document, Loader=_LOADER))


def kustomize(path: str) -> list[dict[str, Any]]:
    """The documents deploy/PATH renders to. Shared by every test: copy a document before changing it."""
    return list(_kustomized(path))


def one(docs: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def controller(docs: list[dict[str, Any]]) -> dict[str, Any]:
    return one(docs, "Deployment", "omectl-controller")


def container(docs: list[dict[str, Any]]) -> dict[str, Any]:
    spec = controller(docs)["spec"]["template"]["spec"]
    (c,) = spec["containers"]
    return c  # type: ignore[no-any-return]


def env_of(c: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c.get("env", [])}


# --- rendering ---------------------------------------------------------------------------------------------------


@pytest.mark.kubectl
@pytest.mark.parametrize("path", KUSTOMIZATIONS)
def test_every_kustomization_renders(path: str) -> None:
    docs = kustomize(path)
    assert docs
    for doc in docs:
        assert doc.get("apiVersion") and doc.get("kind") and doc["metadata"].get("name")


@pytest.mark.kubectl
def test_the_expected_overlays_exist() -> None:
    assert {"dev", "production", "production-cert-manager", "kind"} <= set(OVERLAYS)


@pytest.mark.kubectl
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_controller_is_hardened_and_writes_only_to_empty_dirs(overlay: str) -> None:
    docs = kustomize(f"overlays/{overlay}")
    deployment = controller(docs)
    pod = deployment["spec"]["template"]["spec"]
    c = container(docs)
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["serviceAccountName"] == "omectl-controller"
    sc = c["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc.get("privileged") is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert {"name": "metrics", "containerPort": 8080, "protocol": "TCP"} in c["ports"]
    assert c["resources"]["requests"] and c["resources"]["limits"]["memory"]
    # Every path omectl writes is on an emptyDir: traces, the status file, the working dir, TMPDIR.
    volumes = {v["name"]: v for v in pod["volumes"]}
    writable = [m["mountPath"] for m in c["volumeMounts"] if "emptyDir" in volumes[m["name"]]]
    env = env_of(c)
    status_file = next(a.split("=", 1)[1] for a in c["args"] if a.startswith("--status-file="))
    for path in (env["OMECTL_TRACE_FILE"], status_file, c["workingDir"], env["TMPDIR"], env["HOME"]):
        assert any(path == w or path.startswith(w + "/") for w in writable), f"{path} is not on an emptyDir"
    # The replica count stays 1 until lease-based sharding exists (docs/operations.md).
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"]["type"] == "Recreate"


@pytest.mark.kubectl
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_controller_runs_omectl_run_with_real_settings_and_flags(overlay: str) -> None:
    docs = kustomize(f"overlays/{overlay}")
    c = container(docs)
    env = env_of(c)
    fields = set(Settings.model_fields)
    for name in env:
        if name.startswith("OMECTL_"):
            assert name.removeprefix("OMECTL_").lower() in fields, f"{name} is not an omectl setting"
    assert {
        "OMECTL_HUB_KUBECONFIG",
        "OMECTL_WEBHOOK_CERT_FILE",
        "OMECTL_WEBHOOK_KEY_FILE",
        "OMECTL_WEBHOOK_CA_FILE",
    } <= (env.keys())
    assert env["OMECTL_WEBHOOK_HOST"] == "0.0.0.0"
    assert env["OMECTL_WEBHOOK_URL"].startswith("https://")
    port = c["ports"][0]
    assert port["name"] == "webhook" and str(port["containerPort"]) == env["OMECTL_WEBHOOK_PORT"]
    # The settings load (types and validators) from exactly this environment.
    plain = {k: v for k, v in env.items() if k.startswith("OMECTL_") and isinstance(v, str)}
    settings = Settings(**{k.removeprefix("OMECTL_").lower(): v for k, v in plain.items()})  # type: ignore[arg-type]
    assert settings.webhook_port == int(env["OMECTL_WEBHOOK_PORT"])
    # The mounted files are where the settings point.
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    assert env["OMECTL_HUB_KUBECONFIG"] == mounts["hub-kubeconfig"] + "/kubeconfig"
    for key, file in (("CERT", "tls.crt"), ("KEY", "tls.key"), ("CA", "ca.crt")):
        assert env[f"OMECTL_WEBHOOK_{key}_FILE"] == f"{mounts['webhook-tls']}/{file}"
    # `omectl run` accepts the args (click rejects an unknown option even with --help).
    assert c["args"][0] == "run"
    omectl = [sys.executable, "-m", "omectl"]
    proc = subprocess.run([*omectl, *c["args"], "--help"], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    # The Service routes to the webhook port.
    service = one(docs, "Service", "omectl-webhook")
    assert service["spec"]["ports"][0]["targetPort"] == "webhook"
    assert service["spec"]["selector"].items() <= controller(docs)["spec"]["template"]["metadata"]["labels"].items()


@pytest.mark.kubectl
def test_production_has_pdb_and_anti_affinity_and_an_external_webhook_service() -> None:
    docs = kustomize("overlays/production")
    pdb = one(docs, "PodDisruptionBudget")
    assert pdb["spec"]["maxUnavailable"] == 1  # minAvailable: 1 with one replica would block every drain
    pod = controller(docs)["spec"]["template"]["spec"]
    assert pod["affinity"]["podAntiAffinity"]
    assert one(docs, "Service", "omectl-webhook")["spec"]["type"] == "LoadBalancer"
    # The runtime CRDs belong to members; the hub gets only its own (FleetRuntime).
    hub_crds = {crd_name(d) for text in crdgen.hub_files().values() for d in yaml.safe_load_all(text) if d}
    assert {crd_name(d) for d in docs if d["kind"] == "CustomResourceDefinition"} == hub_crds
    cm = one(kustomize("overlays/production-cert-manager"), "Certificate", "omectl-webhook")
    assert cm["spec"]["secretName"] == "omectl-webhook-tls"


@pytest.mark.kubectl
def test_hub_kubeconfig_uses_the_pod_service_account() -> None:
    cm = one(kustomize("base"), "ConfigMap", "omectl-hub-kubeconfig")
    config = yaml.safe_load(cm["data"]["kubeconfig"])
    assert config["users"][0]["user"] == {"tokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token"}
    assert config["clusters"][0]["cluster"]["server"] == "https://kubernetes.default.svc:443"


# --- CRDs and the webhook template -----------------------------------------------------------------------------------


def crd_name(doc: dict[str, Any]) -> str:
    return str(doc["metadata"]["name"])


@pytest.mark.kubectl
def test_every_rendered_crd_equals_the_generated_or_thirdparty_one() -> None:
    # What crdgen writes for each (the committed text is `crdgen --check`'s): its YAML is a dump of this object
    generated = {crd_name(d): d for d in map(crdgen.build_crd, crdgen.CRDS)}
    thirdparty = {
        crd_name(d): d
        for f in sorted((ROOT / "deploy" / "crds" / "thirdparty").glob("*.yaml"))
        for d in yaml.load_all(f.read_text(), Loader=_LOADER)
        if d
    }
    member = {crd_name(d): d for d in kustomize("member") if d["kind"] == "CustomResourceDefinition"}
    assert member == generated, "deploy/member/crds differ from omectl.api.crdgen: run `make deploy-sync`"
    hub = {crd_name(d): d for text in crdgen.hub_files().values() for d in yaml.safe_load_all(text) if d}
    rendered_hub = {crd_name(d): d for d in kustomize("hub/crds")}
    assert rendered_hub == hub, "deploy/hub/crds differ from omectl.api.crdgen: run `make deploy-sync`"
    in_base = {crd_name(d) for d in kustomize("base") if d["kind"] == "CustomResourceDefinition"}
    assert in_base == set(hub), "the hub install (deploy/base) carries exactly the hub CRDs"
    generated |= hub
    stand_ins = {crd_name(d): d for d in kustomize("thirdparty-crds")}
    assert stand_ins == thirdparty, "deploy/thirdparty-crds differ from deploy/crds/thirdparty: `make deploy-sync`"
    for path in KUSTOMIZATIONS:  # wherever a CRD is rendered, it is one of those, unchanged
        for doc in kustomize(path):
            if doc["kind"] == "CustomResourceDefinition":
                assert doc == {**generated, **thirdparty}[crd_name(doc)], f"{crd_name(doc)} in deploy/{path}"


def test_webhook_configuration_template_is_what_omectl_installs() -> None:
    sys.path.insert(0, str(SCRIPTS))
    try:
        import render_webhook_config as render
    finally:
        sys.path.remove(str(SCRIPTS))
    checked_in = (DEPLOY / "member" / "webhook-configuration.template.yaml").read_text()
    assert checked_in == render.template(), "run `make deploy-sync`"
    filled = (
        checked_in.replace(render.CLUSTER_PLACEHOLDER, "west")
        .replace(render.URL_PLACEHOLDER, "https://omectl.example.com:443")
        .replace(render.CA_PLACEHOLDER, base64.b64encode(b"ca").decode())
    )
    assert yaml.safe_load(filled) == render.render("west", "https://omectl.example.com:443", b"ca")


# --- RBAC ---------------------------------------------------------------------------------------------------------


def rules_by_resource(role: dict[str, Any]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for res in rule["resources"]:
                key = f"{res}.{group}" if group else res
                if rule.get("resourceNames"):
                    key += "[" + ",".join(rule["resourceNames"]) + "]"
                out.setdefault(key, set()).update(rule["verbs"])
    return out


MEMBER_RULES = {
    "servingruntimes.ome.io": {"get", "list", "watch", "create", "patch", "delete"},
    "clusterservingruntimes.ome.io": {"get", "list", "watch", "create", "patch", "delete"},
    "servingruntimes/status.ome.io": {"update"},
    "clusterservingruntimes/status.ome.io": {"update"},
    "inferenceservices.ome.io": {"get", "list", "watch"},
    "inferenceservices/status.ome.io": {"update"},
    "basemodels.ome.io": {"list", "watch"},
    "clusterbasemodels.ome.io": {"list", "watch"},
    "deployments.apps": {"get", "list", "watch", "create", "patch"},
    "services": {"get", "list", "watch", "create", "patch"},
    "leaderworkersets.leaderworkerset.x-k8s.io": {"get", "list", "watch", "create", "patch"},
    "serviceaccounts": {"get", "create", "patch"},
    "roles.rbac.authorization.k8s.io": {"get", "create", "patch"},
    "rolebindings.rbac.authorization.k8s.io": {"get", "create", "patch"},
    # the AIMArtifacts' status-updater RoleBinding: watched by name, its ClusterRole bound
    "rolebindings.rbac.authorization.k8s.io[aim-engine-artifact-status-updater]": {"list", "watch"},
    "clusterroles.rbac.authorization.k8s.io[aim-engine-artifact-status-updater]": {"bind"},
    "pods": {"get", "list", "watch"},
    "secrets": {"get"},  # an AIM model's imagePullSecrets, for its image's registry
    "controllerrevisions.apps": {"get", "list", "create", "delete"},
    "aimservices.aim.eai.amd.com": {"get", "list", "watch"},
    "aimservices/status.aim.eai.amd.com": {"update"},
    "aimruntimeconfigs.aim.eai.amd.com": {"list", "watch"},
    "aimclusterruntimeconfigs.aim.eai.amd.com": {"list", "watch"},
    "inferenceservices.serving.kserve.io": {"get", "list", "watch", "create", "patch"},
    "persistentvolumeclaims": {"get", "list", "watch", "create", "patch"},
    "httproutes.gateway.networking.k8s.io": {"get", "list", "watch", "create", "patch", "delete"},
    "horizontalpodautoscalers.autoscaling": {"list", "watch"},
    "aimmodels.aim.eai.amd.com": {
        "get",
        "list",
        "watch",
        "create",
        "patch",
    },  # a v1alpha1 service by image creates its model
    "aimclustermodelsources.aim.eai.amd.com": {"get", "list", "watch"},
    **{
        f"{plural}.aim.eai.amd.com": {"get", "list", "watch", "create", "patch"}
        for plural in (
            "aimclustermodels",
            "aimprofiles",
            "aimclusterprofiles",
            "aimprofilesets",
            "aimprofilecaches",
            "aimartifacts",
        )
    },
    **{
        f"{plural}/status.aim.eai.amd.com": {"update"}
        for plural in (
            "aimmodels",
            "aimclustermodels",
            "aimprofiles",
            "aimclusterprofiles",
            "aimprofilesets",
            "aimprofilecaches",
            "aimartifacts",
            "aimclustermodelsources",
        )
    },
    "jobs.batch": {"get", "list", "watch", "create", "patch", "delete"},
    "configmaps": {"get", "list", "watch", "delete"},
    **{
        f"{plural}.aim.eai.amd.com": {"get", "list", "watch", "create", "patch"}
        for plural in ("aimservicetemplates", "aimclusterservicetemplates")
    },
    "aimtemplatecaches.aim.eai.amd.com": {"get", "list", "watch", "create", "patch"},
    "nodes": {"list", "watch"},
    **{
        f"{plural}/status.aim.eai.amd.com": {"update"}
        for plural in ("aimservicetemplates", "aimclusterservicetemplates", "aimtemplatecaches")
    },
    "events": {"create", "patch", "list"},
    "validatingwebhookconfigurations.admissionregistration.k8s.io[omectl-ome-webhooks]": {
        "get",
        "list",
        "watch",
        "patch",
        "delete",
    },
    "validatingwebhookconfigurations.admissionregistration.k8s.io": {"create"},
    # the AIM CRDs served at two versions, pointed at the owner's conversion webhook (webhook/conversion_keeper.py)
    "customresourcedefinitions.apiextensions.k8s.io"
    "[aimartifacts.aim.eai.amd.com,aimclustermodels.aim.eai.amd.com,aimclustermodelsources.aim.eai.amd.com,"
    "aimmodels.aim.eai.amd.com,aimservices.aim.eai.amd.com]": {
        "list",
        "watch",
        "patch",
    },
}


HUB_FLEET_RULES = {
    "fleetruntimes.fleet.omectl.io": {"get", "list", "watch"},
    "fleetruntimes/status.fleet.omectl.io": {"update"},
    "events": {"create", "patch"},  # Events on FleetRuntimes (in the namespace default: they are cluster-scoped)
}
HUB_KINDS = {"FLEET_RUNTIMES"}  # kinds only the hub serves: their rules are HUB_FLEET_RULES


@pytest.mark.kubectl
def test_member_and_hub_rbac_are_exactly_the_derived_rules() -> None:
    member = kustomize("member")
    assert rules_by_resource(one(member, "ClusterRole", "omectl-member")) == MEMBER_RULES
    binding = one(member, "ClusterRoleBinding", "omectl-member")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "omectl-member", "namespace": "omectl-system"}]
    lease_role = one(member, "Role", "omectl-member-lease")  # the ownership Lease, in omectl-system only
    assert lease_role["metadata"]["namespace"] == "omectl-system"
    assert rules_by_resource(lease_role) == {
        "leases.coordination.k8s.io[omectl-controller]": {"get", "update", "delete"},
        "leases.coordination.k8s.io": {"create"},
    }
    lease_binding = one(member, "RoleBinding", "omectl-member-lease")
    assert lease_binding["subjects"] == binding["subjects"]
    hub = kustomize("base")
    assert rules_by_resource(one(hub, "Role", "omectl-hub-registrations")) == {
        "secrets": {"list", "watch"},
        "controllerrevisions.apps": {"list", "create", "patch", "delete"},
        # --ha with the hub as coordination cluster: membership Leases and the fleet Lease (omectl/fleet/election.py)
        "leases.coordination.k8s.io": {"get", "list", "create", "update", "delete"},
    }
    assert one(hub, "RoleBinding", "omectl-hub-registrations")["subjects"][0]["name"] == "omectl-controller"
    assert rules_by_resource(one(hub, "ClusterRole", "omectl-hub-fleetruntimes")) == HUB_FLEET_RULES
    fleet_binding = one(hub, "ClusterRoleBinding", "omectl-hub-fleetruntimes")
    assert fleet_binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "omectl-controller", "namespace": "omectl-system"}
    ]


def test_every_rbac_rule_carries_a_comment() -> None:
    for file in (
        DEPLOY / "member" / "rbac" / "clusterrole.yaml",
        DEPLOY / "member" / "rbac" / "role-lease.yaml",
        DEPLOY / "base" / "controller" / "rbac-hub.yaml",
        DEPLOY / "base" / "controller" / "rbac-hub-fleet.yaml",
    ):
        lines = file.read_text().splitlines()
        for i, line in enumerate(lines):
            if line.strip().startswith("- apiGroups:"):
                assert lines[i - 1].strip().startswith("#") or lines[i + 3].strip().startswith("#"), (
                    f"{file.name}:{i + 1}: rule without a comment"
                )


def test_rbac_covers_every_kind_the_controller_reads_or_applies() -> None:
    """A kind added to the controller's apply tables or informers without an RBAC rule fails here."""
    from omectl.controller.aim import consumers as aim_consumers
    from omectl.controller.aim import service as aim_service
    from omectl.controller.ome import engine

    rules = MEMBER_RULES
    for ref in [*engine._RESOURCES.values(), *aim_service._RESOURCES.values()]:
        key = f"{ref.plural}.{ref.group}" if ref.group else ref.plural
        assert {"get", "create", "patch"} <= rules.get(key, set()), f"omectl applies {ref} but may not"
    for ref in aim_consumers.CHILD_RESOURCES.values():  # every one is read (get) and written (status, apply, delete)
        key = f"{ref.plural}.{ref.group}" if ref.group else ref.plural
        assert "get" in rules.get(key, set()), f"omectl reads {ref} but may not"
    sources = "\n".join(
        p.read_text() for p in [*(ROOT / "omectl" / "controller").rglob("*.py"), ROOT / "omectl" / "kube" / "events.py"]
    )
    for name in resources.__all__:
        ref = getattr(resources, name)
        if not isinstance(ref, resources.ResourceRef) or not re.search(rf"\b{name}\b", sources):
            continue
        key = f"{ref.plural}.{ref.group}" if ref.group else ref.plural
        granted = HUB_FLEET_RULES if name in HUB_KINDS else rules
        assert any(k == key or k.startswith(key + "[") for k in granted), f"the controller uses {name} ({ref})"


# --- the dev overlay on a simulated hub (real kubectl) --------------------------------------------------------------


def _hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    binary = kubectl_path()
    fleet = BackgroundFleet(EmbeddedFleet(1, name_prefix="hub-"))
    fleet.start()
    base = tmp_path_factory.mktemp("deploy-hub")
    try:
        yield Kubectl(binary, fleet.fleet.write_kubeconfig(base / "kubeconfig"), base / "kube-cache")
    finally:
        fleet.stop()


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    yield from _hub(tmp_path_factory)


@pytest.fixture
def empty_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    """A hub of its own: the install test expects to create everything, whatever ran before it."""
    yield from _hub(tmp_path_factory)


def served_kinds(k: Kubectl) -> set[str]:
    out = k.run(f"--context={HUB}", "api-resources", "-o", "wide", "--no-headers").stdout
    kinds = set()
    for line in out.splitlines():
        fields = line.split()
        kinds.add(next(f for f in fields if f[:1].isupper() and f not in ("true", "false")))
    return kinds


@pytest.mark.kubectl
def test_apply_k_dev_overlay_is_accepted_by_a_simulated_hub(empty_hub: Kubectl) -> None:
    hub = empty_hub
    rendered = kustomize("overlays/dev")
    served_before = served_kinds(hub)
    # --validate=false: the embedded server publishes no OpenAPI document for kubectl's client-side validation.
    # --server-side: the runtime CRDs are too big for client-side apply's last-applied annotation (262144 bytes).
    apply = ("apply", "--server-side", "--validate=false", "-k", str(DEPLOY / "overlays" / "dev"))
    proc = hub.run(f"--context={HUB}", *apply, check=False)
    crds = {crd_name(d) for d in rendered if d["kind"] == "CustomResourceDefinition"}
    served = served_before | {d["spec"]["names"]["kind"] for d in rendered if d["kind"] == "CustomResourceDefinition"}
    unserved = {d["kind"] for d in rendered} - served
    assert unserved <= KNOWN_UNSERVED, f"the embedded server stopped serving {unserved - KNOWN_UNSERVED}"
    refused = set(re.findall(r'no matches for kind "(\w+)"', proc.stderr))
    assert refused == unserved, proc.stderr
    other_errors = [
        line
        for line in proc.stderr.splitlines()
        if line.strip() and "no matches for kind" not in line and "ensure CRDs are installed first" not in line
    ]
    assert not other_errors, proc.stderr
    accepted = {line.split()[0] for line in proc.stdout.splitlines() if line.endswith(" serverside-applied")}
    for doc in rendered:
        if doc["kind"] in unserved:
            continue
        assert any(a.endswith("/" + doc["metadata"]["name"]) for a in accepted), f"{doc['kind']} not created"
    # Applying again changes nothing.
    versions = hub.run(f"--context={HUB}", "get", "crd", "-o", "jsonpath={.items[*].metadata.resourceVersion}").stdout
    again = hub.run(f"--context={HUB}", *apply, check=False)
    assert again.returncode == 0 or "no matches for kind" in again.stderr, again.stderr
    assert hub.run(f"--context={HUB}", "get", "crd", "-o", "jsonpath={.items[*].metadata.resourceVersion}").stdout == (
        versions
    )
    # The objects are stored as rendered, with the defaults kube-apiserver gives them.
    hub.run(
        f"--context={HUB}", "wait", "--for=condition=Established", *(f"crd/{n}" for n in sorted(crds)), "--timeout=20s"
    )
    live = json.loads(
        hub.run(f"--context={HUB}", "-n", "omectl-system", "get", "deploy", "omectl-controller", "-o", "json").stdout
    )
    defaulted = copy.deepcopy(controller(rendered))
    apply_builtin_defaults("apps", "Deployment", defaulted)
    assert live["spec"]["template"]["spec"]["containers"][0]["env"] == container([defaulted])["env"]
    secret = json.loads(
        hub.run(f"--context={HUB}", "-n", "omectl-system", "get", "secret", "omectl-member-token", "-o", "json").stdout
    )
    assert secret["type"] == "kubernetes.io/service-account-token"


@pytest.mark.kubectl
def test_registration_example_is_a_valid_hub_registration(hub: Kubectl) -> None:
    hub.run(f"--context={HUB}", "create", "namespace", "omectl-system", check=False)
    example = yaml.safe_load((DEPLOY / "hub" / "registration-secret.example.yaml").read_text())
    # A real API server turns stringData into data on write; the embedded server does not, so the test does.
    example["data"] = {k: base64.b64encode(v.encode()).decode() for k, v in example.pop("stringData").items()}
    hub.run(f"--context={HUB}", "apply", "--validate=false", "-f", "-", input=json.dumps(example))
    stored = json.loads(
        hub.run(f"--context={HUB}", "-n", "omectl-system", "get", "secret", "omectl-cluster-west", "-o", "json").stdout
    )
    registration = registration_from_secret(stored)
    assert (registration.name, registration.context) == ("west", "west")
    assert registration.labels == {"region": "us-west", "gpu": "mi300x"}


@pytest.mark.kubectl
def test_member_kubeconfig_and_register_cluster_scripts(hub: Kubectl, tmp_path: Path) -> None:
    """The member token Secret -> a registration kubeconfig -> a labelled hub Secret omectl registers."""
    hub.run(f"--context={HUB}", "create", "namespace", "omectl-system", check=False)
    token_secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "omectl-member-token", "namespace": "omectl-system"},
        # the token controller of a real cluster fills these; the embedded server has none
        "data": {"token": base64.b64encode(b"member-token").decode(), "ca.crt": base64.b64encode(b"CA").decode()},
    }
    hub.run(f"--context={HUB}", "apply", "--validate=false", "-f", "-", input=json.dumps(token_secret))
    env = {**hub.env(), "KUBECONFIG": str(hub.kubeconfig)}
    made = subprocess.run(
        [str(SCRIPTS / "member-kubeconfig.sh"), "--context", HUB, "--name", "east"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    config = yaml.safe_load(made.stdout)
    assert config["users"][0]["user"] == {"token": "member-token"}
    assert config["clusters"][0]["cluster"]["certificate-authority-data"] == token_secret["data"]["ca.crt"]
    hub_config = yaml.safe_load(hub.kubeconfig.read_text())
    assert config["clusters"][0]["cluster"]["server"] == hub_config["clusters"][0]["cluster"]["server"]
    file = tmp_path / "east.kubeconfig"
    file.write_text(made.stdout)
    registered = subprocess.run(
        [
            str(SCRIPTS / "register-cluster.sh"),
            *("--hub-context", HUB, "--name", "east", "--kubeconfig", str(file), "--label", "gpu=h100"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert registered.returncode == 0, registered.stderr
    stored = json.loads(
        hub.run(f"--context={HUB}", "-n", "omectl-system", "get", "secret", "omectl-cluster-east", "-o", "json").stdout
    )
    assert stored["metadata"]["labels"]["omectl.io/cluster"] == "true"
    registration = registration_from_secret(stored)
    assert registration.name == "east"
    assert registration.labels == {"gpu": "h100"}
    assert registration.kubeconfig_inline == made.stdout


# --- the webhook certificate script ----------------------------------------------------------------------------------


def test_webhook_certs_script_makes_a_certificate_omectl_serves(tmp_path: Path) -> None:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    out = tmp_path / "certs"
    proc = subprocess.run(
        [str(SCRIPTS / "webhook-certs.sh"), "--out", str(out), "--host", "omectl.example.com", "--host", "10.1.2.3"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    from cryptography import x509

    cert = x509.load_pem_x509_certificate((out / "tls.crt").read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "omectl-webhook.omectl-system.svc" in san.get_values_for_type(x509.DNSName)
    assert "omectl.example.com" in san.get_values_for_type(x509.DNSName)
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["10.1.2.3"]
    # Loaded the way ControllerApp loads OMECTL_WEBHOOK_CERT_FILE / KEY_FILE; verified against ca.crt.
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(str(out / "tls.crt"), str(out / "tls.key"))
    client = ssl.create_default_context(cafile=str(out / "ca.crt"))
    assert client.get_ca_certs()[0]["subject"] == ((("commonName", "omectl-webhook-ca"),),)
    assert oct((out / "tls.key").stat().st_mode & 0o777) == "0o600"


# --- kind targets without Docker -------------------------------------------------------------------------------


def path_without_docker(tmp_path: Path, *, failing_docker: bool) -> str:
    """A PATH holding make, bash and coreutils but no docker (or a docker whose engine is absent), and a kind stub."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("make", "bash", "sh", "env", "dirname", "cat", "sed", "grep", "mkdir", "rm", "printf"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    (bin_dir / "kind").write_text(f"#!/bin/sh\ntouch {tmp_path}/kind-was-called\n")
    (bin_dir / "kind").chmod(0o755)
    if failing_docker:
        (bin_dir / "docker").write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n")
        (bin_dir / "docker").chmod(0o755)
    return str(bin_dir)


@pytest.mark.parametrize("failing_docker", [False, True], ids=["no-docker-binary", "no-docker-engine"])
@pytest.mark.parametrize("target", ["kind-up", "kind-e2e", "kind-down", "image"])
def test_kind_targets_stop_at_once_without_a_docker_engine(tmp_path: Path, target: str, failing_docker: bool) -> None:
    env = {"PATH": path_without_docker(tmp_path, failing_docker=failing_docker), "HOME": str(tmp_path)}
    proc = subprocess.run(
        ["make", "--no-print-directory", "-C", str(ROOT), target],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode != 0
    assert NO_DOCKER in proc.stderr
    assert not (tmp_path / "kind-was-called").exists()
