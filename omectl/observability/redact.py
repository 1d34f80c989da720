"""Keeping secrets out of logs, events, spans and CLI output.

Three tools, from the most to the least precise:

- `redact_object` / `redact_env`: a copy of a JSON-like object (a runtime spec, a rendered workload, a kubeconfig)
  in which the value of every secret-looking env variable (name containing TOKEN, KEY, SECRET, PASSWORD, PASSWD or
  CREDENTIAL) and of every credential field (`token`, `password`, `client-key-data`, ...) is `<redacted>`. An env
  variable from `valueFrom.secretKeyRef` holds no value in the object; its reference (Secret name and key) is kept.
- `register_secret` / `register_kubeconfig_secrets`: values known to be secret (a kubeconfig's bearer token,
  password, client key, auth-provider tokens, exec env secrets) are remembered process-wide, so `scrub` removes
  them from any text, whatever the text is (an error message that quotes a kubeconfig, say).
- `scrub`: a text with the known secrets replaced and with the usual shapes of a secret masked: `Bearer <token>`,
  `Authorization: ...`, `token: ...`/`password=...`, `HF_TOKEN=...`, and env entries as JSON, Python or YAML
  (`{"name": "HF_TOKEN", "value": "..."}`).

This module imports nothing else of omectl: every layer may use it.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "REDACTED",
    "SecretRegistry",
    "is_secret_name",
    "known_secrets",
    "kubeconfig_secrets",
    "redact_env",
    "redact_object",
    "register_kubeconfig_secrets",
    "register_secret",
    "scrub",
]

REDACTED = "<redacted>"

_SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
# Fields whose string value is a credential wherever they appear (kubeconfig users, auth-provider configs).
_CREDENTIAL_FIELDS = frozenset(
    {
        "token",
        "password",
        "client-key-data",
        "id-token",
        "refresh-token",
        "access-token",
        "client-secret",
        "apiKey",
        "api-key",
        "api_key",
        "secret",
        "BearerToken",
        "authorization",
        "Authorization",
    }
)
# Fields that name a secret or the key inside one, or a file holding one: references, not secrets.
_REFERENCE_FIELDS = frozenset(
    {
        "key",
        "name",
        "secretName",
        "secretKeyRef",
        "secretRef",
        "keyRef",
        "tokenFile",
        "token-file",
        "tokenPath",
        "client-key",
        "keyFile",
        "key_file",
        "cert_file",
        "kind",
    }
)
_MIN_SECRET_LENGTH = 4  # shorter values would mask ordinary words


def without_userinfo(url: str) -> str:
    """`url` with any `user:password@` taken out of its authority: for URLs shown or stored (a kubeconfig's
    server may carry credentials)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, path = rest.partition("/")
    if "@" not in authority:
        return url
    return f"{scheme}://{authority.rsplit('@', 1)[1]}{slash}{path}"


def is_secret_name(name: str) -> bool:
    """Whether an env variable (or field) called `name` holds a secret by its name: *TOKEN*, *KEY*, *SECRET*, ..."""
    return bool(_SECRET_NAME.search(name))


# --- structured redaction ----------------------------------------------------------------------------------------


def redact_env(env: Iterable[Any]) -> list[Any]:
    """A copy of an env list with the `value` of every secret-looking variable redacted (references kept)."""
    out: list[Any] = []
    for item in env:
        if isinstance(item, Mapping):
            name = item.get("name")
            copied = {key: redact_object(value) for key, value in item.items() if key != "value"}
            if "value" in item:
                secret = isinstance(name, str) and is_secret_name(name) and item["value"] not in (None, "")
                copied["value"] = REDACTED if secret else redact_object(item["value"])
            out.append(copied)
        else:
            out.append(redact_object(item))
    return out


def redact_object(value: Any) -> Any:
    """A copy of a JSON-like value with secret env values, credential fields and secret-looking text redacted."""
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for key, child in value.items():
            if key == "env" and isinstance(child, list | tuple):
                out[key] = redact_env(child)
            elif key == "env" and isinstance(child, Mapping):  # env as a map of name -> value
                out[key] = {
                    name: REDACTED if isinstance(name, str) and is_secret_name(name) and item else redact_object(item)
                    for name, item in child.items()
                }
            elif isinstance(key, str) and isinstance(child, str) and child and _is_credential_field(key):
                out[key] = REDACTED
            else:
                out[key] = redact_object(child)
        return out
    if isinstance(value, list | tuple):
        return [redact_object(child) for child in value]
    if isinstance(value, str):
        return scrub(value)
    return value


def _is_credential_field(key: str) -> bool:
    if key in _CREDENTIAL_FIELDS:
        return True
    return key not in _REFERENCE_FIELDS and is_secret_name(key) and not key.endswith(("Ref", "Name", "File", "Path"))


# --- known secrets -----------------------------------------------------------------------------------------------


