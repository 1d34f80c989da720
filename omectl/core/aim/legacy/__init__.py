"""Upstream's legacy template path (`aim.eai.amd.com/v1alpha1`), as pure functions over plain dicts
(docs/aim-resources.md, "The legacy template path").

- `kinds`: the kinds, the labels of their children and their propagation edges.
- `status`: upstream's state engine for these kinds (components → conditions and `status.status`).
"""
