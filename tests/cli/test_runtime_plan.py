"""`omectl runtime plan -f`: every InferenceService an edit reaches and the diff of each workload it re-renders,
read from embedded clusters, with nothing written."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from omectl.cli.main import app
from omectl.fleet.registration import ClusterRegistration, to_yaml
from omectl.sim.fleet import BackgroundFleet, EmbeddedFleet
from tests.cli.test_runtime_cli import CSR, SR, create, isvc, namespace, runtime, sample, set_status

REPO = Path(__file__).resolve().parents[2]
NEW_IMAGE = "docker.io/lmsysorg/sglang:v0.5.6-cu129-amd64"


def _model() -> dict[str, Any]:
    return sample("clusterbasemodel.yaml")


def _pinned(name: str) -> dict[str, Any]:
    obj = sample("isvc.yaml")
    obj["metadata"]["name"] = name
    obj["spec"]["runtime"]["autoSync"] = False
    return obj


def _overrides_image() -> dict[str, Any]:
    child = sample("runtime.yaml")
    child["metadata"].update(name="own-image", namespace="team-b")
    child["spec"]["engineConfig"]["runner"]["image"] = "registry.example/own:1"
    return child


def _isvc_named(name: str, ns: str, runtime_name: str) -> dict[str, Any]:
    obj = sample("isvc.yaml")
    obj["metadata"].update(name=name, namespace=ns)
    obj["spec"]["runtime"]["name"] = runtime_name
    return obj


CLUSTER_ONE = [
    namespace("llama-demo"),
    namespace("team-b"),
    _model(),
    sample("profile.yaml"),
    sample("runtime.yaml"),
    _overrides_image(),
    runtime(CSR, "unrelated", None),
    sample("isvc.yaml"),
    _pinned("pinned"),
    _isvc_named("own", "team-b", "own-image"),
    isvc("elsewhere", "team-b", "unrelated"),
]
CLUSTER_TWO = [namespace("llama-demo"), _model(), sample("profile.yaml"), sample("runtime.yaml"), sample("isvc.yaml")]


@pytest.fixture(scope="module")
def fleet() -> Iterator[BackgroundFleet]:
    bg = BackgroundFleet(EmbeddedFleet(2, name_prefix="plan-"))
    bg.start()
    try:
        bg.run(bg.fleet.apply([REPO / "deploy" / "crds"]))
        for server, objects in zip(bg.fleet.servers, (CLUSTER_ONE, CLUSTER_TWO), strict=True):
            for obj in objects:
                if obj["kind"] == "ClusterBaseModel":
                    bg.run(bg.fleet.apply([REPO / "deploy" / "samples" / "ome" / "clusterbasemodel.yaml"]))
                    continue
                bg.run(create(server, copy.deepcopy(obj)))
        pinned_status = {"runtime": {"name": "sglang-llama-3-2-3b", "kind": SR, "revision": "sglang-llama-3-2-3b-old"}}
        bg.run(set_status(bg.fleet.servers[0], "llama-demo", "pinned", pinned_status))
        yield bg
    finally:
        bg.stop()


@pytest.fixture(scope="module")
def kubeconfig(fleet: BackgroundFleet, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fleet.fleet.write_kubeconfig(tmp_path_factory.mktemp("plan") / "kubeconfig")


@pytest.fixture
def clusters_dir(kubeconfig: Path, tmp_path: Path) -> Path:
    directory = tmp_path / "clusters"
    directory.mkdir()
    for name in ("plan-1", "plan-2"):
        reg = ClusterRegistration(name=name, kubeconfig_path=kubeconfig, context=name)
        (directory / f"{name}.yaml").write_text(to_yaml(reg))
    return directory


def edited_profile(tmp_path: Path, image: str = NEW_IMAGE, **annotations: str) -> Path:
    profile = sample("profile.yaml")
    profile["spec"]["engineConfig"]["runner"]["image"] = image
    profile["metadata"]["annotations"].update(annotations)
    path = tmp_path / "profile.yaml"
    path.write_text(yaml.safe_dump(profile))
    return path


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, ["runtime", "plan", *args])


def plan_json(*args: str, exit_code: int = 1) -> dict[str, Any]:
    """The plan as JSON; it exits as kubectl diff: 1 when something would change (every edit here but one)."""
    result = invoke(*args, "-o", "json")
    assert result.exit_code == exit_code, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def by_name(cluster: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{e['namespace']}/{e['name']}": e for e in cluster["inferenceServices"]}


def live_objects(fleet: BackgroundFleet) -> list[tuple[str, str, str]]:
    versions = []
    for server in fleet.fleet.servers:
        for bucket in server.api.store.buckets.values():
            versions.extend(
                (server.name, o["metadata"]["name"], o["metadata"]["resourceVersion"]) for o in bucket.values()
            )
    return sorted(versions)


def test_an_image_bump_re_renders_auto_sync_services_and_drifts_pinned_ones(kubeconfig: Path, tmp_path: Path) -> None:
    (cluster,) = plan_json("-f", str(edited_profile(tmp_path)), "--kubeconfig", str(kubeconfig))["clusters"]
    entries = by_name(cluster)
    assert set(entries) == {"llama-demo/llama-3-2-3b-instruct", "llama-demo/pinned", "team-b/own"}
    follows = entries["llama-demo/llama-3-2-3b-instruct"]
    assert follows["action"] == "re-render"
    diff = follows["diff"]["deployment/llama-3-2-3b-instruct-engine"]
    assert f"+        image: {NEW_IMAGE}" in diff.splitlines()
    assert any(line.startswith("-        image: docker.io/lmsysorg/sglang:v0.5.5") for line in diff.splitlines())
    assert "service/llama-3-2-3b-instruct-engine" not in follows["diff"]  # the Service does not change
    pinned = entries["llama-demo/pinned"]
    assert pinned["action"] == "would drift"
    assert pinned["pinnedRevision"] == "sglang-llama-3-2-3b-old"
    assert pinned["liveRevisionAfter"].startswith("sglang-llama-3-2-3b-")
    assert f"+        image: {NEW_IMAGE}" in pinned["diffOnRollout"]["deployment/pinned-engine"].splitlines()
    assert entries["team-b/own"]["action"] == "unchanged"  # its own image overrides the profile's
    assert cluster["summary"] == {"re-render": 1, "would drift": 1, "unchanged": 1}
    assert cluster["runtimes"] == [
        {"kind": CSR, "name": "sglang-profile", "exists": True, "chainAfter": ["sglang-profile"], "changed": True}
    ]
    assert cluster["changes"] is True


def test_the_live_runtime_as_it_is_plans_no_change_and_exits_0(kubeconfig: Path, tmp_path: Path) -> None:
    live = tmp_path / "profile.yaml"
    live.write_text(yaml.safe_dump(sample("profile.yaml")))
    (cluster,) = plan_json("-f", str(live), "--kubeconfig", str(kubeconfig), exit_code=0)["clusters"]
    assert cluster["changes"] is False
    assert cluster["runtimes"][0]["changed"] is False
    assert {e["action"] for e in cluster["inferenceServices"]} <= {"unchanged"}


def test_an_edit_of_a_label_alone_is_a_change(kubeconfig: Path, tmp_path: Path) -> None:
    profile = sample("profile.yaml")
    profile["metadata"].setdefault("labels", {})["team"] = "platform"
    path = tmp_path / "labelled.yaml"
    path.write_text(yaml.safe_dump(profile))
    (cluster,) = plan_json("-f", str(path), "--kubeconfig", str(kubeconfig), exit_code=1)["clusters"]
    assert cluster["runtimes"][0]["changed"] is True


def test_a_runtime_the_server_would_refuse_is_an_error_naming_the_field(
    fleet: BackgroundFleet, kubeconfig: Path, tmp_path: Path
) -> None:
    profile = sample("profile.yaml")
    profile["spec"]["supportedModelFormats"] = "not-a-list"
    path = tmp_path / "refused.yaml"
    path.write_text(yaml.safe_dump(profile))
    before = live_objects(fleet)
    result = invoke("-f", str(path), "--kubeconfig", str(kubeconfig))
    assert result.exit_code == 2, result.output
    assert "the API server would reject ClusterServingRuntime sglang-profile" in result.output
    assert "spec.supportedModelFormats" in result.output
    assert live_objects(fleet) == before


def test_plan_writes_nothing(fleet: BackgroundFleet, kubeconfig: Path, tmp_path: Path) -> None:
    before = live_objects(fleet)
    plan_json("-f", str(edited_profile(tmp_path)), "--kubeconfig", str(kubeconfig))
    assert live_objects(fleet) == before


def test_an_edit_that_breaks_the_chain_lists_every_service_that_would_break(kubeconfig: Path, tmp_path: Path) -> None:
    path = edited_profile(tmp_path, **{"ome.io/inherit-from": "no-such-parent"})
    (cluster,) = plan_json("-f", str(path), "--kubeconfig", str(kubeconfig))["clusters"]
    assert cluster["runtimes"][0]["chainError"] == (
        'inherit-from parent "no-such-parent" not found (chain so far: [sglang-profile])'
    )
    entries = by_name(cluster)
    assert entries["llama-demo/llama-3-2-3b-instruct"]["action"] == "would break"
    assert "no-such-parent" in entries["llama-demo/llama-3-2-3b-instruct"]["reason"]
    assert "team-b/elsewhere" not in entries


def test_table_output_prints_each_service_its_action_and_the_diff(kubeconfig: Path, tmp_path: Path) -> None:
    result = invoke("-f", str(edited_profile(tmp_path)), "--kubeconfig", str(kubeconfig))
    assert result.exit_code == 1, result.output  # something changes, as kubectl diff's 1
    lines = result.stdout.splitlines()
    assert "cluster plan-1:" in lines
    assert "  ClusterServingRuntime sglang-profile (edited): chain sglang-profile" in lines
    assert "  InferenceService llama-demo/llama-3-2-3b-instruct: re-render" in lines
    assert any(line.startswith("  InferenceService llama-demo/pinned: would drift (pinned to ") for line in lines)
    assert f"    +        image: {NEW_IMAGE}" in lines
    assert lines[-1] == "plan: 1 re-render, 1 would drift, 1 unchanged in 1 cluster; nothing was written"


def test_all_clusters_plans_the_edit_on_every_registered_cluster(clusters_dir: Path, tmp_path: Path) -> None:
    document = plan_json("-f", str(edited_profile(tmp_path)), "--all-clusters", "--clusters-dir", str(clusters_dir))
    assert [c["cluster"] for c in document["clusters"]] == ["plan-1", "plan-2"]
    assert by_name(document["clusters"][1])["llama-demo/llama-3-2-3b-instruct"]["action"] == "re-render"
    assert document["errors"] == [] and document["written"] is False


def test_a_new_serving_runtime_takes_its_namespace_from_the_flag(kubeconfig: Path, tmp_path: Path) -> None:
    child = sample("runtime.yaml")
    del child["metadata"]["namespace"]
    child["spec"]["engineConfig"]["runner"]["args"] = ["--tp-size=2"]
    path = tmp_path / "child.yaml"
    path.write_text(yaml.safe_dump(child))
    (cluster,) = plan_json("-f", str(path), "-n", "llama-demo", "--kubeconfig", str(kubeconfig))["clusters"]
    assert cluster["runtimes"][0]["namespace"] == "llama-demo"
    diff = by_name(cluster)["llama-demo/llama-3-2-3b-instruct"]["diff"]["deployment/llama-3-2-3b-instruct-engine"]
    assert "+        - --tp-size=2" in diff.splitlines()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            "kind: ConfigMap\napiVersion: v1\nmetadata: {name: x}\n",
            "expected a ServingRuntime or ClusterServingRuntime",
        ),
        ("kind: ServingRuntime\napiVersion: ome.io/v1beta1\nmetadata: {}\n", "metadata.name is required"),
        ("kind: [", "not valid YAML"),
        ("", "no runtime to plan"),
    ],
)
def test_bad_edit_files_are_one_line_errors(kubeconfig: Path, tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "edit.yaml"
    path.write_text(content)
    result = invoke("-f", str(path), "--kubeconfig", str(kubeconfig))
    assert result.exit_code == 2  # an error, as kubectl diff's >1
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_table_line_cuts_automatic_selections_exclusion_list_to_its_first_entries() -> None:
    from omectl.cli.runtime_plan import bounded_reason
    from omectl.core.ome.selection import NoRuntimeFound, select_runtime
    from tests.core.test_selection import csr, fmt, llama, spec_with

    candidates = [csr(f"rt-{i}", spec_with(fmt(autoSelect=False))) for i in range(40)]
    with pytest.raises(NoRuntimeFound) as caught:
        select_runtime("default", llama(), candidates)
    full = caught.value.message
    line = bounded_reason(full)
    assert full.count("rt-") == 40 and line.count("rt-") == 3
    assert line.startswith(full.split("rt-3 ")[0])
    assert line.endswith("; ... 37 more (see -o json)")
    assert bounded_reason("runtime x is disabled") == "runtime x is disabled"
