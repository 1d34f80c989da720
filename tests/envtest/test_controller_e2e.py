"""The controller's e2e suite (tests/e2e) against real kube-apiservers instead of embedded ones.

`OMECTL_E2E_REAL=1` makes every `running_fleet` of tests/e2e start real etcd + kube-apiserver processes
(`omectl.envtest`), with our CRDs, the workload simulator as their API client, and the controller in-process with
its admission webhooks registered through a real ValidatingWebhookConfiguration (TLS, `caBundle`); the tests drive
it with the real kubectl. So the OME inheritance walk-through (a profile edit, chains breaking and healing, the
webhook denials), engine readiness, the AIM flows, the two AIM versions, the doctor, the fleet registry and the
fleet rollouts' core run against both servers.

`make test` leaves out of this run what adds server time without adding server behaviour (`EMBEDDED_ONLY`, each
with its reason; they run against the embedded server as every e2e file does): a real cluster costs seconds of
kube-apiserver start-up and a core of CPU, and the whole suite on real servers took half of `make test`'s 25 minutes
on 2 cores. `make e2e-real` runs every e2e test against real servers.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from omectl.envtest import EnvtestBinaries

from .conftest import ROOT

# One test per e2e file and no xdist group, so the suite's workers share the minutes this takes.
pytestmark = [pytest.mark.kubectl]
E2E_FILES = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tests" / "e2e").glob("test_*.py"))

EMBEDDED_ONLY: dict[str, str] = {
    "tests/e2e/test_demo_rollout.py": "the demo's fleet rollout, its steps run by test_fleet_runtimes.py",
    "tests/e2e/test_external_fleet.py": "test_runtime_inheritance.py's walk-through, its fleet named by a kubeconfig",
    "tests/e2e/test_fleet_runtimes_hubless.py": "test_fleet_runtimes.py's applier reading files instead of a hub",
    "tests/e2e/test_runtime_history.py": "the CLI's printing of revisions that test_runtime_inheritance.py makes",
    "tests/e2e/test_runtime_rollout.py": "the CLI's rollout of a pinned service, test_fleet.py's rollout test",
    "tests/e2e/test_aim_model_templates.py": (
        "a model's templates: server-side applies and reads test_aim_service_templates.py's models make too, and the"
        " owner-reference garbage collection its scenario asserts needs kube-controller-manager, which these real"
        " servers do not run"
    ),
    "tests/e2e/test_aim_service_caching.py": (
        "a service's template cache: test_aim_service_templates.py's services make theirs, test_aim_legacy.py's caches"
        " (its cache-deleted-dedicated, which a real server's missing garbage collector once made flaky, passes on"
        " real servers: `make e2e-real`; alone here it would cost a real cluster's start, 17-46 s)"
    ),
}
"""E2E files left out of the real-server run of `make test`, with the e2e file whose server traffic each repeats."""

REAL_SERVER_TESTS: dict[str, str] = {
    # every test writes services, models and templates in v1alpha1 through the real server's conversion webhook
    # calls; these four cover a create, an edit, a status write in each version and the v1alpha1 mark
    "tests/e2e/test_aim_service_templates.py": (
        "template_not_found_scenario_fails or basic_lifecycle_service or auto_template_selection_service"
        " or services_with_only_shared_fields"
    ),
    # waves gated by the engines on three real members take minutes; the CLI's printing and refusals are the same
    # reads on either server
    "tests/e2e/test_fleet_runtimes.py": (
        "rolls_to_the_placed_clusters or same_name_is_a_conflict or drift_is_reported or goes_to_each_namespace"
        " or waves_roll_in_order or member_cache_lagging or restarted_applier"
    ),
}
"""`-k` selections of e2e files whose other tests repeat the selected ones' server traffic."""


def test_every_file_left_out_or_narrowed_exists_and_each_selected_name_is_one_test() -> None:
    assert set(EMBEDDED_ONLY) | set(REAL_SERVER_TESTS) <= set(E2E_FILES)
    for path, selection in REAL_SERVER_TESTS.items():
        tests = re.findall(r"^(?:async )?def (test_\w+)", (ROOT / path).read_text(), re.MULTILINE)
        for part in selection.split(" or "):
            assert len([t for t in tests if part in t]) == 1, f"{part!r} must name one test of {path}"


@pytest.mark.long(90)
@pytest.mark.parametrize("e2e_file", [f for f in E2E_FILES if f not in EMBEDDED_ONLY])
def test_the_controller_e2e_suite_passes_against_real_api_servers(
    envtest_binaries: EnvtestBinaries, e2e_file: str
) -> None:
    """(The fixture only makes the test skip, or fail in CI, without the binaries; the run finds them itself.)"""
    run_against_real_api_servers(e2e_file, REAL_SERVER_TESTS.get(e2e_file))


def run_against_real_api_servers(e2e_file: str, selection: str | None = None) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    env["OMECTL_E2E_REAL"] = "1"
    result = subprocess.run(
        # niced, with every kube-apiserver and etcd it starts: the timing-sensitive tests beside it (HA leases) keep
        # their share of the two cores
        [
            "nice",
            "-n",
            "10",
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            *(["-k", selection] if selection else []),
            e2e_file,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    tail = "\n".join((result.stdout + result.stderr).splitlines()[-80:])
    assert result.returncode == 0, f"{e2e_file} against real kube-apiservers failed:\n{tail}"
    assert " passed" in tail, tail
