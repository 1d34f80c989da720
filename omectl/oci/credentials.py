"""Registry credentials from a model's imagePullSecrets: Secrets of type `kubernetes.io/dockerconfigjson` (or the
older `kubernetes.io/dockercfg`), their `auths` keyed by registry host (with or without scheme and path; Docker Hub
under any of its names), each entry's `auth` (base64 `user:password`) or `username` and `password`."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from omectl.oci.reference import DOCKER_HUB, DOCKER_HUB_ALIASES


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str


def _host(key: str) -> str:
    host = key.split("://", 1)[-1].split("/", 1)[0].lower()
    return DOCKER_HUB if host in DOCKER_HUB_ALIASES else host


def _entries(secret: Mapping[str, Any]) -> Mapping[str, Any]:
    data = secret.get("data") or {}
    for key, nested in ((".dockerconfigjson", True), (".dockercfg", False)):
        raw = data.get(key)
        if not isinstance(raw, str):
            continue
        try:
            parsed = json.loads(base64.b64decode(raw))
        except (ValueError, binascii.Error):
            return {}
        auths = parsed.get("auths") if nested and isinstance(parsed, dict) else parsed
        return auths if isinstance(auths, Mapping) else {}
    return {}


def credentials_for(registry: str, secrets: Iterable[Mapping[str, Any]]) -> Credentials | None:
    """The first credentials the secrets (in their order) hold for `registry`; None when none does."""
    for secret in secrets:
        for key, entry in _entries(secret).items():
            if _host(key) != registry or not isinstance(entry, Mapping):
                continue
            user, password = entry.get("username"), entry.get("password")
            if isinstance(entry.get("auth"), str) and entry["auth"]:
                try:
                    user, _, password = base64.b64decode(entry["auth"]).decode().partition(":")
                except (ValueError, binascii.Error):
                    continue
            if isinstance(user, str) and isinstance(password, str) and user:
                return Credentials(user, password)
    return None
