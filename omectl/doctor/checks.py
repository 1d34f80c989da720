"""The checks `omectl doctor` runs against one member cluster.

Each check reads the cluster through its `ClusterClient` and answers with one or more `Finding`s: PASS, WARN or
FAIL, a one-line message that names the object concerned, and a one-line fix. A check that cannot read what it
needs says so as a FAIL of its own (never a traceback, never a silent PASS).
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import ssl
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import aiohttp
import yaml
from cryptography import x509

from omectl.api.aim import GROUP as AIM_GROUP
from omectl.api.crdgen import CRDS
from omectl.kube.client import ClusterClient, KubeError
from omectl.kube.crds import INSTALL_CRDS, RUNTIME_CRDS, lacks_status_subresource, status_subresource_problem
from omectl.kube.errors import NotFound
from omectl.kube.resources import (
    AIM_CLUSTER_MODELS,
    CLUSTER_SERVING_RUNTIMES,
    CUSTOM_RESOURCE_DEFINITIONS,
    INFERENCE_SERVICES,
    NAMESPACES,
    SERVICES,
    SERVING_RUNTIMES,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    ResourceRef,
)

Status = Literal["PASS", "WARN", "FAIL"]
PASS: Status = "PASS"
WARN: Status = "WARN"
FAIL: Status = "FAIL"

SELF_SUBJECT_ACCESS_REVIEWS = ResourceRef(
    "authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False
)
MEMBER_CLUSTER_ROLE = Path(__file__).resolve().parents[2] / "deploy" / "member" / "rbac" / "clusterrole.yaml"
CERT_WARN_DAYS = 30
WEBHOOK_TIMEOUT = 3.0


@dataclass(frozen=True)
class Finding:
    check: str
    status: Status
    message: str
    fix: str = ""

    def document(self) -> dict[str, str]:
        return {key: value for key, value in asdict(self).items() if value}


Check = Callable[["Context"], Awaitable[list[Finding]]]


@dataclass
class Context:
    """What every check may use: the cluster's client, settings the checks need, and a clock."""

    client: ClusterClient
    aim_namespace: str = "aim-system"
    lease_namespace: str = "omectl-system"
    now: dt.datetime | None = None

    def time(self) -> dt.datetime:
        return self.now or dt.datetime.now(dt.UTC)


def _one_line(exc: BaseException, client: ClusterClient) -> str:
    return " ".join(str(exc).split()).removeprefix(f"cluster {client.name}: ") or type(exc).__name__


# --- CRDs ------------------------------------------------------------------------------------------------------


async def check_crds(ctx: Context) -> list[Finding]:
    """omectl's CRDs are installed and serve the versions this release needs; the runtime CRDs have the status
    subresource (upstream OME's do not, and every InheritanceReady write would fail)."""
    name = "crds"
    installed = {crd["metadata"]["name"]: crd for crd in await ctx.client.list_all(CUSTOM_RESOURCE_DEFINITIONS)}
    findings: list[Finding] = []
    missing: dict[str, list[str]] = defaultdict(list)
    for definition in CRDS:
        crd = installed.get(definition.name)
        served = {v.get("name") for v in (crd or {}).get("spec", {}).get("versions", []) if v.get("served")}
        lacking = [v for v in definition.versions if v not in served]
        if crd is None or lacking:
            what = definition.name if crd is None else f"{definition.name} (versions {', '.join(lacking)})"
            missing[definition.group].append(what)
    for crd_name in RUNTIME_CRDS:
        crd = installed.get(crd_name)
        if crd is not None and lacks_status_subresource(crd):
            findings.append(
                Finding(name, FAIL, status_subresource_problem(crd_name), f"apply omectl's CRDs: {INSTALL_CRDS}")
            )
    for group, names in sorted(missing.items()):
        required = group != AIM_GROUP  # AIM is optional: without its CRDs the AIM controllers stay off
        findings.append(
            Finding(
                name,
                FAIL if required else WARN,
                f"{len(names)} {group} CRD(s) missing or not serving the needed versions: {', '.join(names)}"
                + ("" if required else " (AIM reconciliation is off on this cluster)"),
                f"apply omectl's CRDs: {INSTALL_CRDS}",
            )
        )
    if not findings:
        findings.append(Finding(name, PASS, f"all {len(CRDS)} omectl CRDs installed at the versions needed"))
    return findings


