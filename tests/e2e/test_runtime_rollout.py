"""`omectl runtime rollout` on the fleet of the history tests (a module of its own: the rollout changes what the
history shows)."""

from __future__ import annotations

import json
import time

import pytest
import yaml
from typer.testing import CliRunner

from omectl.cli.main import app
from tests.e2e.conftest import ControlledFleet
from tests.e2e.test_runtime_history import CLUSTER, RUNTIME, fleet, invoke, isvc

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("e2e")]
__all__ = ["fleet"]  # the module-scoped fixture: this module gets a fleet of its own


def test_rollout_moves_a_pinned_service_to_the_live_revision(fleet: ControlledFleet) -> None:
    def drifted() -> str:
        return fleet.k(CLUSTER, "get", "isvc", "pinned", "-n", "llama-demo", "-o",
                       'jsonpath={.status.conditions[?(@.type=="RuntimeDrifted")].status}')  # fmt: skip

    deadline = time.monotonic() + 30
    while drifted() != "True":
        assert time.monotonic() < deadline, "the pinned service never reported its drift"
        time.sleep(0.05)
    argv = ["runtime", "rollout", "pinned", "-n", "llama-demo", "--kubeconfig", str(fleet.kubectl.kubeconfig),
            "--context", CLUSTER]  # fmt: skip
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    assert result.stdout == "inferenceservice.ome.io/pinned rolling out to the live revision\n"
    while drifted() != "False":
        assert time.monotonic() < deadline + 30, "the rollout never took effect"
        time.sleep(0.05)
    report = json.loads(invoke(fleet, "-n", "llama-demo", "-o", "json").stdout)
    assert [r["pinnedBy"] for r in report["revisions"]] == [["pinned"], []]  # pinned to the newest now
    follows = CliRunner().invoke(app, [*argv[:2], "follows", *argv[3:]])
    assert (
        follows.stdout == "inferenceservice.ome.io/follows follows its live runtime (autoSync); nothing to roll out\n"
    )


def rollout_argv(fleet: ControlledFleet, name: str) -> list[str]:
    return ["runtime", "rollout", name, "-n", "llama-demo", "--kubeconfig", str(fleet.kubectl.kubeconfig),
            "--context", CLUSTER]  # fmt: skip


def test_rollout_of_a_missing_service_is_a_one_line_error(fleet: ControlledFleet) -> None:
    result = CliRunner().invoke(app, rollout_argv(fleet, "absent"))
    assert result.exit_code == 1
    assert (
        result.stderr == f'error: InferenceService "absent" not found in namespace "llama-demo" (cluster {CLUSTER})\n'
    )


def test_rollout_refuses_a_service_pinned_by_its_spec_and_leaves_it_alone(fleet: ControlledFleet) -> None:
    revision = fleet.k(CLUSTER, "get", "controllerrevisions", "-n", "llama-demo", "-l", f"ome.io/runtime={RUNTIME}",
                       "-o", "jsonpath={.items[0].metadata.name}")  # fmt: skip
    assert revision
    fleet.k(CLUSTER, "apply", "-f", "-", input=yaml.safe_dump(isvc("by-spec", revision=revision)))
    try:  # the module's other tests see the revisions pinned: this service goes again
        result = CliRunner().invoke(app, rollout_argv(fleet, "by-spec"))
        assert result.exit_code == 1
        assert result.stderr == (
            f"error: inferenceservice by-spec is pinned by spec.runtime.revision={revision}; edit the spec to move it\n"
        )
        annotations = fleet.k(
            CLUSTER, "get", "isvc", "by-spec", "-n", "llama-demo", "-o", "jsonpath={.metadata.annotations}"
        )
        assert "omectl.io/rollout-requested" not in annotations
    finally:
        fleet.k(CLUSTER, "delete", "isvc", "by-spec", "-n", "llama-demo")
