"""`omectl doctor [--cluster NAME | --all-clusters]`: is each member cluster fit for omectl, and if not, how to fix it.

Checks (`omectl.doctor.checks`): the CRDs at the versions this release needs (and the runtime CRDs with their
status subresource), every validating webhook answering (a `failurePolicy: Fail` one that does not is a FAIL naming
it), every CRD converted by a webhook (`conversion.strategy: Webhook`, the AIM kinds served at v1alpha1 and v1alpha2)
pointing at a server that answers (one that does not is a FAIL naming the kinds and versions whose reads and writes
fail with 500), webhook certificates' expiry, the registered identity's permissions (a SelfSubjectAccessReview per
grant of the member ClusterRole), broken chains and drifted InferenceServices per namespace, and the AIM operator
namespace.
Exit 0 when nothing FAILs (with `--strict`, nothing WARNs either), 1 otherwise.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import typer

from omectl.cli.errors import CommandError
from omectl.cli.progress import gather_with_progress
from omectl.cli.reports import OUTPUT_OPTION, Column, OutputFormat, emit, print_records, refuse_name
from omectl.cli.runtime import (
    ClusterTarget,
    _fail,
    _registered_target,
    _registrations,
    _single_target,
)
from omectl.cli.targets import (
    ALL_CLUSTERS_OPTION,
    CLUSTER_OPTION,
    CLUSTERS_DIR_OPTION,
    CONTEXT_OPTION,
    KUBECONFIG_OPTION,
    TIMEOUT_OPTION,
)
from omectl.doctor.checks import FAIL, PASS, WARN, Context, Finding, run_checks
from omectl.kube.client import ClusterClient

__all__ = ["doctor"]


async def _diagnose(
    target: ClusterTarget, aim_namespace: str, lease_namespace: str, *, registered: bool
) -> tuple[str, list[Finding]]:
    try:
        client: ClusterClient = await target.connect()
    except CommandError as exc:
        if not registered:  # --kubeconfig names a file that is no kubeconfig: bad input, not a finding
            raise
        return target.name, [Finding("connect", FAIL, exc.message, "check the registration's kubeconfig")]
    try:
        context = Context(client, aim_namespace=aim_namespace, lease_namespace=lease_namespace)
        return client.name, await run_checks(context)
    finally:
        await client.close()


def doctor(
    kubeconfig: Path | None = KUBECONFIG_OPTION,
    context: str | None = CONTEXT_OPTION,
    cluster: str | None = CLUSTER_OPTION,
    all_clusters: bool = ALL_CLUSTERS_OPTION,
    clusters_dir: Path | None = CLUSTERS_DIR_OPTION,
    strict: bool = typer.Option(False, "--strict", help="Exit 1 on a WARN too."),
    lease_namespace: str = typer.Option(
        "omectl-system", "--lease-namespace", envvar="OMECTL_LEASE_NAMESPACE", help="Namespace of the ownership Lease."
    ),
    output: OutputFormat = OUTPUT_OPTION,
    timeout: float = TIMEOUT_OPTION,
) -> None:
    """Check each cluster for what omectl needs: CRDs, webhooks (admission, conversion), certificates, permissions,
    chains."""
    refuse_name(output, "a check's finding")
    try:
        if all_clusters:
            if cluster is not None or kubeconfig is not None or context is not None:
                raise CommandError(
                    "--all-clusters reads every registered cluster: drop --cluster, --kubeconfig, --context"
                )
            directory, registrations, errors = _registrations(clusters_dir)
            if errors:
                raise CommandError("; ".join(f"{source}: {message}" for source, message in sorted(errors.items())))
            if not registrations:
                raise CommandError(f"no clusters registered in {directory}")
            targets = [_registered_target(registrations[name], timeout) for name in sorted(registrations)]
        else:
            targets = [_single_target(kubeconfig, context, cluster, clusters_dir, timeout)]
    except CommandError as exc:
        _fail(exc)
    from omectl.settings import Settings, SettingsError

    try:
        aim_namespace = Settings.load().aim_system_namespace  # AIM_SYSTEM_NAMESPACE, as `omectl run` reads it
    except SettingsError as exc:
        _fail(CommandError(str(exc)))

    async def everything() -> list[tuple[str, list[Finding]]]:
        registered = all_clusters or cluster is not None
        diagnoses = [_diagnose(t, aim_namespace, lease_namespace, registered=registered) for t in targets]
        return await gather_with_progress("checking the clusters", diagnoses)

    results = asyncio.run(everything())
    if output.is_document:
        document: dict[str, Any] = {
            "clusters": [{"cluster": name, "findings": [f.document() for f in findings]} for name, findings in results]
        }
        emit(document, output)
    else:
        _print_findings(results, output)
    failing = {FAIL, WARN} if strict else {FAIL}
    if any(f.status in failing for _, findings in results for f in findings):
        raise typer.Exit(1)


FINDING_COLUMNS: list[Column[tuple[str, Finding]]] = [
    Column("CLUSTER", lambda row: row[0]),
    Column("CHECK", lambda row: row[1].check),
    Column("STATUS", lambda row: row[1].status),
    Column("MESSAGE", lambda row: row[1].message),
    Column("FIX", lambda row: row[1].fix or "-", wide=True),
]


def _print_findings(results: list[tuple[str, list[Finding]]], output: OutputFormat) -> None:
    print_records([(name, f) for name, findings in results for f in findings], FINDING_COLUMNS, output)
    fixes = [(name, f) for name, findings in results for f in findings if f.status != PASS and f.fix]
    if fixes:
        typer.echo("\nTo fix:")
        for name, finding in fixes:
            typer.echo(f"  {name} {finding.check}: {finding.fix}")
    counts = {status: sum(f.status == status for _, fs in results for f in fs) for status in (PASS, WARN, FAIL)}
    typer.echo(f"\n{counts[PASS]} passed, {counts[WARN]} warnings, {counts[FAIL]} failed")