# --- webhooks --------------------------------------------------------------------------------------------------


def _ca_certificates(config: Mapping[str, Any]) -> list[x509.Certificate]:
    bundle = config.get("caBundle")
    if not bundle:
        return []
    try:
        return x509.load_pem_x509_certificates(base64.b64decode(bundle))
    except ValueError:
        return []


async def _answers(url: str, ca_pem: bytes | None) -> tuple[str | None, dt.datetime | None]:
    """(None, the serving certificate's expiry) when an HTTPS server answers at `url`, else (why not, None)."""
    context = ssl.create_default_context()
    if ca_pem:
        context = ssl.create_default_context(cadata=ca_pem.decode())
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}
    timeout = aiohttp.ClientTimeout(total=WEBHOOK_TIMEOUT)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.post(url, json=body, ssl=context) as reply,
        ):
            expires = None
            transport = reply.connection.transport if reply.connection else None
            ssl_object = transport.get_extra_info("ssl_object") if transport is not None else None
            peer = ssl_object.getpeercert() if ssl_object is not None else None
            if peer and peer.get("notAfter"):
                expires = dt.datetime.fromtimestamp(ssl.cert_time_to_seconds(str(peer["notAfter"])), dt.UTC)
            return None, expires
    except aiohttp.ClientConnectorCertificateError as exc:
        return f"its certificate is not trusted by the caBundle ({exc.certificate_error})", None
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        return " ".join(str(exc).split()) or type(exc).__name__, None


async def check_webhooks(ctx: Context) -> list[Finding]:
    """Every validating webhook points at a server that answers; a `failurePolicy: Fail` one that does not blocks
    every write it matches. Certificates (the caBundle's and the served one) are not expired or about to."""
    findings: list[Finding] = []
    now = ctx.time()
    configurations = await ctx.client.list_all(VALIDATING_WEBHOOK_CONFIGURATIONS)
    for configuration in configurations:
        config_name = configuration["metadata"]["name"]
        for hook in configuration.get("webhooks") or []:
            where = f"ValidatingWebhookConfiguration {config_name}, webhook {hook.get('name')}"
            client_config = hook.get("clientConfig") or {}
            fail_closed = hook.get("failurePolicy", "Fail") == "Fail"
            expiries = [(cert.not_valid_after_utc, "caBundle") for cert in _ca_certificates(client_config)]
            url = client_config.get("url")
            if url:
                why, served_expiry = await _answers(
                    url, base64.b64decode(client_config["caBundle"]) if client_config.get("caBundle") else None
                )
                if served_expiry is not None:
                    expiries.append((served_expiry, "serving certificate"))
                if why is not None:
                    host = urlsplit(url).netloc
                    findings.append(
                        Finding(
                            "webhooks",
                            FAIL if fail_closed else WARN,
                            f"{where}: {url} does not answer ({why})"
                            + (": every write it matches is denied" if fail_closed else " (failurePolicy Ignore)"),
                            f"start the controller that serves {host}, or remove the stale configuration: "
                            f"kubectl delete validatingwebhookconfiguration {config_name}",
                        )
                    )
            elif client_config.get("service"):
                service = client_config["service"]
                try:
                    await ctx.client.get(SERVICES, service.get("name", ""), service.get("namespace"))
                except NotFound:
                    findings.append(
                        Finding(
                            "webhooks",
                            FAIL if fail_closed else WARN,
                            f"{where}: Service {service.get('namespace')}/{service.get('name')} does not exist",
                            "install the controller (deploy/), or remove the stale configuration: "
                            f"kubectl delete validatingwebhookconfiguration {config_name}",
                        )
                    )
            for expiry, which in expiries:
                days = (expiry - now).total_seconds() / 86400
                if days < CERT_WARN_DAYS:
                    findings.append(
                        Finding(
                            "webhook-certificates",
                            FAIL if days < 0 else WARN,
                            f"{where}: the {which} {'expired' if days < 0 else 'expires'} "
                            f"{expiry:%Y-%m-%d} ({abs(days):.0f} days {'ago' if days < 0 else 'left'})",
                            "renew it (scripts/webhook-certs.sh, or cert-manager) and restart the controller",
                        )
                    )
    if not any(f.check == "webhooks" for f in findings):
        count = sum(len(c.get("webhooks") or []) for c in configurations)
        findings.append(
            Finding("webhooks", PASS, f"{count} webhook(s) in {len(configurations)} configuration(s) answer")
        )
    if not any(f.check == "webhook-certificates" for f in findings):
        findings.append(
            Finding("webhook-certificates", PASS, f"no webhook certificate expires within {CERT_WARN_DAYS} days")
        )
    return findings