class SecretRegistry:
    """Secret values seen by the process (bounded, newest kept); `scrub` replaces them in any text."""

    def __init__(self, max_values: int = 4096) -> None:
        self.max_values = max_values
        self._values: OrderedDict[str, None] = OrderedDict()
        self._pattern: re.Pattern[str] | None = None
        self._lock = threading.Lock()  # spans are exported and logs written from other threads too

    def add(self, value: Any) -> None:
        if not isinstance(value, str):
            return
        value = value.strip()
        if value.lower().startswith(("bearer ", "basic ")):
            value = value.split(None, 1)[1].strip()
        if len(value) < _MIN_SECRET_LENGTH:
            return
        with self._lock:
            if value in self._values:
                self._values.move_to_end(value)
                return
            self._values[value] = None
            while len(self._values) > self.max_values:
                self._values.popitem(last=False)
            self._pattern = None

    def __contains__(self, value: object) -> bool:
        return value in self._values

    def __len__(self) -> int:
        return len(self._values)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._pattern = None

    def scrub(self, text: str) -> str:
        if not self._values:
            return text
        pattern = self._pattern
        if pattern is None:
            with self._lock:
                # longest first, so a secret containing another is replaced whole
                values = sorted(self._values, key=len, reverse=True)
                pattern = self._pattern = re.compile("|".join(re.escape(v) for v in values))
        return pattern.sub(REDACTED, text)


_KNOWN = SecretRegistry()


def known_secrets() -> SecretRegistry:
    """The process-wide registry `scrub` uses."""
    return _KNOWN


def register_secret(value: Any) -> None:
    """Remember `value` as a secret: from now on `scrub` replaces it wherever it appears."""
    _KNOWN.add(value)


def kubeconfig_secrets(config: Any) -> list[str]:
    """The credentials in a kubeconfig (as a dict): tokens, passwords, client keys, auth-provider and exec secrets."""
    found: list[str] = []
    if not isinstance(config, Mapping):
        return found
    for entry in config.get("users") or []:
        user = entry.get("user") if isinstance(entry, Mapping) else None
        if not isinstance(user, Mapping):
            continue
        for field in ("token", "password", "client-key-data"):
            if isinstance(user.get(field), str):
                found.append(user[field])
        provider = user.get("auth-provider")
        if isinstance(provider, Mapping) and isinstance(provider.get("config"), Mapping):
            found.extend(
                v for k, v in provider["config"].items() if isinstance(v, str) and _is_credential_field(str(k))
            )
        exec_config = user.get("exec")
        if isinstance(exec_config, Mapping):
            for item in exec_config.get("env") or []:
                if isinstance(item, Mapping) and is_secret_name(str(item.get("name", ""))):
                    found.append(str(item.get("value") or ""))
    return [value for value in found if value]


def register_kubeconfig_secrets(config: Any) -> None:
    """Remember every credential of a kubeconfig (dict) as a secret."""
    for value in kubeconfig_secrets(config):
        _KNOWN.add(value)


# --- text --------------------------------------------------------------------------------------------------------

_QUOTED = r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'"
_TEXT_RULES: list[tuple[re.Pattern[str], Any]] = [
    # HTTP credentials
    (re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=:-]+", re.IGNORECASE), lambda m: f"{m.group(1)} {REDACTED}"),
    # an env entry as JSON or a Python repr: {"name": "HF_TOKEN", "value": "..."}
    (
        re.compile(rf"([\"']name[\"']\s*:\s*[\"']([^\"']*)[\"']\s*,\s*[\"']value[\"']\s*:\s*)({_QUOTED})"),
        lambda m: m.group(1) + _quote_like(m.group(3)) if is_secret_name(m.group(2)) else m.group(0),
    ),
    # an env entry as YAML: name: HF_TOKEN <newline> value: ...
    (
        re.compile(r"(\bname:\s*[\"']?([A-Za-z0-9_.-]+)[\"']?\s*\n\s*value:[ \t]*)(\S[^\n]*)"),
        lambda m: m.group(1) + REDACTED if is_secret_name(m.group(2)) else m.group(0),
    ),
    # credential fields: token: x, "password": "x", client-key-data=x, Authorization: x; not the end of a path
    # (`/etc/passwd: not a kubeconfig` is no credential)
    (
        re.compile(
            r"([\"']?\b(?<![/\\])(?:token|password|passwd|client-key-data|client-secret|id-token|refresh-token|access-token|"
            rf"authorization|api[-_]?key)[\"']?\s*[:=]\s*)({_QUOTED}|[^\s,;}}\]]+)",
            re.IGNORECASE,
        ),
        lambda m: m.group(1) + _quote_like(m.group(2)),
    ),
    # NAME=value where NAME looks secret (HF_TOKEN=..., --api-key=...)
    (
        re.compile(
            rf"((?<![\w-])-{{0,2}}[\w-]*(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL)[\w-]*=)({_QUOTED}|[^\s,;&\"'}}\]]+)",
            re.IGNORECASE,
        ),
        lambda m: m.group(1) + _quote_like(m.group(2)),
    ),
]


def _quote_like(original: str) -> str:
    if len(original) >= 2 and original[0] == original[-1] and original[0] in "\"'":
        return f"{original[0]}{REDACTED}{original[0]}"
    return REDACTED


def scrub(text: str) -> str:
    """`text` with every known secret and every secret-shaped value replaced by `<redacted>`."""
    if not text:
        return text
    text = _KNOWN.scrub(text)
    for pattern, replace in _TEXT_RULES:
        text = pattern.sub(replace, text)
    return text
