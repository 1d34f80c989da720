"""The fleet: which clusters are registered (files or hub Secrets) and how changes to that list arrive."""

from __future__ import annotations

from omectl.fleet.providers import (
    DirectoryProvider,
    RegistrationProvider,
    RegistryChange,
    SecretProvider,
    provider_from_settings,
)
from omectl.fleet.registration import (
    ClusterRegistration,
    RegistrationError,
    load_registration_file,
    open_client,
    resolve_kubeconfig,
    to_yaml,
)

__all__ = [
    "ClusterRegistration",
    "DirectoryProvider",
    "RegistrationError",
    "RegistrationProvider",
    "RegistryChange",
    "SecretProvider",
    "load_registration_file",
    "open_client",
    "provider_from_settings",
    "resolve_kubeconfig",
    "to_yaml",
]
