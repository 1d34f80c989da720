"""AIMClusterModelSource between upstream's v1alpha1 and omectl's v1alpha2 (docs/aim-versions.md).

The two specs share nothing: upstream's v1alpha1 source scans a registry (`registry`, `filters`, `versions`,
`maxModels`, `syncInterval`, `imagePullSecrets`), omectl's v1alpha2 source lists its models (`models`,
`runtimeConfigName`); each version's spec travels in the other's annotation. The status shares the conditions, the
observed generation, `status` (v1alpha1's enum is wider), the number of models (v1alpha1's `discoveredModels`,
v1alpha2's `modelCount`) and a registry scan's `availableModels`, `modelsLimitReached` and `lastSyncTime`. A source
written in v1alpha1 is marked so (`written_in_v1alpha1`): it scans until a write in v1alpha2 changes its spec.
"""

from __future__ import annotations

from typing import Final

from omectl.core.aim.versions.engine import Field, KindConversion, Values

STATUS: Final = Values({name: name for name in ("Pending", "Progressing", "Ready", "Degraded", "Failed")})
"""v1alpha1's `status.status` -> v1alpha2's (`Starting`, `Running` and `NotAvailable` have none)."""

CLUSTER_MODEL_SOURCE: Final = KindConversion(
    "AIMClusterModelSource",
    (
        Field.both(("status", "conditions")),
        Field.both(("status", "observedGeneration")),
        Field.values(("status", "status"), ("status", "status"), STATUS),
        Field(("status", "discoveredModels"), ("status", "modelCount")),
        Field.both(("status", "availableModels")),
        Field.both(("status", "modelsLimitReached")),
        Field.both(("status", "lastSyncTime")),
    ),
    marks_v1alpha1_writes=True,
)
