"""`omectl cluster`: register, list, remove and check the clusters in a registration directory; remove omectl's
webhook configuration from a member (`uninstall-webhooks`); show what the running controller and the members say
(`status`)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from omectl.cli.progress import gather_with_progress, progress
from omectl.cli.reports import OUTPUT_OPTION, Column, OutputFormat, emit, print_records, watch
from omectl.cli.selectors import SELECTOR_OPTION, LabelSelector, parse_selector
from omectl.cli.targets import CLUSTERS_DIR_OPTION
from omectl.fleet.providers import DirectoryProvider, clusters_dir_from_env, clusters_dir_to_read
from omectl.fleet.registration import (
    ClusterRegistration,
    RegistrationError,
    kubeconfig_content,
    load_registration_file,
    open_client,
    resolve_kubeconfig,
    server_of,
    to_yaml,
    validate_cluster_name,
)
from omectl.kube.errors import KubeConfigError, KubeConnectionError, KubeError

if TYPE_CHECKING:
    from omectl.cli.status import StatusReport

cluster_app = typer.Typer(no_args_is_help=True, help="Register, list, remove, check and clean fleet clusters.")

LEASE_NAMESPACE_OPTION = typer.Option(
    "omectl-system",
    "--lease-namespace",
    envvar="OMECTL_LEASE_NAMESPACE",
    help="Namespace of the ownership Lease in the member (the controller's lease_namespace).",
)
CLUSTER_KIND = "cluster"  # `-o name` prints cluster/NAME


def _fail(message: str, code: int = 1) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _parse_labels(pairs: list[str]) -> dict[str, str]:
    labels: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise _fail(f'invalid label "{pair}": expected KEY=VALUE')
        labels[key] = value
    return labels


def _registered_files(directory: Path) -> dict[str, Path]:
    """Which file registers each name (the first by file name), ignoring files that do not parse."""
    owners: dict[str, Path] = {}
    if not directory.is_dir():
        return owners
    for file in sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file()):
        try:
            reg = load_registration_file(file, fingerprint=False)
        except RegistrationError:
            continue
        if reg is not None:
            owners.setdefault(reg.name, file)
    return owners


def _write_private_or_public(target: Path, text: str, *, private: bool) -> None:
    """Write atomically; 0600 when the file embeds credentials."""
    target.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), 0o600 if private else 0o644)
            handle.write(text)
        os.replace(temp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
        raise


@cluster_app.command("add")
def add(
    name: str = typer.Argument(..., help="Cluster name (lowercase letters, digits and '-')."),
    kubeconfig: Path = typer.Option(..., "--kubeconfig", help="Kubeconfig file that reaches the cluster."),
    context: str | None = typer.Option(None, "--context", help="Context in the kubeconfig (default: current)."),
    label: list[str] = typer.Option([], "--label", help="Label KEY=VALUE for fleet selection; repeatable."),
    clusters_dir: Path | None = CLUSTERS_DIR_OPTION,
    inline: bool = typer.Option(False, "--inline", help="Embed the kubeconfig in the registration (mode 0600)."),
) -> None:
    """Register a cluster: validate its kubeconfig, then write DIR/NAME.yaml."""
    directory = clusters_dir_from_env(clusters_dir)
    problem = validate_cluster_name(name)
    if problem is not None:
        raise _fail(problem)
    labels = _parse_labels(label)
    existing = _registered_files(directory).get(name)
    target = directory / f"{name}.yaml"
    if existing is None and target.exists():
        existing = target
    if existing is not None:
        raise _fail(f'cluster "{name}" is already registered ({existing})')
    path = kubeconfig.expanduser().absolute()
    reg = ClusterRegistration(name=name, kubeconfig_path=path, context=context, labels=labels, source=str(target))
    try:
        if inline:
            content = kubeconfig_content(reg)
            reg = ClusterRegistration(
                name=name, kubeconfig_inline=content, context=context, labels=labels, source=str(target)
            )
        resolve_kubeconfig(reg)
    except RegistrationError as exc:
        raise _fail(str(exc)) from None
    _write_private_or_public(target, to_yaml(reg), private=inline)
    typer.echo(f'cluster "{name}" registered ({target})')


def _selected(
    registrations: dict[str, ClusterRegistration], selector: LabelSelector | None
) -> dict[str, ClusterRegistration]:
    """The registrations whose labels `-l` selects (all without one)."""
    if selector is None:
        return registrations
    return {name: reg for name, reg in registrations.items() if selector.matches(reg.labels)}


def _rows(directory: Path, selector: LabelSelector | None = None) -> tuple[list[dict[str, Any]], dict[str, str]]:
    registrations, errors = DirectoryProvider(directory).scan()
    registrations = _selected(registrations, selector)
    rows = []
    for name, reg in sorted(registrations.items()):
        try:
            config = resolve_kubeconfig(reg)
        except RegistrationError as exc:  # the kubeconfig changed since the scan
            errors[reg.source] = f"{reg.source}: {exc}"
            continue
        rows.append(
            {
                "name": name,
                "context": config["current-context"],
                "server": server_of(config),
                "labels": dict(reg.labels),
                "source": reg.source,
            }
        )
    return rows, errors


def _print_errors(errors: dict[str, str], output: OutputFormat) -> None:
    """The registration files that could not be used: below the table, or on stderr beside `-o name` lines."""
    if errors and output is OutputFormat.name:
        for source in sorted(errors):
            typer.echo(f"error: {errors[source]}", err=True)
    elif errors:
        typer.echo("")
        typer.echo("ERRORS")
        for source in sorted(errors):
            typer.echo(f"  {errors[source]}")


def _print_clusters(rows: list[dict[str, Any]], columns: list[Column[dict[str, Any]]], output: OutputFormat) -> None:
    print_records(rows, columns, output, kind=CLUSTER_KIND, name=lambda row: row["name"])


def _format_labels(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>"


LIST_COLUMNS: list[Column[dict[str, Any]]] = [
    Column("NAME", lambda r: r["name"]),
    Column("CONTEXT", lambda r: r["context"]),
    Column("SERVER", lambda r: r["server"]),
    Column("LABELS", lambda r: _format_labels(r["labels"])),
    Column("SOURCE", lambda r: r["source"]),
]


@cluster_app.command("list")
def list_clusters(
    clusters_dir: Path | None = CLUSTERS_DIR_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
    selector: str | None = SELECTOR_OPTION,
) -> None:
    """List the registered clusters, and the registration files that could not be used."""
    selected = parse_selector(selector)
    directory = clusters_dir_to_read(clusters_dir)
    rows, errors = _rows(directory, selected)
    if output.is_document:
        error_list = [{"source": source, "message": errors[source]} for source in sorted(errors)]
        emit({"clusters": rows, "errors": error_list}, output)
        return
    if not rows and not errors:
        if output is not OutputFormat.name:
            match = f" match {selected}" if selected is not None else ""
            typer.echo(f"no clusters registered in {directory}{match}")
        return
    _print_clusters(rows, LIST_COLUMNS, output)
    _print_errors(errors, output)


@cluster_app.command("remove")
def remove(
    name: str = typer.Argument(..., help="Name of the registered cluster."),
    clusters_dir: Path | None = CLUSTERS_DIR_OPTION,
    timeout: float = typer.Option(
        30.0, "--timeout", min=0, help="Seconds to wait for a running controller to remove its webhooks."
    ),
    lease_namespace: str = LEASE_NAMESPACE_OPTION,
) -> None:
    """Unregister a cluster: delete the file that registers it, and leave the member clean (no omectl webhook
    configuration, no ownership Lease). A controller running from this directory removes them itself; else they
    are removed here."""
    directory = clusters_dir_to_read(clusters_dir)
    file = _registered_files(directory).get(name)
    if file is None:
        raise _fail(f'cluster "{name}" is not registered in {directory}')
    try:
        reg = load_registration_file(file, fingerprint=False)
    except RegistrationError as exc:
        raise _fail(str(exc)) from None

    def unregister() -> None:
        file.unlink()
        typer.echo(f'cluster "{name}" removed ({file})')

    if reg is None:
        unregister()
        return
    code = asyncio.run(_clean_member(reg, directory, timeout, lease_namespace, unregister))
    if code:
        raise typer.Exit(code)


async def _clean_member(
    reg: ClusterRegistration, directory: Path, timeout: float, namespace: str, unregister: Callable[[], None]
) -> int:
    """Unregister the cluster (`unregister`), then remove its webhook configuration and Lease once the running
    controller (if any) let it go. Whether a live controller held it is read before the registration goes, so the
    report is true however fast that controller hands the cluster over."""
    from omectl.webhook.health import HeldByLiveController, held_by_live_controller, uninstall

    later = "if it has omectl's webhooks, remove them later: omectl cluster uninstall-webhooks --kubeconfig FILE"
    try:
        client = await open_client(reg, connect_timeout=5.0, request_timeout=5.0)
    except (RegistrationError, KubeError) as exc:  # nothing to reach it with: the registration is gone all the same
        unregister()
        typer.echo(f'warning: cluster "{reg.name}": not cleaned up ({_one_line(exc)}); {later}', err=True)
        return 0
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    try:
        try:
            waited = await held_by_live_controller(client, namespace=namespace)
        except KubeError:
            waited = False  # the loop below reports what is wrong with the cluster
        unregister()
        with progress(f'waiting for the controller to let cluster "{reg.name}" go'):
            while True:
                try:
                    deleted = await uninstall(client, reg.name, namespace=namespace)
                    break
                except HeldByLiveController as exc:
                    if loop.time() >= deadline:
                        typer.echo(
                            f'error: cluster "{reg.name}": {exc}; it still holds the cluster {timeout:g} s after the '
                            f"removal, so it does not read {directory}",
                            err=True,
                        )
                        return 1
                    waited = True
                    await asyncio.sleep(0.2)  # the controller sees the file gone on its next poll
    except KubeConnectionError as exc:
        typer.echo(f'warning: cluster "{reg.name}": not cleaned up ({_one_line(exc)}); {later}', err=True)
        return 0
    except KubeError as exc:
        typer.echo(f'error: cluster "{reg.name}": cannot clean it up ({_one_line(exc)}); {later}', err=True)
        return 1
    finally:
        await client.close()
    if deleted:
        typer.echo(f'cluster "{reg.name}": deleted {", ".join(deleted)}')
    elif waited:
        typer.echo(f'cluster "{reg.name}": its controller removed its webhook configuration and lease')
    return 0


@cluster_app.command("uninstall-webhooks")
def uninstall_webhooks(
    name: str | None = typer.Argument(None, help="A registered cluster (or name one with --kubeconfig)."),
    clusters_dir: Path | None = CLUSTERS_DIR_OPTION,
    kubeconfig: Path | None = typer.Option(None, "--kubeconfig", help="Reach a cluster that is not registered."),
    context: str | None = typer.Option(None, "--context", help="Context in --kubeconfig (default: current)."),
    lease_namespace: str = LEASE_NAMESPACE_OPTION,
) -> None:
    """Delete omectl's ValidatingWebhookConfiguration and ownership Lease from a cluster that no running omectl
    holds: after a controller was killed (kill -9) its webhooks, failurePolicy Fail, refuse every OME and AIM
    write there until a controller takes the cluster over or they are removed."""
    from omectl.kube.client import ClusterClient

    if (name is None) == (kubeconfig is None):
        typer.echo("error: name a registered cluster, or pass --kubeconfig (and --context) for another", err=True)
        raise typer.Exit(2)
    if name is not None:
        directory = clusters_dir_to_read(clusters_dir)
        registrations, errors = DirectoryProvider(directory).scan()
        if name not in registrations:
            owner = _registered_files(directory).get(name)
            raise _fail(
                errors[str(owner)]
                if owner is not None and str(owner) in errors
                else (f'cluster "{name}" is not registered in {directory}; for another cluster pass --kubeconfig')
            )
        reg = registrations[name]
        connect = open_client(reg, connect_timeout=5.0, request_timeout=5.0)
        label = name
    else:
        assert kubeconfig is not None
        label = context or str(kubeconfig)
        connect = ClusterClient.from_kubeconfig(
            kubeconfig, context=context, name=label, connect_timeout=5.0, request_timeout=5.0
        )
    asyncio.run(_uninstall(connect, label, lease_namespace))


async def _uninstall(connect: Any, label: str, namespace: str) -> None:
    from omectl.webhook.health import HeldByLiveController, uninstall

    try:
        client = await connect
    except KubeConfigError as exc:  # the message names the kubeconfig: "cluster <label>: " would say it twice
        raise _fail(_one_line(exc).removeprefix(f"cluster {label}: ")) from None
    except (RegistrationError, KubeError) as exc:
        raise _fail(_one_line(exc)) from None
    try:
        deleted = await uninstall(client, label, namespace=namespace)
    except HeldByLiveController as exc:
        raise _fail(str(exc)) from None
    except KubeError as exc:
        raise _fail(_one_line(exc)) from None
    finally:
        await client.close()
    typer.echo(f'cluster "{label}": ' + (f"deleted {', '.join(deleted)}" if deleted else "nothing to remove"))


async def _probe(reg: ClusterRegistration, timeout: float) -> tuple[bool, str]:
    """GET /version on one cluster: (reachable, gitVersion or the error as one line)."""
    try:
        client = await open_client(reg, connect_timeout=timeout, request_timeout=timeout)
    except (RegistrationError, KubeError) as exc:
        return False, _one_line(exc)
    try:
        # The outer deadline also covers an exec credential plugin that hangs.
        body = await asyncio.wait_for(client.request("GET", "/version", timeout=timeout), timeout + 1)
    except TimeoutError:
        return False, f"no answer within {timeout:g}s"
    except Exception as exc:  # any failure of one cluster is a report line, never a crash
        return False, _one_line(exc)
    finally:
        await client.close()
    return True, str(body.get("gitVersion", ""))


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


async def _probe_all(regs: list[ClusterRegistration], timeout: float) -> list[tuple[bool, str]]:
    return await gather_with_progress("connecting to the clusters", [_probe(reg, timeout) for reg in regs])


CHECK_COLUMNS: list[Column[dict[str, Any]]] = [
    Column("NAME", lambda r: r["name"]),
    Column("SERVER", lambda r: r["server"]),
    Column("STATUS", lambda r: "reachable" if r["reachable"] else "unreachable"),
    Column("DETAIL", lambda r: r["version"] if r["reachable"] else r["error"]),
]


@cluster_app.command("check")
def check(
    name: str | None = typer.Argument(None, help="Check only this cluster."),
    clusters_dir: Path | None = CLUSTERS_DIR_OPTION,
    timeout: float = typer.Option(5.0, "--timeout", min=0.1, help="Seconds to wait for each cluster."),
    output: OutputFormat = OUTPUT_OPTION,
    selector: str | None = SELECTOR_OPTION,
) -> None:
    """Connect to each registered cluster (GET /version); exit 0 if all are reachable, else 2."""
    selected = parse_selector(selector)
    directory = clusters_dir_to_read(clusters_dir)
    registrations, errors = DirectoryProvider(directory).scan()
    if name is not None:
        if name not in registrations:
            owner = _registered_files(directory).get(name)
            if owner is not None and str(owner) in errors:
                raise _fail(errors[str(owner)])
            raise _fail(f'cluster "{name}" is not registered in {directory}')
        registrations = {name: registrations[name]}
        errors = {}
    regs = [reg for _, reg in sorted(_selected(registrations, selected).items())]
    results = asyncio.run(_probe_all(regs, timeout))
    rows: list[dict[str, Any]] = []
    for reg, (reachable, detail) in zip(regs, results, strict=True):
        row: dict[str, Any] = {"name": reg.name, "server": _server_or_blank(reg), "reachable": reachable}
        row["version" if reachable else "error"] = detail
        rows.append(row)
    if output.is_document:
        error_list = [{"source": source, "message": errors[source]} for source in sorted(errors)]
        emit({"clusters": rows, "errors": error_list}, output)
    else:
        _print_clusters(rows, CHECK_COLUMNS, output)
        _print_errors(errors, output)
    if errors or not all(reachable for reachable, _ in results):
        raise typer.Exit(2)


def _server_or_blank(reg: ClusterRegistration) -> str:
    try:
        return server_of(resolve_kubeconfig(reg))
    except RegistrationError:
        return ""


DEFAULT_STATUS_FILE = Path(".omectl/controller-status.json")


@cluster_app.command("status")
def status(
    status_file: Path = typer.Option(
        DEFAULT_STATUS_FILE, "--status-file", help="The file a running `omectl run` keeps up to date."
    ),
    output: OutputFormat = OUTPUT_OPTION,
    clusters_dir: Path | None = CLUSTERS_DIR_OPTION,
    timeout: float = typer.Option(3.0, "--timeout", min=0.1, help="Seconds to wait for each cluster's checks."),
    lease_namespace: str = LEASE_NAMESPACE_OPTION,
    watching: bool = typer.Option(False, "--watch", "-w", help="Refresh every --interval seconds until Ctrl-C."),
    interval: float = typer.Option(2.0, "--interval", min=0.1, help="Seconds between refreshes with --watch."),
    selector: str | None = SELECTOR_OPTION,
) -> None:
    """Every registered cluster as the running controller reports it (asked at the /status address its status file
    records): state, reconciles, errors and the last one; and, from each member, who owns it and whether its
    webhooks answer (with the fix when they do not). Exits 1 when no controller is running."""
    selected = parse_selector(selector)
    directory = clusters_dir_to_read(clusters_dir)
    if not watching:
        report = _status_report(status_file, directory, timeout, lease_namespace, selected)
        typer.echo(report.render(output))
        if not report.controller.running:
            raise _fail(report.controller.failure(status_file))
        return
    watch(
        lambda: _status_report(status_file, directory, timeout, lease_namespace, selected).render(output),
        interval,
        clear=output in (OutputFormat.table, OutputFormat.wide),
    )


def _status_report(
    status_file: Path, directory: Path, timeout: float, lease_namespace: str, selector: LabelSelector | None = None
) -> StatusReport:
    """What the controller says (or that it is not running) and what the members say, for every registered cluster
    (those `-l` selects: then the controller's other clusters are left out too)."""
    from omectl.cli.status import StatusFileError, StatusReport, controller_view

    try:  # a bad status file is an error before any member is asked
        controller = controller_view(status_file, timeout)
    except StatusFileError as exc:
        raise _fail(str(exc)) from None
    registrations, registry_errors = DirectoryProvider(directory).scan()
    registrations = _selected(registrations, selector)
    members = asyncio.run(_check_members(registrations, timeout, lease_namespace))
    only = None if selector is None else set(registrations)
    return StatusReport(controller, sorted(registrations), registry_errors, members, only=only)


async def _check_members(registrations: dict[str, ClusterRegistration], timeout: float, namespace: str) -> list[Any]:
    """`check_member` on every registered cluster, at once (omectl.webhook.health)."""
    from omectl.webhook.health import MemberCheck, check_member

    async def one(reg: ClusterRegistration) -> MemberCheck:
        try:
            client = await open_client(reg, connect_timeout=timeout, request_timeout=timeout)
        except (RegistrationError, KubeError) as exc:
            return MemberCheck(reg.name, problem=f"cannot reach it: {_one_line(exc)}")
        try:
            return await check_member(client, reg.name, namespace=namespace, timeout=timeout)
        finally:
            await client.close()

    return await gather_with_progress("checking the members", [one(registrations[n]) for n in sorted(registrations)])
