"""The checks `omectl doctor` runs against one member cluster.

Each check reads the cluster through its `ClusterClient` and answers with one or more `Finding`s: PASS, WARN or
FAIL, a one-line message that names the object concerned, and a one-line fix. A check that cannot read what it
needs says so as a FAIL of its own (never a traceback, never a silent PASS).
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import json
import os
import ssl
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, NamedTuple
from urllib.parse import urlsplit

import aiohttp
import yaml
from cryptography import x509

from omectl.api.aim import GROUP as AIM_GROUP
from omectl.api.crdgen import CONVERSION_PLACEHOLDER_URL, CRDS
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
    _crds: asyncio.Task[list[dict[str, Any]]] | None = field(default=None, init=False, repr=False)

    def time(self) -> dt.datetime:
        return self.now or dt.datetime.now(dt.UTC)

    async def crds(self) -> list[dict[str, Any]]:
        """The cluster's CRDs, listed once for every check that reads them (the runtime CRDs are ~0.8 MB each)."""
        if self._crds is None:
            self._crds = asyncio.ensure_future(self.client.list_all(CUSTOM_RESOURCE_DEFINITIONS))
        return await asyncio.shield(self._crds)


def _one_line(exc: BaseException, client: ClusterClient) -> str:
    return " ".join(str(exc).split()).removeprefix(f"cluster {client.name}: ") or type(exc).__name__


# --- CRDs ------------------------------------------------------------------------------------------------------


async def check_crds(ctx: Context) -> list[Finding]:
    """omectl's CRDs are installed and serve the versions this release needs; the runtime CRDs have the status
    subresource (upstream OME's do not, and every InheritanceReady write would fail)."""
    name = "crds"
    installed = {crd["metadata"]["name"]: crd for crd in await ctx.crds()}
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


ADMISSION_REVIEW: Final = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}
CONVERSION_REVIEW: Final = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}


async def _answers(url: str, ca_pem: bytes | None, body: Mapping[str, str]) -> tuple[str | None, dt.datetime | None]:
    """(None, the serving certificate's expiry) when an HTTPS server answers at `url` (any HTTP reply to the empty
    review `body`), else (why not, None)."""
    context = ssl.create_default_context()
    if ca_pem:
        context = ssl.create_default_context(cadata=ca_pem.decode())
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
    except aiohttp.ClientConnectorError as exc:  # its str() holds the SSL context's repr: say only what failed
        cause = exc.os_error
        reason = os.strerror(cause.errno) if cause.errno and cause.errno > 0 else cause.strerror or str(cause)
        return f"cannot connect to {exc.host}:{exc.port}: {reason}", None
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        return " ".join(str(exc).split()) or type(exc).__name__, None


@dataclass(frozen=True)
class Probe:
    """What probing a webhook's `clientConfig` found: why it does not answer (None when it does), whether it names
    a Service (else a URL), the server it names (`host:port`, or the Service's `namespace/name`), and the expiries of
    the certificates seen (the caBundle's, the served one)."""

    problem: str | None
    by_service: bool
    server: str
    expiries: tuple[tuple[dt.datetime, str], ...]


async def probe_client_config(ctx: Context, client_config: Mapping[str, Any], body: Mapping[str, str]) -> Probe:
    """Probe an admission or conversion webhook's `clientConfig`: a `url` must answer over HTTPS with a certificate
    its caBundle trusts; a `service` must exist (the API server reaches it through the cluster's network)."""
    expiries = [(cert.not_valid_after_utc, "caBundle") for cert in _ca_certificates(client_config)]
    url = client_config.get("url")
    if url:
        bundle = client_config.get("caBundle")
        why, served_expiry = await _answers(url, base64.b64decode(bundle) if bundle else None, body)
        if served_expiry is not None:
            expiries.append((served_expiry, "serving certificate"))
        problem = None if why is None else f"{url} does not answer ({why})"
        return Probe(problem, False, urlsplit(url).netloc, tuple(expiries))
    service = client_config.get("service") or {}
    where = f"{service.get('namespace')}/{service.get('name')}"
    problem = None
    if service:
        try:
            await ctx.client.get(SERVICES, service.get("name", ""), service.get("namespace"))
        except NotFound:
            problem = f"Service {where} does not exist"
    return Probe(problem, True, where, tuple(expiries))


