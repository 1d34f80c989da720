"""Cluster registrations: the `ClusterRegistration` file format, its validation, and kubeconfig resolution.

A registration names a cluster and points at a kubeconfig (a file path or inline YAML) and optionally a
context. Every error is one line naming the file (or Secret) it came from, so an operator can fix it at once.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from omectl.observability.redact import register_kubeconfig_secrets, without_userinfo
from omectl.problems import read_problem, yaml_problem

if TYPE_CHECKING:
    from omectl.kube.client import ClusterClient

__all__ = [
    "API_VERSION",
    "KIND",
    "ClusterRegistration",
    "RegistrationError",
    "kubeconfig_content",
    "kubeconfig_fingerprint",
    "kubeconfig_label",
    "load_registration_file",
    "open_client",
    "parse_registration",
    "registration_from_document",
    "resolve_kubeconfig",
    "server_of",
    "to_yaml",
    "validate_cluster_name",
]

API_VERSION = "omectl.io/v1alpha1"
KIND = "ClusterRegistration"

# A cluster name becomes a file name, a label value and a span attribute: keep it a DNS-1123 label.
_NAME_PATTERN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_NAME_MAX = 63


class RegistrationError(ValueError):
    """A registration or its kubeconfig is unusable; `str(exc)` is the one-line message for the operator."""


@dataclass(frozen=True)
class ClusterRegistration:
    """One registered cluster: how to reach it and what it is labelled with.

    A plain dataclass, not a pydantic model: `omectl cluster list` reads registrations and must not import pydantic
    to do it (issue 19 §5); every field is checked where a registration is read (`registration_from_document`).
    """

    name: str
    kubeconfig_path: Path | None = None
    kubeconfig_inline: str | None = None
    context: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    source: str = ""
    """Where the registration came from (a file path, or `secret NAMESPACE/NAME`), for messages."""
    fingerprint: str = ""
    """SHA-256 over the kubeconfig content and the context: changes when credentials are rotated in place."""

    def __post_init__(self) -> None:
        if (self.kubeconfig_path is None) == (self.kubeconfig_inline is None):
            raise ValueError("exactly one of kubeconfig_path or kubeconfig_inline is required")


def validate_cluster_name(name: str) -> str | None:
    """The problem with a cluster name, or None when it is valid."""
    if not name:
        return "a cluster name must not be empty"
    if len(name) > _NAME_MAX or not _NAME_PATTERN.match(name):
        return (
            f'invalid cluster name "{name}": use lowercase letters, digits and "-", '
            f"starting and ending with a letter or digit (at most {_NAME_MAX} characters)"
        )
    return None


def kubeconfig_fingerprint(content: str, context: str | None) -> str:
    """The fingerprint of a kubeconfig's content as used with `context`."""
    digest = hashlib.sha256()
    digest.update(content.encode("utf-8"))
    digest.update(b"\0")
    digest.update((context or "").encode("utf-8"))
    return digest.hexdigest()


def kubeconfig_label(reg: ClusterRegistration) -> str:
    """How messages name a registration's kubeconfig: its path, or the inline kubeconfig of its source."""
    if reg.kubeconfig_path is not None:
        return str(reg.kubeconfig_path)
    return f"the inline kubeconfig of {reg.source or reg.name}"


