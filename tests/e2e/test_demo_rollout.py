"""The fleet rollout story of `make demo` (omectl/demo_rollout.py), run as the demo runs it: the demo's three
simulated clusters registered in its hub hub-1, the controller, the real kubectl and `omectl rollout`. It waits
out the story's soaks and deadline in real time (about 10 s): the story is the demo's, unchanged.

Asserted: the image bump reached sim-1 first (its wave soaked while sim-2 and sim-3 kept revision 1) and then every
cluster; the bad revision, an image the simulated registry does not have, left sim-1's new engine pod in
ImagePullBackOff while the old one served, failed wave 1 because the engine never rolled it out, was rolled back on
sim-1, and never went to sim-2 or sim-3.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from omectl.controller.app import ControllerApp
from omectl.demo import Shell, hub_and_registrations, simulated_nodes
from omectl.demo_rollout import BUMPED_IMAGE, FLEET_RUNTIME, rollout_story
from omectl.sim.fleet import BackgroundFleet, EmbeddedFleet
from tests.support import kubectl_path

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("demo-rollout"), pytest.mark.long(30)]

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "deploy" / "samples" / "ome"
MEMBERS = ["sim-1", "sim-2", "sim-3"]


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[Shell]:
    """The demo's fleet and hub with the controller, and what the story expects the earlier stories to have left
    on every member: the namespace llama-demo, the sample model and the profile sglang-profile."""
    fleet = BackgroundFleet(EmbeddedFleet(3, name_prefix="sim-", simulator=simulated_nodes()))
    hub = BackgroundFleet(EmbeddedFleet(1, name_prefix="hub-"))
    fleet.start()
    hub.start()
    app: ControllerApp | None = None
    try:
        kubeconfig, _, settings = hub_and_registrations(fleet, hub, tmp_path)

        async def start() -> ControllerApp:
            controller = ControllerApp(settings)
            await controller.start()
            await controller.wait_synced(60)
            return controller

        app = fleet.run(start())
        sh = Shell(kubeconfig, tmp_path / "kube-cache", kubectl_path(), settings.trace_file)
        for member in MEMBERS:
            sh.kq(f"--context={member}", "create", "namespace", "llama-demo")
            for sample in ("clusterbasemodel.yaml", "profile.yaml"):
                sh.kq(f"--context={member}", "apply", "-f", str(SAMPLES / sample))
        yield sh
    finally:
        if app is not None:
            fleet.run(app.stop())
        fleet.stop()
        hub.stop()


def get(sh: Shell, context: str, *what: str) -> dict[str, Any]:
    return json.loads(sh.k(f"--context={context}", "get", *what, "-o", "json"))  # type: ignore[no-any-return]


def test_the_demos_rollout_goes_to_sim_1_first_and_a_bad_revision_is_rolled_back_there_alone(
    demo: Shell, capsys: pytest.CaptureFixture[str]
) -> None:
    images = rollout_story(demo, demo.kubeconfig, MEMBERS)
    shown = capsys.readouterr().out

    assert images == dict.fromkeys(MEMBERS, BUMPED_IMAGE)
    # the story saw the lab wave soak revision 2 while the rest wave had not started
    assert "get fleetruntime sglang-fleet -o jsonpath={.status.waves[*].phase}\nSoaking Pending\n" in shown
    status = get(demo, "hub-1", "fleetruntime", FLEET_RUNTIME)["status"]
    assert (status["revision"], status["phase"], status["rollout"]["stableRevision"]) == (3, "RolledBack", 2)
    assert {c["name"]: c["revision"] for c in status["clusters"]} == dict.fromkeys(MEMBERS, 2)
    events = get(demo, "hub-1", "events", "-n", "default", "--field-selector", "involvedObject.kind=FleetRuntime")
    messages = [e["message"] for e in sorted(events["items"], key=lambda e: e["metadata"]["name"])]  # in the order made
    assert messages.index("wave 1 (lab) passed its gate at revision 2") < messages.index(
        "wave 2 (rest) started at revision 2"
    )
    assert "wave 2 (rest) started at revision 3" not in messages
    (failed,) = [m for m in messages if m.startswith("wave 1 (lab) did not pass its gate")]
    assert "llama-demo/llama-fleet: not rolled out: its engine has not made revision" in failed  # its old pod serves
    assert "ImagePullBackOff" in shown.split("get pods -n llama-demo", 1)[1].splitlines()[2]  # sim-1's engine pod
    assert "revision 2 re-applied to sim-1 after revision 3 failed its gate" in messages
    for member in MEMBERS:
        runtime = get(demo, member, "clusterservingruntime", FLEET_RUNTIME)
        assert runtime["metadata"]["annotations"]["fleet.omectl.io/revision"] == "2"
