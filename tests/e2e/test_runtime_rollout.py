"""`omectl runtime rollout` on the fleet of the history tests (a module of its own: the rollout changes what the
history shows)."""

from __future__ import annotations

import json
import time

import pytest
from typer.testing import CliRunner

from omectl.cli.main import app
from tests.e2e.conftest import ControlledFleet
from tests.e2e.test_runtime_history import CLUSTER, fleet, invoke

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