# --- permissions -----------------------------------------------------------------------------------------------


def required_permissions(cluster_role: Path = MEMBER_CLUSTER_ROLE) -> list[tuple[str, str, str]]:
    """(group, resource, verb) for every grant of omectl's member ClusterRole: what the controller needs."""
    documents = [d for d in yaml.safe_load_all(cluster_role.read_text()) if d and d.get("kind") == "ClusterRole"]
    found: list[tuple[str, str, str]] = []
    for rule in (rule for document in documents for rule in document.get("rules") or []):
        for group in rule.get("apiGroups") or [""]:
            for resource in rule.get("resources") or []:
                for verb in rule.get("verbs") or []:
                    found.append((group, resource, verb))
    return found


async def check_permissions(ctx: Context) -> list[Finding]:
    """The registered identity may do everything the controller does (a SelfSubjectAccessReview per grant)."""
    try:
        needed = required_permissions()
    except OSError as exc:
        return [
            Finding("permissions", WARN, f"omectl's member ClusterRole cannot be read ({exc.strerror}): not checked")
        ]

    async def allowed(group: str, resource: str, verb: str) -> bool:
        plural, _, subresource = resource.partition("/")
        attributes = {"group": group, "resource": plural, "verb": verb}
        if subresource:
            attributes["subresource"] = subresource
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes},
        }
        answer = await ctx.client.create(SELF_SUBJECT_ACCESS_REVIEWS, body)
        return bool((answer.get("status") or {}).get("allowed"))

    try:
        answers = await asyncio.gather(*(allowed(*permission) for permission in needed))
    except NotFound:
        return [Finding("permissions", WARN, "the API server does not serve SelfSubjectAccessReview: not checked")]
    denied = [
        f"{verb} {resource}" + (f".{group}" if group else "")
        for (group, resource, verb), ok in zip(needed, answers, strict=True)
        if not ok
    ]
    if denied:
        return [
            Finding(
                "permissions",
                FAIL,
                f"the registered identity may not: {', '.join(denied)}",
                "bind omectl's member ClusterRole to it: kubectl apply --server-side -k deploy/member",
            )
        ]
    return [
        Finding("permissions", PASS, f"the registered identity has all {len(needed)} permissions the controller needs")
    ]


# --- chains and drift -----------------------------------------------------------------------------------------


def _condition(obj: Mapping[str, Any], condition_type: str) -> Mapping[str, Any] | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == condition_type:
            return condition
    return None


def _per_namespace(objects: Iterable[Mapping[str, Any]], describe: Callable[[Mapping[str, Any]], str]) -> str:
    by_namespace: dict[str, list[str]] = defaultdict(list)
    for obj in objects:
        by_namespace[obj["metadata"].get("namespace") or "(cluster)"].append(describe(obj))
    return "; ".join(f"{ns}: {', '.join(sorted(names))}" for ns, names in sorted(by_namespace.items()))


def _broken_label(runtime: Mapping[str, Any]) -> str:
    return f"{runtime['metadata']['name']} ({(_condition(runtime, 'InheritanceReady') or {}).get('reason')})"


async def check_chains(ctx: Context) -> list[Finding]:
    """Runtimes whose chain does not resolve, and InferenceServices drifted from their pinned revision."""
    serving, cluster_serving, isvcs = await asyncio.gather(
        ctx.client.list_all(SERVING_RUNTIMES),
        ctx.client.list_all(CLUSTER_SERVING_RUNTIMES),
        ctx.client.list_all(INFERENCE_SERVICES),
    )
    broken = [
        runtime
        for runtime in [*serving, *cluster_serving]
        if (_condition(runtime, "InheritanceReady") or {}).get("status") == "False"
    ]
    drifted = [isvc for isvc in isvcs if (_condition(isvc, "RuntimeDrifted") or {}).get("status") == "True"]
    findings = []
    if broken:
        findings.append(
            Finding(
                "chains",
                FAIL,
                f"{len(broken)} runtime chain(s) do not resolve: " + _per_namespace(broken, _broken_label),
                "see why: kubectl ome runtime tree NAME [-n NS] --ancestors; restore the parent or fix the annotation",
            )
        )
    else:
        findings.append(Finding("chains", PASS, f"all {len(serving) + len(cluster_serving)} runtime chains resolve"))
    if drifted:
        findings.append(
            Finding(
                "drift",
                WARN,
                f"{len(drifted)} pinned InferenceService(s) run an older revision than their runtime: "
                + _per_namespace(drifted, lambda i: i["metadata"]["name"]),
                "review with omectl runtime plan / history, then omectl runtime rollout NAME -n NS",
            )
        )
    else:
        findings.append(Finding("drift", PASS, f"no InferenceService has drifted ({len(isvcs)} checked)"))
    return findings


