"""`omectl cluster add|list|remove|check` against two embedded clusters served from a background thread."""

from __future__ import annotations

import json
import socket
import stat
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner, Result

from omectl.cli.cluster import cluster_app
from omectl.cli.main import app
from omectl.fleet.registration import load_registration_file
from omectl.sim.fleet import BackgroundFleet
from omectl.sim.kubeconfig import KubeconfigEntry, write_kubeconfig


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def fleet_kubeconfig(bg_fleet: BackgroundFleet, tmp_path: Path) -> Path:
    """One kubeconfig with contexts bg-1 and bg-2 (current: bg-1)."""
    return bg_fleet.fleet.write_kubeconfig(tmp_path / "fleet.kubeconfig")


@pytest.fixture
def clusters(tmp_path: Path) -> Path:
    return tmp_path / "clusters"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def add(runner: CliRunner, clusters: Path, *args: str) -> Result:
    return runner.invoke(cluster_app, ["add", *args, "--clusters-dir", str(clusters)])


def test_add_writes_a_registration_that_loads_back(runner: CliRunner, clusters: Path, fleet_kubeconfig: Path) -> None:
    result = add(
        runner, clusters, "east", "--kubeconfig", str(fleet_kubeconfig), "--context", "bg-2",
        "--label", "region=us-east", "--label", "gpu=mi300x",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    target = clusters / "east.yaml"
    assert result.stdout == f'cluster "east" registered ({target})\n'
    reg = load_registration_file(target)
    assert reg is not None
    assert (reg.name, reg.kubeconfig_path, reg.context) == ("east", fleet_kubeconfig, "bg-2")
    assert reg.labels == {"region": "us-east", "gpu": "mi300x"}


def test_add_inline_embeds_the_kubeconfig_in_a_private_file(
    runner: CliRunner, clusters: Path, fleet_kubeconfig: Path
) -> None:
    result = add(runner, clusters, "west", "--kubeconfig", str(fleet_kubeconfig), "--inline")
    assert result.exit_code == 0, result.output
    target = clusters / "west.yaml"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    document = yaml.safe_load(target.read_text())
    assert document["spec"]["kubeconfig"] == {"inline": fleet_kubeconfig.read_text()}
    fleet_kubeconfig.unlink()  # the registration no longer depends on the file
    reg = load_registration_file(target)
    assert reg is not None and reg.kubeconfig_path is None


def test_add_refuses_a_name_that_is_already_registered(
    runner: CliRunner, clusters: Path, fleet_kubeconfig: Path
) -> None:
    assert add(runner, clusters, "c1", "--kubeconfig", str(fleet_kubeconfig)).exit_code == 0
    before = (clusters / "c1.yaml").read_text()
    result = add(runner, clusters, "c1", "--kubeconfig", str(fleet_kubeconfig), "--context", "bg-2")
    assert result.exit_code == 1
    assert result.stderr == f'error: cluster "c1" is already registered ({clusters / "c1.yaml"})\n'
    assert (clusters / "c1.yaml").read_text() == before


def test_add_refuses_a_name_registered_under_another_file_name(
    runner: CliRunner, clusters: Path, fleet_kubeconfig: Path
) -> None:
    assert add(runner, clusters, "c1", "--kubeconfig", str(fleet_kubeconfig)).exit_code == 0
    (clusters / "c1.yaml").rename(clusters / "renamed.yaml")
    result = add(runner, clusters, "c1", "--kubeconfig", str(fleet_kubeconfig))
    assert result.exit_code == 1
    assert result.stderr == f'error: cluster "c1" is already registered ({clusters / "renamed.yaml"})\n'


@pytest.mark.parametrize(
    ("setup", "extra", "message"),
    [
        (None, [], "kubeconfig file not found: {kc}"),
        (
            "clusters: [unclosed\n",
            [],
            "cannot parse kubeconfig {kc}: expected ',' or ']', but got '<stream end>' (line 2, column 1)",
        ),
        ("fleet", ["--context", "nope"], 'unknown context "nope" in {kc}; contexts: bg-1, bg-2'),
        ("fleet", ["--label", "novalue"], 'invalid label "novalue": expected KEY=VALUE'),
    ],
)
def test_add_rejects_bad_input_with_one_line_and_writes_nothing(
    runner: CliRunner,
    clusters: Path,
    fleet_kubeconfig: Path,
    tmp_path: Path,
    setup: str | None,
    extra: list[str],
    message: str,
) -> None:
    if setup == "fleet":
        kc = fleet_kubeconfig
    else:
        kc = tmp_path / "given.kubeconfig"
        if setup is not None:
            kc.write_text(setup)
    result = add(runner, clusters, "c1", "--kubeconfig", str(kc), *extra)
    assert result.exit_code == 1
    assert result.stderr == f"error: {message.format(kc=kc)}\n"
    assert not (clusters / "c1.yaml").exists()


def test_add_rejects_an_invalid_cluster_name(runner: CliRunner, clusters: Path, fleet_kubeconfig: Path) -> None:
    result = add(runner, clusters, "Not_Valid", "--kubeconfig", str(fleet_kubeconfig))
    assert result.exit_code == 1
    assert result.stderr.startswith('error: invalid cluster name "Not_Valid": ')
    assert result.stderr.count("\n") == 1


def test_list_shows_clusters_and_an_errors_section(
    runner: CliRunner, clusters: Path, fleet_kubeconfig: Path, bg_fleet: BackgroundFleet
) -> None:
    assert add(runner, clusters, "one", "--kubeconfig", str(fleet_kubeconfig), "--label", "gpu=h200").exit_code == 0
    assert add(runner, clusters, "two", "--kubeconfig", str(fleet_kubeconfig), "--context", "bg-2").exit_code == 0
    (clusters / "broken.yaml").write_text("apiVersion: omectl.io/v1alpha1\nkind: ClusterRegistration\n")
    (clusters / "kind.yaml").write_text("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\n")

    result = runner.invoke(cluster_app, ["list", "--clusters-dir", str(clusters), "-o", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    servers = {s.name: s.url for s in bg_fleet.fleet.servers}
    assert document["clusters"] == [
        {
            "name": "one",
            "context": "bg-1",
            "server": servers["bg-1"],
            "labels": {"gpu": "h200"},
            "source": str(clusters / "one.yaml"),
        },
        {
            "name": "two",
            "context": "bg-2",
            "server": servers["bg-2"],
            "labels": {},
            "source": str(clusters / "two.yaml"),
        },
    ]
    broken = str(clusters / "broken.yaml")
    assert document["errors"] == [{"source": broken, "message": f"{broken}: metadata.name is required"}]

    as_yaml = runner.invoke(cluster_app, ["list", "--clusters-dir", str(clusters), "-o", "yaml"])
    assert yaml.safe_load(as_yaml.stdout) == document

    table = runner.invoke(cluster_app, ["list", "--clusters-dir", str(clusters)])
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["NAME", "CONTEXT", "SERVER", "LABELS", "SOURCE"]
    assert lines[1].split() == ["one", "bg-1", servers["bg-1"], "gpu=h200", str(clusters / "one.yaml")]
    assert lines[2].split() == ["two", "bg-2", servers["bg-2"], "<none>", str(clusters / "two.yaml")]
    assert lines[3:] == ["", "ERRORS", f"  {broken}: metadata.name is required"]


def test_list_reads_the_directory_from_the_environment(
    runner: CliRunner, clusters: Path, fleet_kubeconfig: Path
) -> None:
    assert add(runner, clusters, "envy", "--kubeconfig", str(fleet_kubeconfig)).exit_code == 0
    result = runner.invoke(cluster_app, ["list", "-o", "json"], env={"OMECTL_CLUSTERS_DIR": str(clusters)})
    assert result.exit_code == 0, result.output
    assert [c["name"] for c in json.loads(result.stdout)["clusters"]] == ["envy"]


def test_list_rejects_an_unknown_output_format(runner: CliRunner, clusters: Path) -> None:
    result = runner.invoke(app, ["cluster", "list", "--clusters-dir", str(clusters), "-o", "xml"], prog_name="omectl")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: Invalid value for '-o' / '--output': 'xml' is not one of 'table', 'wide', 'name', 'json', 'yaml'. "
        "(see 'omectl cluster list --help')\n"
    )


def test_list_and_check_print_names_and_wide_tables(runner: CliRunner, clusters: Path, fleet_kubeconfig: Path) -> None:
    assert add(runner, clusters, "one", "--kubeconfig", str(fleet_kubeconfig)).exit_code == 0
    assert add(runner, clusters, "two", "--kubeconfig", str(fleet_kubeconfig), "--context", "bg-2").exit_code == 0
    (clusters / "broken.yaml").write_text("apiVersion: omectl.io/v1alpha1\nkind: ClusterRegistration\n")
    broken = clusters / "broken.yaml"

    names = runner.invoke(cluster_app, ["list", "--clusters-dir", str(clusters), "-o", "name"])
    assert names.exit_code == 0, names.output
    assert names.stdout == "cluster/one\ncluster/two\n"
    assert names.stderr == f"error: {broken}: metadata.name is required\n"  # never among the names

    table = runner.invoke(cluster_app, ["list", "--clusters-dir", str(clusters)])
    wide = runner.invoke(cluster_app, ["list", "--clusters-dir", str(clusters), "-o", "wide"])
    assert wide.exit_code == 0, wide.output
    assert wide.stdout == table.stdout  # every field of a registration is in the table already

    broken.unlink()
    checked = runner.invoke(cluster_app, ["check", "--clusters-dir", str(clusters), "--timeout", "3", "-o", "name"])
    assert checked.exit_code == 0, checked.output
    assert checked.stdout == "cluster/one\ncluster/two\n"


def test_remove_deletes_the_registration_and_rejects_unknown_names(
    runner: CliRunner, clusters: Path, fleet_kubeconfig: Path
) -> None:
    assert add(runner, clusters, "gone", "--kubeconfig", str(fleet_kubeconfig)).exit_code == 0
    result = runner.invoke(cluster_app, ["remove", "gone", "--clusters-dir", str(clusters)])
    assert result.exit_code == 0, result.output
    assert result.stdout == f'cluster "gone" removed ({clusters / "gone.yaml"})\n'
    assert not (clusters / "gone.yaml").exists()

    again = runner.invoke(cluster_app, ["remove", "gone", "--clusters-dir", str(clusters)])
    assert again.exit_code == 1
    assert again.stderr == f'error: cluster "gone" is not registered in {clusters}\n'


def test_check_reports_reachable_and_unreachable_clusters(
    runner: CliRunner, clusters: Path, fleet_kubeconfig: Path, tmp_path: Path, bg_fleet: BackgroundFleet
) -> None:
    assert add(runner, clusters, "one", "--kubeconfig", str(fleet_kubeconfig)).exit_code == 0
    assert add(runner, clusters, "two", "--kubeconfig", str(fleet_kubeconfig), "--context", "bg-2").exit_code == 0
    dead_url = f"http://127.0.0.1:{closed_port()}"
    dead = write_kubeconfig(tmp_path / "dead.kubeconfig", [KubeconfigEntry(name="dead", server=dead_url)])
    assert add(runner, clusters, "dead", "--kubeconfig", str(dead)).exit_code == 0

    result = runner.invoke(cluster_app, ["check", "--clusters-dir", str(clusters), "--timeout", "3", "-o", "json"])
    assert result.exit_code == 2, result.output
    rows = {row["name"]: row for row in json.loads(result.stdout)["clusters"]}
    assert sorted(rows) == ["dead", "one", "two"]
    assert rows["one"]["reachable"] and rows["two"]["reachable"]
    assert rows["two"]["server"] == bg_fleet.fleet["bg-2"].url
    assert rows["one"]["version"].startswith("v1.")
    assert rows["dead"]["reachable"] is False
    assert rows["dead"]["server"] == dead_url
    assert rows["dead"]["error"].startswith("cluster dead: GET /version: ")

    table = runner.invoke(cluster_app, ["check", "--clusters-dir", str(clusters), "--timeout", "3"])
    assert table.exit_code == 2
    status = {line.split()[0]: line.split()[2] for line in table.stdout.splitlines()[1:] if line}
    assert status == {"dead": "unreachable", "one": "reachable", "two": "reachable"}


def test_check_one_name_exits_zero_when_it_is_reachable(
    runner: CliRunner, clusters: Path, fleet_kubeconfig: Path, tmp_path: Path
) -> None:
    assert add(runner, clusters, "one", "--kubeconfig", str(fleet_kubeconfig)).exit_code == 0
    dead = write_kubeconfig(
        tmp_path / "dead.kubeconfig", [KubeconfigEntry(name="dead", server=f"http://127.0.0.1:{closed_port()}")]
    )
    assert add(runner, clusters, "dead", "--kubeconfig", str(dead)).exit_code == 0
    result = runner.invoke(cluster_app, ["check", "one", "--clusters-dir", str(clusters), "--timeout", "3"])
    assert result.exit_code == 0, result.output
    assert [line.split()[:3] for line in result.stdout.splitlines()[1:]] == [
        ["one", fleet_kubeconfig_server(fleet_kubeconfig), "reachable"]
    ]
    unknown = runner.invoke(cluster_app, ["check", "nope", "--clusters-dir", str(clusters)])
    assert unknown.exit_code == 1
    assert unknown.stderr == f'error: cluster "nope" is not registered in {clusters}\n'


def fleet_kubeconfig_server(path: Path) -> str:
    config = yaml.safe_load(path.read_text())
    return str(next(c for c in config["clusters"] if c["name"] == config["current-context"])["cluster"]["server"])


def test_check_reports_a_registration_whose_kubeconfig_broke_as_an_error(
    runner: CliRunner, clusters: Path, tmp_path: Path, bg_fleet: BackgroundFleet
) -> None:
    own = bg_fleet.fleet.write_kubeconfig(tmp_path / "own.kubeconfig")
    assert add(runner, clusters, "one", "--kubeconfig", str(own)).exit_code == 0
    own.unlink()
    result = runner.invoke(cluster_app, ["check", "--clusters-dir", str(clusters)])
    assert result.exit_code == 2
    assert result.stdout.splitlines()[-1] == f"  kubeconfig file not found: {own}"
    single = runner.invoke(cluster_app, ["check", "one", "--clusters-dir", str(clusters)])
    assert single.exit_code == 1
    assert single.stderr == f"error: kubeconfig file not found: {own}\n"


def test_remove_works_when_the_registered_kubeconfig_is_gone(
    runner: CliRunner, clusters: Path, tmp_path: Path, bg_fleet: BackgroundFleet
) -> None:
    own = bg_fleet.fleet.write_kubeconfig(tmp_path / "own.kubeconfig")
    assert add(runner, clusters, "one", "--kubeconfig", str(own)).exit_code == 0
    own.unlink()
    result = runner.invoke(cluster_app, ["remove", "one", "--clusters-dir", str(clusters)])
    assert result.exit_code == 0, result.output
    assert not (clusters / "one.yaml").exists()


def test_list_and_check_select_clusters_by_their_registration_labels(
    runner: CliRunner, clusters: Path, fleet_kubeconfig: Path
) -> None:
    kc = str(fleet_kubeconfig)
    assert (
        add(runner, clusters, "eu-1", "--kubeconfig", kc, "--label", "region=eu", "--label", "gpu=h200").exit_code == 0
    )
    assert add(runner, clusters, "eu-2", "--kubeconfig", kc, "--context", "bg-2", "--label", "region=eu").exit_code == 0
    assert (
        add(runner, clusters, "us-1", "--kubeconfig", kc, "--label", "region=us", "--label", "gpu=h100").exit_code == 0
    )

    def names(command: str, selector: str) -> list[str]:
        result = runner.invoke(cluster_app, [command, "--clusters-dir", str(clusters), "-l", selector, "-o", "name"])
        assert result.exit_code == 0, result.output
        return result.stdout.splitlines()

    assert names("list", "region=eu") == ["cluster/eu-1", "cluster/eu-2"]
    assert names("list", "gpu in (h100,h200)") == ["cluster/eu-1", "cluster/us-1"]
    assert names("list", "region=eu,!gpu") == ["cluster/eu-2"]
    assert names("list", "region!=eu") == ["cluster/us-1"]
    assert names("check", "gpu") == ["cluster/eu-1", "cluster/us-1"]

    none = runner.invoke(cluster_app, ["list", "--clusters-dir", str(clusters), "-l", "region=ap"])
    assert none.stdout == f"no clusters registered in {clusters} match region=ap\n"


def test_a_bad_selector_is_one_usage_line(runner: CliRunner, clusters: Path) -> None:
    result = runner.invoke(
        app, ["cluster", "list", "--clusters-dir", str(clusters), "-l", "a in ("], prog_name="omectl"
    )
    assert result.exit_code == 2
    assert result.stderr == (
        "error: Invalid value for '-l' / '--selector': invalid label selector 'a in (': 'a in (' is not a label key "
        "(see 'omectl cluster list --help')\n"
    )
