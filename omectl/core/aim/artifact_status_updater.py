"""The RoleBinding that lets an AIMArtifact's downloader patch the artifact's `status.progress`, as upstream's
artifact controller makes it (docs/aim-resources.md, "AIMArtifact").

One per namespace holding artifacts, `aim-engine-artifact-status-updater`: the namespace's `default` service account
(the download pod's) bound to the ClusterRole of that name (deploy/member/rbac/artifact-status-updater.yaml:
`aimartifacts/status` get, patch, update). It is shared by the namespace's artifacts, so it has no owner and is only
created when missing (never updated); labels `app.kubernetes.io/managed-by: omectl` and upstream's
`aim.eai.amd.com/artifact.name` (the artifact that created it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from omectl.core.aim.meta import MANAGED_BY, MANAGED_BY_LABEL, label_value, name_of, namespace_of

STATUS_UPDATER: Final = "aim-engine-artifact-status-updater"
"""The RoleBinding's name and the ClusterRole's it binds."""
ARTIFACT_NAME_LABEL: Final = "aim.eai.amd.com/artifact.name"
DOWNLOADER_SERVICE_ACCOUNT: Final = "default"
RBAC_GROUP: Final = "rbac.authorization.k8s.io"


def render_status_updater_binding(artifact: Mapping[str, Any]) -> dict[str, Any]:
    """The artifact's namespace's status-updater RoleBinding (module docstring)."""
    namespace = namespace_of(artifact)
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "RoleBinding",
        "metadata": {
            "name": STATUS_UPDATER,
            "namespace": namespace,
            "labels": {MANAGED_BY_LABEL: MANAGED_BY, ARTIFACT_NAME_LABEL: label_value(name_of(artifact))},
        },
        "subjects": [{"kind": "ServiceAccount", "name": DOWNLOADER_SERVICE_ACCOUNT, "namespace": namespace}],
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": STATUS_UPDATER},
    }