# --- AIM ---------------------------------------------------------------------------------------------------------


async def check_aim_namespace(ctx: Context) -> list[Finding]:
    """With AIM's CRDs installed, the AIM operator namespace exists: cluster-scoped models run their discovery Jobs
    there (a FAIL when there are such models, else a WARN)."""
    crds = await ctx.client.list_all(CUSTOM_RESOURCE_DEFINITIONS)
    if not any(crd["spec"].get("group") == AIM_GROUP for crd in crds):
        return [Finding("aim-namespace", PASS, "AIM is not installed on this cluster: nothing to check")]
    try:
        await ctx.client.get(NAMESPACES, ctx.aim_namespace)
    except NotFound:
        pass
    else:
        return [Finding("aim-namespace", PASS, f'the AIM operator namespace "{ctx.aim_namespace}" exists')]
    try:
        models = len(await ctx.client.list_all(AIM_CLUSTER_MODELS))
    except NotFound:
        models = 0
    consequence = (
        f"{models} AIMClusterModel(s) cannot run discovery" if models else "AIMClusterModels would fail discovery"
    )
    return [
        Finding(
            "aim-namespace",
            FAIL if models else WARN,
            f'the AIM operator namespace "{ctx.aim_namespace}" does not exist: {consequence}',
            f"kubectl create namespace {ctx.aim_namespace}, or set AIM_SYSTEM_NAMESPACE to the operator namespace",
        )
    ]


# --- the controller --------------------------------------------------------------------------------------------


async def check_controller(ctx: Context) -> list[Finding]:
    """A controller holds the cluster: its ownership Lease in the member is held and renewed (the holder installs
    and keeps the webhooks; a stale Lease after a kill -9 leaves them pointing at a dead server)."""
    from omectl.webhook.health import check_member

    found = await check_member(ctx.client, ctx.client.name, namespace=ctx.lease_namespace)
    if found.lease is None:
        return [
            Finding(
                "controller",
                WARN,
                f"no omectl controller holds this cluster (no Lease in {ctx.lease_namespace})",
                "start `omectl run` with this cluster registered",
            )
        ]
    if not found.lease_fresh:
        return [
            Finding("controller", FAIL, found.problem or f"{found.owner} stopped renewing its lease", found.fix or "")
        ]
    renewed = found.lease.renew_time or "-"
    return [Finding("controller", PASS, f"held by {found.owner}, lease renewed at {renewed}")]


CHECKS: tuple[tuple[str, Check], ...] = (
    ("crds", check_crds),
    ("controller", check_controller),
    ("webhooks", check_webhooks),
    ("permissions", check_permissions),
    ("chains", check_chains),
    ("aim-namespace", check_aim_namespace),
)


async def run_checks(ctx: Context, checks: Iterable[tuple[str, Check]] = CHECKS) -> list[Finding]:
    """Every check's findings, in order; a check whose reads fail is one FAIL naming what it could not read."""

    async def one(name: str, check: Check) -> list[Finding]:
        try:
            return await check(ctx)
        except KubeError as exc:
            return [
                Finding(name, FAIL, f"cannot check: {_one_line(exc, ctx.client)}", "fix access to the cluster first")
            ]
        except Exception as exc:  # one broken check must not hide the others; its FAIL names the error
            return [Finding(name, FAIL, f"the check itself failed: {type(exc).__name__}: {exc}")]

    results = await asyncio.gather(*(one(name, check) for name, check in checks))
    return [finding for findings in results for finding in findings]
