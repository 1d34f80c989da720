"""Upstream's legacy template path (`aim.eai.amd.com/v1alpha1`), as pure functions over plain dicts
(docs/aim-resources.md, "The legacy template path").

- `kinds`: the kinds, the labels of their children and their propagation edges.
- `status`: upstream's state engine for these kinds (components → conditions and `status.status`).
- `gpus`: the GPU models a cluster's Nodes offer, and whether a template's hardware fits them.
- `templates`: a template's model, profile, hardware, status fields and template cache.
- `discovery`: a template's discovery Job and what its result becomes.
- `template_caches`: a template cache's template, its artifacts and its status.
"""