def _certificate_findings(check: str, where: str, probe: Probe, now: dt.datetime) -> list[Finding]:
    findings = []
    for expiry, which in probe.expiries:
        days = (expiry - now).total_seconds() / 86400
        if days < CERT_WARN_DAYS:
            findings.append(
                Finding(
                    check,
                    FAIL if days < 0 else WARN,
                    f"{where}: the {which} {'expired' if days < 0 else 'expires'} "
                    f"{expiry:%Y-%m-%d} ({abs(days):.0f} days {'ago' if days < 0 else 'left'})",
                    "renew it (scripts/webhook-certs.sh, or cert-manager) and restart the controller",
                )
            )
    return findings


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
            fail_closed = hook.get("failurePolicy", "Fail") == "Fail"
            probe = await probe_client_config(ctx, hook.get("clientConfig") or {}, ADMISSION_REVIEW)
            remove = f"remove the stale configuration: kubectl delete validatingwebhookconfiguration {config_name}"
            if probe.problem is not None and not probe.by_service:
                findings.append(
                    Finding(
                        "webhooks",
                        FAIL if fail_closed else WARN,
                        f"{where}: {probe.problem}"
                        + (": every write it matches is denied" if fail_closed else " (failurePolicy Ignore)"),
                        f"start the controller that serves {probe.server}, or {remove}",
                    )
                )
            elif probe.problem is not None:
                findings.append(
                    Finding(
                        "webhooks",
                        FAIL if fail_closed else WARN,
                        f"{where}: {probe.problem}",
                        f"install the controller (deploy/), or {remove}",
                    )
                )
            findings += _certificate_findings("webhook-certificates", where, probe, now)
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


# --- conversion webhooks ---------------------------------------------------------------------------------------


def _converted_by_webhook(crd: Mapping[str, Any]) -> bool:
    spec = crd.get("spec") or {}
    served = [v for v in spec.get("versions") or [] if v.get("served")]
    return bool(served) and (spec.get("conversion") or {}).get("strategy") == "Webhook"


