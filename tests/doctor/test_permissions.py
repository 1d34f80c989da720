"""`omectl doctor`'s permission check asks for exactly what omectl's member ClusterRole grants."""

from __future__ import annotations

import yaml

from omectl.doctor.checks import MEMBER_CLUSTER_ROLE, required_permissions
from omectl.kube.rbac import Request, Role


def test_an_identity_bound_to_the_member_cluster_role_passes_every_access_review_doctor_sends() -> None:
    (role,) = (
        Role.from_manifest(doc)
        for doc in yaml.safe_load_all(MEMBER_CLUSTER_ROLE.read_text())
        if doc and doc.get("kind") == "ClusterRole"
    )
    needed = required_permissions()
    # a rule naming its objects is checked for each name: RBAC denies a review without one under such a rule
    named = [p for p in needed if p.name]
    assert {p.name for p in named} >= {"aim-engine-artifact-status-updater", "omectl-ome-webhooks"}
    for permission in needed:
        plural, _, subresource = permission.resource.partition("/")
        review = Request(permission.verb, permission.group, plural, subresource, name=permission.name)
        assert role.allows(review), permission.described()
    assert all(not role.allows(Request(p.verb, p.group, *p.resource.partition("/")[::2])) for p in named)
