"""AMD AIM runtime configuration, as pure functions over plain dicts (docs/aim-resources.md).

- `layers`: merging config layers field by field, with provenance.
- `resolution`: which configs a consumer resolves, its status reference, conditions and events; which consumers a
  config change reaches.
- `env`: environment variables by precedence, for inference containers and download Jobs.
- `paths`: route paths from path templates (JSONPath, RFC 3986 encoding, limits).
- `labels`: label patterns and propagation to children.
- `durations`: Go durations for request timeouts.
- `meta`: owner references and the labels every child carries.
- `routing`: enabling routing and rendering the HTTPRoute.
- `kserve`: rendering the InferenceService and the model-cache PVC.
- `status`: rolling components up into conditions and `status.status`.
- `validation`: admission checks for runtime configs and inline configs.

The v1alpha2 path (docs/aim-resources.md):

- `consumers`: kinds, names, the propagation graph (`propagate_edge`) and the runtime-config part of every consumer's
  status (`consumer_status`).
- `caches`: AIMService → AIMProfileCache → AIMArtifacts, and the cache's status.
- `artifacts`: an AIMArtifact's PVC and download Job, its status from the Job, mounting Ready artifacts.
- `discovery`: a model's discovery Job, its result ConfigMap, the profiles and the profile set made from it.
- `profiles`: profiles derived from an AIMProfileSet.
- `sources`: AIMClusterModels listed by an AIMClusterModelSource.
"""
