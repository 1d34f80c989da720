"""ClusterRegistration files: parsing, the exact one-line errors, kubeconfig resolution and fingerprints."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from omectl.fleet.registration import (
    ClusterRegistration,
    RegistrationError,
    load_registration_file,
    parse_registration,
    resolve_kubeconfig,
    server_of,
    to_yaml,
)
from omectl.sim.kubeconfig import KubeconfigEntry, build_kubeconfig, write_kubeconfig


def kubeconfig_file(path: Path, *names: str, current: str | None = None) -> Path:
    entries = [KubeconfigEntry(name=n, server=f"http://127.0.0.1:{7000 + i}") for i, n in enumerate(names)]
    return write_kubeconfig(path, entries, current=current)


def registration_file(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(body))
    return path


def path_registration(directory: Path, name: str, kubeconfig: str, context: str | None = None) -> Path:
    spec = f"  context: {context}\n" if context else ""
    return registration_file(
        directory / f"{name}.yaml",
        f"apiVersion: omectl.io/v1alpha1\nkind: ClusterRegistration\nmetadata:\n  name: {name}\n"
        f"spec:\n  kubeconfig:\n    path: {kubeconfig}\n{spec}",
    )


def test_path_registration_loads_name_context_labels_and_source(tmp_path: Path) -> None:
    kubeconfig = kubeconfig_file(tmp_path / "kc.yaml", "east", "west")
    file = registration_file(
        tmp_path / "east.yaml",
        f"""\
        apiVersion: omectl.io/v1alpha1
        kind: ClusterRegistration
        metadata:
          name: east
          labels:
            region: us-east
            gpu: true
            replicas: 8
        spec:
          kubeconfig:
            path: {kubeconfig}
          context: west
        """,
    )
    reg = load_registration_file(file)
    assert reg is not None
    assert (reg.name, reg.kubeconfig_path, reg.kubeconfig_inline, reg.context) == ("east", kubeconfig, None, "west")
    assert reg.labels == {"region": "us-east", "gpu": "true", "replicas": "8"}
    assert reg.source == str(file)
    assert len(reg.fingerprint) == 64


def test_relative_kubeconfig_path_resolves_against_the_registration_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clusters = tmp_path / "clusters"
    kubeconfig_file(clusters / "creds" / "kc.yaml", "c1")
    file = path_registration(clusters, "c1", "creds/kc.yaml")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    reg = load_registration_file(file)
    assert reg is not None
    assert reg.kubeconfig_path == clusters / "creds" / "kc.yaml"
    assert resolve_kubeconfig(reg)["current-context"] == "c1"


def test_inline_kubeconfig_as_text_or_mapping_resolves(tmp_path: Path) -> None:
    config = build_kubeconfig([KubeconfigEntry(name="in", server="https://10.0.0.1:6443")])
    as_text = {
        "apiVersion": "omectl.io/v1alpha1",
        "kind": "ClusterRegistration",
        "metadata": {"name": "in"},
        "spec": {"kubeconfig": {"inline": yaml.safe_dump(config)}},
    }
    as_mapping = {**as_text, "spec": {"kubeconfig": {"inline": config}}}
    for document in (as_text, as_mapping):
        reg = parse_registration(yaml.safe_dump(document), source="in.yaml")
        assert reg is not None
        assert reg.kubeconfig_path is None
        resolved = resolve_kubeconfig(reg)
        assert server_of(resolved) == "https://10.0.0.1:6443"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "# only a comment\n",
        "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n- role: control-plane\n",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n---\n- a list\n",
        "just a string",
    ],
)
def test_yaml_that_is_not_a_registration_is_ignored(tmp_path: Path, text: str) -> None:
    file = registration_file(tmp_path / "other.yaml", text)
    assert load_registration_file(file) is None


HEAD = "apiVersion: omectl.io/v1alpha1\nkind: ClusterRegistration\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "kind: ClusterRegistration\nspec: [a, b\nx: 1\n",
            "invalid YAML: expected ',' or ']', but got ':' (line 3, column 2)",
        ),
        (
            "apiVersion: omectl.io/v2\nkind: ClusterRegistration\n",
            'unsupported apiVersion "omectl.io/v2" for ClusterRegistration (expected omectl.io/v1alpha1)',
        ),
        (HEAD + "spec:\n  kubeconfig:\n    path: /x\n", "metadata.name is required"),
        (
            HEAD + "metadata:\n  name: Bad_Name\n",
            'invalid cluster name "Bad_Name": use lowercase letters, digits and "-", '
            "starting and ending with a letter or digit (at most 63 characters)",
        ),
        (HEAD + "metadata:\n  name: a\n", "spec.kubeconfig is required (with path or inline)"),
        (
            HEAD + "metadata:\n  name: a\nspec:\n  kubeconfig:\n    path: /x\n    inline: y\n",
            "spec.kubeconfig needs exactly one of path or inline",
        ),
        (
            HEAD + "metadata:\n  name: a\nspec:\n  kubeconfig: {}\n",
            "spec.kubeconfig needs exactly one of path or inline",
        ),
        (
            HEAD + "metadata:\n  name: a\nspec:\n  kubeconfig:\n    inline: 7\n",
            "spec.kubeconfig.inline must be kubeconfig YAML (a string or a mapping)",
        ),
        (
            HEAD + "metadata:\n  name: a\n  labels: [gpu]\nspec:\n  kubeconfig:\n    path: /x\n",
            "metadata.labels must be a mapping of strings to strings",
        ),
        (
            HEAD + "metadata:\n  name: a\nspec:\n  context: ''\n  kubeconfig:\n    path: /x\n",
            "spec.context must be a non-empty string",
        ),
        (
            HEAD + "metadata:\n  name: a\n---\n" + HEAD + "metadata:\n  name: b\n",
            "holds 2 ClusterRegistration documents; use one file per cluster",
        ),
    ],
)
def test_registration_errors_are_one_line_and_name_the_file(tmp_path: Path, text: str, message: str) -> None:
    file = registration_file(tmp_path / "bad.yaml", text)
    with pytest.raises(RegistrationError) as caught:
        load_registration_file(file)
    assert str(caught.value) == f"{file}: {message}"


def test_missing_kubeconfig_file_is_reported_when_loading(tmp_path: Path) -> None:
    file = path_registration(tmp_path, "gone", "missing.yaml")
    with pytest.raises(RegistrationError) as caught:
        load_registration_file(file)
    assert str(caught.value) == f"kubeconfig file not found: {tmp_path / 'missing.yaml'}"


def test_unknown_context_lists_the_contexts_there_are(tmp_path: Path) -> None:
    kubeconfig = kubeconfig_file(tmp_path / "kc.yaml", "a", "b")
    reg = load_registration_file(path_registration(tmp_path, "c", str(kubeconfig), context="x"))
    assert reg is not None
    with pytest.raises(RegistrationError) as caught:
        resolve_kubeconfig(reg)
    assert str(caught.value) == f'unknown context "x" in {kubeconfig}; contexts: a, b'


def test_named_context_becomes_the_current_context(tmp_path: Path) -> None:
    kubeconfig = kubeconfig_file(tmp_path / "kc.yaml", "a", "b")
    reg = load_registration_file(path_registration(tmp_path, "c", str(kubeconfig), context="b"))
    assert reg is not None
    resolved = resolve_kubeconfig(reg)
    assert resolved["current-context"] == "b"
    assert server_of(resolved) == "http://127.0.0.1:7001"


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            "clusters: [unclosed\n",
            "cannot parse kubeconfig {kc}: expected ',' or ']', but got '<stream end>' (line 2, column 1)",
        ),
        ("- a\n- b\n", "cannot parse kubeconfig {kc}: not a kubeconfig (expected a mapping)"),
        ("apiVersion: v1\nkind: Config\n", "kubeconfig {kc} has no contexts"),
        (
            "contexts:\n- name: a\n  context: {cluster: a}\nclusters:\n- name: a\n  cluster: {}\n",
            "kubeconfig {kc} has no current-context; name one of its contexts: a",
        ),
        (
            "current-context: a\ncontexts:\n- name: a\n  context: {cluster: nope}\nclusters: []\n",
            'context "a" in {kc} refers to unknown cluster "nope"',
        ),
        (
            "current-context: a\ncontexts:\n- name: a\n  context: {cluster: a}\nclusters:\n- name: a\n  cluster: {}\n",
            'cluster "a" in {kc} has no server URL',
        ),
    ],
)
def test_unusable_kubeconfig_errors(tmp_path: Path, content: str, message: str) -> None:
    kubeconfig = write(tmp_path / "kc.yaml", content)
    reg = load_registration_file(path_registration(tmp_path, "c", str(kubeconfig)))
    assert reg is not None
    with pytest.raises(RegistrationError) as caught:
        resolve_kubeconfig(reg)
    assert str(caught.value) == message.format(kc=kubeconfig)


def test_inline_kubeconfig_errors_name_the_registration(tmp_path: Path) -> None:
    reg = ClusterRegistration(name="c", kubeconfig_inline="apiVersion: v1\n", source="clusters/c.yaml")
    with pytest.raises(RegistrationError) as caught:
        resolve_kubeconfig(reg)
    assert str(caught.value) == "kubeconfig the inline kubeconfig of clusters/c.yaml has no contexts"


def test_fingerprint_changes_when_kubeconfig_content_changes_at_the_same_path(tmp_path: Path) -> None:
    kubeconfig = kubeconfig_file(tmp_path / "kc.yaml", "c")
    file = path_registration(tmp_path, "c", str(kubeconfig))
    before = load_registration_file(file)
    again = load_registration_file(file)
    write_kubeconfig(kubeconfig, [KubeconfigEntry(name="c", server="http://127.0.0.1:7000", token="rotated")])
    after = load_registration_file(file)
    assert before is not None and again is not None and after is not None
    assert before.fingerprint == again.fingerprint
    assert after.fingerprint != before.fingerprint
    assert after.kubeconfig_path == before.kubeconfig_path


def test_fingerprint_changes_with_the_context(tmp_path: Path) -> None:
    kubeconfig = kubeconfig_file(tmp_path / "kc.yaml", "a", "b")
    first = load_registration_file(path_registration(tmp_path, "c", str(kubeconfig), context="a"))
    second = load_registration_file(path_registration(tmp_path, "c", str(kubeconfig), context="b"))
    assert first is not None and second is not None
    assert first.fingerprint != second.fingerprint


def test_exactly_one_kubeconfig_source_is_enforced_by_the_model() -> None:
    with pytest.raises(ValueError, match="exactly one of kubeconfig_path or kubeconfig_inline"):
        ClusterRegistration(name="c")
    with pytest.raises(ValueError, match="exactly one of kubeconfig_path or kubeconfig_inline"):
        ClusterRegistration(name="c", kubeconfig_path=Path("/x"), kubeconfig_inline="y")


@pytest.mark.parametrize("inline", [False, True])
def test_to_yaml_round_trips(tmp_path: Path, inline: bool) -> None:
    kubeconfig = kubeconfig_file(tmp_path / "kc.yaml", "a", "b")
    fields = {"kubeconfig_inline": kubeconfig.read_text()} if inline else {"kubeconfig_path": kubeconfig}
    reg = ClusterRegistration(name="rt", context="b", labels={"gpu": "mi300x", "region": "eu"}, **fields)
    text = to_yaml(reg)
    loaded = parse_registration(text, source="rt.yaml", base_dir=tmp_path)
    assert loaded is not None
    assert replace(loaded, source="", fingerprint="") == replace(reg, source="", fingerprint="")
    if inline:
        assert "inline: |" in text


def test_loading_without_fingerprint_does_not_read_the_kubeconfig(tmp_path: Path) -> None:
    file = path_registration(tmp_path, "gone", "missing.yaml")
    reg = load_registration_file(file, fingerprint=False)
    assert reg is not None
    assert (reg.name, reg.kubeconfig_path, reg.fingerprint) == ("gone", tmp_path / "missing.yaml", "")
