"""The field managers are part of the contract with a cluster: fields applied under one name stay owned by it."""

from __future__ import annotations

from omectl.kube import field_managers


def test_each_writer_has_its_own_field_manager_name() -> None:
    assert {
        "controller": field_managers.FIELD_MANAGER,
        "fleet": field_managers.FLEET_FIELD_MANAGER,
        "plan": field_managers.PLAN_FIELD_MANAGER,
        "rollout": field_managers.ROLLOUT_FIELD_MANAGER,
    } == {"controller": "omectl", "fleet": "omectl-fleet", "plan": "omectl-plan", "rollout": "omectl-rollout"}