def kubeconfig_content(reg: ClusterRegistration) -> str:
    """The kubeconfig text of a registration (reads the file for a path registration)."""
    if reg.kubeconfig_inline is not None:
        return reg.kubeconfig_inline
    assert reg.kubeconfig_path is not None
    path = reg.kubeconfig_path
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RegistrationError(f"kubeconfig file not found: {path}") from None
    except IsADirectoryError:
        raise RegistrationError(f"kubeconfig path is a directory, not a file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RegistrationError(f"cannot read kubeconfig file {path}: {read_problem(exc)}") from None


def _string_labels(raw: Any, where: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise RegistrationError(f"{where}: metadata.labels must be a mapping of strings to strings")
    labels: dict[str, str] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or isinstance(value, dict | list) or value is None:
            raise RegistrationError(f"{where}: metadata.labels must be a mapping of strings to strings")
        labels[key] = str(value).lower() if isinstance(value, bool) else str(value)
    return labels


def registration_from_document(
    doc: dict[str, Any], *, source: str, base_dir: Path | None, fingerprint: bool = True
) -> ClusterRegistration:
    """A `ClusterRegistration` document as a registration; `source` names it in messages.

    With `fingerprint` (the default) the kubeconfig is read, so a missing kubeconfig file is an error here.
    """
    if doc.get("apiVersion") != API_VERSION:
        raise RegistrationError(
            f'{source}: unsupported apiVersion "{doc.get("apiVersion")}" for {KIND} (expected {API_VERSION})'
        )
    metadata = doc.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise RegistrationError(f"{source}: metadata.name is required")
    problem = validate_cluster_name(name)
    if problem is not None:
        raise RegistrationError(f"{source}: {problem}")
    labels = _string_labels(metadata.get("labels"), source)
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        raise RegistrationError(f"{source}: spec.kubeconfig is required (with path or inline)")
    kubeconfig = spec.get("kubeconfig")
    if not isinstance(kubeconfig, dict):
        raise RegistrationError(f"{source}: spec.kubeconfig is required (with path or inline)")
    raw_path = kubeconfig.get("path")
    raw_inline = kubeconfig.get("inline")
    if (raw_path is None) == (raw_inline is None):
        raise RegistrationError(f"{source}: spec.kubeconfig needs exactly one of path or inline")
    context = spec.get("context")
    if context is not None and (not isinstance(context, str) or not context):
        raise RegistrationError(f"{source}: spec.context must be a non-empty string")
    path: Path | None = None
    inline: str | None = None
    if raw_path is not None:
        if not isinstance(raw_path, str) or not raw_path:
            raise RegistrationError(f"{source}: spec.kubeconfig.path must be a non-empty string")
        path = Path(raw_path).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
    elif isinstance(raw_inline, dict):
        inline = yaml.safe_dump(raw_inline, sort_keys=False)
    elif isinstance(raw_inline, str) and raw_inline.strip():
        inline = raw_inline
    else:
        raise RegistrationError(f"{source}: spec.kubeconfig.inline must be kubeconfig YAML (a string or a mapping)")
    reg = ClusterRegistration(
        name=name, kubeconfig_path=path, kubeconfig_inline=inline, context=context, labels=labels, source=source
    )
    if not fingerprint:
        return reg
    return replace(reg, fingerprint=kubeconfig_fingerprint(kubeconfig_content(reg), context))


def parse_registration(
    text: str, *, source: str, base_dir: Path | None = None, fingerprint: bool = True
) -> ClusterRegistration | None:
    """The registration in a YAML text, None when it holds no `ClusterRegistration` (a kind config, say)."""
    try:
        documents = [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    except yaml.YAMLError as exc:
        raise RegistrationError(f"{source}: invalid YAML: {yaml_problem(exc)}") from None
    registrations = [d for d in documents if d.get("kind") == KIND]
    if not registrations:
        return None
    if len(registrations) > 1:
        raise RegistrationError(f"{source}: holds {len(registrations)} {KIND} documents; use one file per cluster")
    return registration_from_document(registrations[0], source=source, base_dir=base_dir, fingerprint=fingerprint)


def load_registration_file(path: Path | str, *, fingerprint: bool = True) -> ClusterRegistration | None:
    """Load one registration file; None for YAML that is not a `ClusterRegistration`.

    A relative `spec.kubeconfig.path` resolves against the registration file's directory. Without
    `fingerprint` the kubeconfig is not read (enough to learn which cluster a file registers).
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RegistrationError(f"registration file not found: {file}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RegistrationError(f"cannot read registration file {file}: {read_problem(exc)}") from None
    return parse_registration(text, source=str(file), base_dir=file.parent, fingerprint=fingerprint)


def _named(entries: Any, kind: str, where: str) -> dict[str, dict[str, Any]]:
    if entries is None:
        return {}
    if not isinstance(entries, list):
        raise RegistrationError(f"cannot parse kubeconfig {where}: {kind} must be a list")
    named: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            named.setdefault(entry["name"], entry)
    return named


_LIBYAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """One YAML document, parsed by libyaml where the wheel has it (a fleet kubeconfig is parsed once per cluster
    added, on the event loop: 20 ms each in pure Python); a text libyaml refuses is parsed again by the pure parser,
    so that the error names the problem in its words."""
    try:
        return yaml.load(text, Loader=_LIBYAML_LOADER)
    except yaml.YAMLError:
        return yaml.safe_load(text)


def resolve_kubeconfig(reg: ClusterRegistration) -> dict[str, Any]:
    """The registration's kubeconfig as a dict, its `current-context` set to the context in use.

    Checks that the kubeconfig parses, that the context exists, and that its cluster has a server URL.
    """
    where = kubeconfig_label(reg)
    content = kubeconfig_content(reg)
    try:
        config = load_yaml(content)
    except yaml.YAMLError as exc:
        raise RegistrationError(f"cannot parse kubeconfig {where}: {yaml_problem(exc)}") from None
    if not isinstance(config, dict):
        raise RegistrationError(f"cannot parse kubeconfig {where}: not a kubeconfig (expected a mapping)")
    register_kubeconfig_secrets(config)  # its credentials never reach a log line, an event or a span
    contexts = _named(config.get("contexts"), "contexts", where)
    clusters = _named(config.get("clusters"), "clusters", where)
    if not contexts:
        raise RegistrationError(f"kubeconfig {where} has no contexts")
    context = reg.context or config.get("current-context") or None
    if context is None:
        raise RegistrationError(
            f"kubeconfig {where} has no current-context; name one of its contexts: {', '.join(contexts)}"
        )
    if context not in contexts:
        raise RegistrationError(f'unknown context "{context}" in {where}; contexts: {", ".join(contexts)}')
    cluster_name = (contexts[context].get("context") or {}).get("cluster")
    if not isinstance(cluster_name, str) or cluster_name not in clusters:
        raise RegistrationError(f'context "{context}" in {where} refers to unknown cluster "{cluster_name}"')
    server = (clusters[cluster_name].get("cluster") or {}).get("server")
    if not isinstance(server, str) or not server:
        raise RegistrationError(f'cluster "{cluster_name}" in {where} has no server URL')
    return {**config, "current-context": context}


def server_of(config: dict[str, Any]) -> str:
    """The server URL of a kubeconfig returned by `resolve_kubeconfig` (its current context's cluster)."""
    context = next(c for c in config["contexts"] if c.get("name") == config["current-context"])
    cluster_name = context["context"]["cluster"]
    cluster = next(c for c in config["clusters"] if c.get("name") == cluster_name)
    return without_userinfo(str(cluster["cluster"]["server"]))


async def open_client(
    reg: ClusterRegistration, *, connect_timeout: float = 10.0, request_timeout: float = 30.0
) -> ClusterClient:
    """A client for the registered cluster (validates the kubeconfig first; raises `RegistrationError`).

    A path registration is loaded from its file, so the client sees exactly what kubectl would.
    """
    from omectl.kube.client import ClusterClient

    config = resolve_kubeconfig(reg)
    return await ClusterClient.from_kubeconfig(
        reg.kubeconfig_path,
        config_dict=config if reg.kubeconfig_path is None else None,
        context=config["current-context"],
        name=reg.name,
        connect_timeout=connect_timeout,
        request_timeout=request_timeout,
    )


def to_yaml(reg: ClusterRegistration) -> str:
    """The registration as a `ClusterRegistration` file."""
    metadata: dict[str, Any] = {"name": reg.name}
    if reg.labels:
        metadata["labels"] = dict(reg.labels)
    kubeconfig: dict[str, str] = (
        {"path": str(reg.kubeconfig_path)}
        if reg.kubeconfig_path is not None
        else {"inline": reg.kubeconfig_inline or ""}
    )
    spec: dict[str, Any] = {"kubeconfig": kubeconfig}
    if reg.context:
        spec["context"] = reg.context
    document = {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": spec}
    return yaml.dump(document, Dumper=_BlockStringDumper, sort_keys=False, default_flow_style=False)


class _BlockStringDumper(yaml.SafeDumper):
    """Writes multi-line strings (an inline kubeconfig) as `|` blocks, so the file stays readable."""


def _represent_string(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockStringDumper.add_representer(str, _represent_string)
