"""AIMArtifact between upstream's v1alpha1 and omectl's v1alpha2 (docs/aim-versions.md, "AIMArtifact").

The spec is the same but for two fields: v1alpha1's `modelDownloadImage` is v1alpha2's `downloadImage`;
v1alpha1's `imagePullSecrets` and v1alpha2's `profileName`/`profileScope` have no counterpart. Status: v1alpha2's
`Downloading` is v1alpha1's `Progressing`; both hold the download's `progress` and `discoveredSizeBytes`; v1alpha1's
mode, display size and headroom and v1alpha2's download Job and resolved runtime config have no counterpart.
"""

from __future__ import annotations

from typing import Final

from omectl.core.aim.versions.engine import Container, Field, KindConversion, Values, same_if

STATUS: Final = Values(
    {"Pending": "Pending", "Progressing": "Downloading", "Ready": "Ready", "Degraded": "Degraded", "Failed": "Failed"}
)
"""v1alpha1's `status.status` -> v1alpha2's (`NotAvailable` has none)."""

ARTIFACT: Final = KindConversion(
    "AIMArtifact",
    (
        Field.both(("spec", "sourceUri")),
        Field.both(("spec", "modelId")),
        Field.both(("spec", "size")),
        Field.both(("spec", "storageClassName")),
        Field.both(("spec", "env")),
        Field.both(("spec", "runtimeConfigName")),
        Field(("spec", "modelDownloadImage"), ("spec", "downloadImage")),
        Field.both(("status", "conditions")),
        Field.both(("status", "observedGeneration")),
        Field.values(("status", "status"), ("status", "status"), STATUS),
        Field.both(("status", "persistentVolumeClaim")),
        Field.both(("status", "allocatedSize"), same_if(str), same_if(str)),
        Container.both(("status", "download")),
        *(
            Field.both(("status", "download", name))
            for name in ("protocol", "protocolSequence", "attempt", "totalAttempts", "message")
        ),
        Field.both(("status", "discoveredSizeBytes"), same_if(int), same_if(int)),
        Container.both(("status", "progress")),
        *(
            Field.both(("status", "progress", name), same_if(int), same_if(int))
            for name in ("totalBytes", "downloadedBytes", "percentage")
        ),
        Field.both(("status", "progress", "displayPercentage")),
    ),
)