def _versions_needing_conversion(crd: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(the served versions whose every read and write goes through the conversion webhook, those that do not): the
    storage version needs no conversion, unless objects are still stored in another (`status.storedVersions`)."""
    served = [v["name"] for v in crd["spec"]["versions"] if v.get("served")]
    storage = next((v["name"] for v in crd["spec"]["versions"] if v.get("storage")), None)
    stored = set((crd.get("status") or {}).get("storedVersions") or [storage])
    if stored - {storage}:  # objects stored in an older version convert on every read, in any version
        return served, []
    return [v for v in served if v != storage], [v for v in served if v == storage]


def _listed(names: list[str]) -> str:
    """`A`, `A and B`, `A, B and C`."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _affected(crds: list[Mapping[str, Any]], pick: int) -> str:
    """`AIMArtifact and AIMClusterModelSource at aim.eai.amd.com/v1alpha1`, per distinct group and versions."""
    kinds: dict[tuple[str, tuple[str, ...]], list[str]] = defaultdict(list)
    for crd in crds:
        versions = tuple(_versions_needing_conversion(crd)[pick])
        if versions:
            kinds[(crd["spec"]["group"], versions)].append(crd["spec"]["names"]["kind"])
    return "; ".join(
        f"{_listed(sorted(names))} at {', '.join(f'{group}/{v}' for v in versions)}"
        for (group, versions), names in sorted(kinds.items())
    )


async def check_conversion_webhooks(ctx: Context) -> list[Finding]:
    """Every served CRD converted by a webhook (`spec.conversion.strategy: Webhook`) points at a server that
    answers: while it does not, the API server answers 500 to every request that must change an object's version
    (a get, list, watch, create or update in a served version other than the storage one), e.g. every v1alpha1
    request for AIMArtifact after a kill -9 of the controller (docs/aim-versions.md, "While no controller runs")."""
    name = "conversion-webhooks"
    converted = [crd for crd in await ctx.crds() if _converted_by_webhook(crd)]
    if not converted:
        return [Finding(name, PASS, "no CRD converts through a webhook: nothing to check")]
    by_config: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for crd in converted:
        client_config = ((crd["spec"]["conversion"].get("webhook") or {}).get("clientConfig")) or {}
        by_config[json.dumps(client_config, sort_keys=True)].append(crd)
    configs = sorted(by_config)
    probes = await asyncio.gather(*(probe_client_config(ctx, json.loads(c), CONVERSION_REVIEW) for c in configs))
    findings: list[Finding] = []
    now = ctx.time()
    for config, probe in zip(configs, probes, strict=True):
        crds = sorted(by_config[config], key=lambda crd: str(crd["metadata"]["name"]))
        names = ", ".join(crd["metadata"]["name"] for crd in crds)
        findings += _certificate_findings(name, f"the conversion webhook of {names}", probe, now)
        if probe.problem is None:
            continue
        problem = probe.problem
        if json.loads(config).get("url") == CONVERSION_PLACEHOLDER_URL:
            problem += " (deploy/crds' placeholder: no controller has taken this cluster yet)"
        affected, unaffected = _affected(crds, 0), _affected(crds, 1)
        if affected:
            message = (
                f"conversion webhook {problem}: reads and writes of {affected} fail with 500 until it answers again"
                + (f" ({unaffected} unaffected)" if unaffected else "")
            )
        else:
            message = f"conversion webhook of {names}: {problem}: no served version needs it now"
        where = "spec.conversion.webhook.clientConfig"
        if probe.by_service:
            fix = f"install the controller (deploy/), or set the {where} of {names} to a running one"
        else:
            fix = (
                "start `omectl run` with this cluster registered: the controller that takes the cluster points "
                f"{names} at its webhook (with --no-install-webhooks, set their {where} by hand: docs/aim-versions.md)"
            )
        findings.append(Finding(name, FAIL if affected else WARN, message, fix))
    if not any(f.check == name for f in findings):
        findings.append(
            Finding(name, PASS, f"the conversion webhook(s) of all {len(converted)} converted CRD(s) answer")
        )
    return findings


# --- permissions -----------------------------------------------------------------------------------------------


class Permission(NamedTuple):
    """One grant to check: a verb on a resource, on the object `name` only where the rule names its objects."""

    group: str
    resource: str
    verb: str
    name: str = ""

    def described(self) -> str:
        return (
            f"{self.verb} {self.resource}"
            + (f".{self.group}" if self.group else "")
            + (f" {self.name}" if self.name else "")
        )


def required_permissions(cluster_role: Path = MEMBER_CLUSTER_ROLE) -> list[Permission]:
    """Every grant of omectl's member ClusterRole: what the controller needs. A rule with `resourceNames` gives one
    grant per name: RBAC allows such a rule only for a request naming one of them, so an access review without the
    name is denied even where the controller's own requests are allowed."""
    documents = [d for d in yaml.safe_load_all(cluster_role.read_text()) if d and d.get("kind") == "ClusterRole"]
    found: list[Permission] = []
    for rule in (rule for document in documents for rule in document.get("rules") or []):
        for group in rule.get("apiGroups") or [""]:
            for resource in rule.get("resources") or []:
                for verb in rule.get("verbs") or []:
                    found.extend(Permission(group, resource, verb, name) for name in rule.get("resourceNames") or [""])
    return found


async def check_permissions(ctx: Context) -> list[Finding]:
    """The registered identity may do everything the controller does (a SelfSubjectAccessReview per grant)."""
    try:
        needed = required_permissions()
    except OSError as exc:
        return [
            Finding("permissions", WARN, f"omectl's member ClusterRole cannot be read ({exc.strerror}): not checked")
        ]

    async def allowed(permission: Permission) -> bool:
        plural, _, subresource = permission.resource.partition("/")
        attributes = {"group": permission.group, "resource": plural, "verb": permission.verb}
        if subresource:
            attributes["subresource"] = subresource
        if permission.name:
            attributes["name"] = permission.name
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes},
        }
        answer = await ctx.client.create(SELF_SUBJECT_ACCESS_REVIEWS, body)
        return bool((answer.get("status") or {}).get("allowed"))

    try:
        answers = await asyncio.gather(*(allowed(permission) for permission in needed))
    except NotFound:
        return [Finding("permissions", WARN, "the API server does not serve SelfSubjectAccessReview: not checked")]
    denied = [permission.described() for permission, ok in zip(needed, answers, strict=True) if not ok]
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
    crds = await ctx.crds()
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
    ("conversion-webhooks", check_conversion_webhooks),
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
