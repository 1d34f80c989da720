"""scripts/upstream_aim_documents.py on a small git repository shaped like upstream AIM Engine's: what it collects
(samples, the pinned Helm example, e2e files but chainsaw's, Markdown code blocks and here-documents), and what it
measures on the embedded API server with omectl's CRDs and controller (an AIMArtifact at v1alpha1 accepted through
the conversion webhook, an AIMService at v1alpha1 accepted, a kind not served at v1alpha1 refused as kubectl says it,
a refusal of the schema)."""

from __future__ import annotations

import asyncio
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "upstream_aim_documents", ROOT / "scripts" / "upstream_aim_documents.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


script = _script()

ARTIFACT = """apiVersion: aim.eai.amd.com/v1alpha1
kind: AIMArtifact
metadata:
  name: tiny
spec:
  sourceUri: hf://sshleifer/tiny-gpt2
"""
SERVICE = """apiVersion: aim.eai.amd.com/v1alpha1
kind: AIMService
metadata:
  name: chat
spec:
  model:
    image: amdenterpriseai/aim-qwen-qwen3-32b:0.8.5
"""
PROFILE = """apiVersion: aim.eai.amd.com/v1alpha1
kind: AIMProfile
metadata:
  name: chat-latency
  namespace: team-a
"""
CONFIG_WITH_UNKNOWN_FIELD = """apiVersion: aim.eai.amd.com/v1alpha1
kind: AIMRuntimeConfig
metadata:
  name: odd
  namespace: team-a
spec:
  serviceAccountName: nobody
"""
FILES = {
    "config/samples/aim_v1alpha1_aimartifact.yaml": ARTIFACT,
    "config/samples/kustomization.yaml": "resources:\n- aim_v1alpha1_aimartifact.yaml\n",
    "tests/e2e/aimservice/basic/service.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n---\n{SERVICE}",
    "tests/e2e/aimservice/basic/chainsaw-test.yaml": f"apiVersion: chainsaw.kyverno.io/v1alpha1\n---\n{SERVICE}",
    "docs/docs/guide.md": (
        f"Intro.\n\n```yaml\n{CONFIG_WITH_UNKNOWN_FIELD}```\n\n1. Indented:\n\n    ```\n"
        + "".join(f"    {line}\n" for line in ARTIFACT.splitlines())
        + f"    ```\n\n```bash\nkubectl apply -f - <<EOF\n{PROFILE}EOF\n"
        + "kubectl get aimservice -l aim.eai.amd.com/x=y\n```\n"
        + "```yaml\napiVersion: aim.eai.amd.com/v1alpha1\nkind: [broken\n```\n"
    ),
    "README.md": '```go\nfmt.Println("aim.eai.amd.com/v1alpha1")\n```\n',
}


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    repo = tmp_path_factory.mktemp("aim-engine")
    for path, text in FILES.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "upstream"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    return repo, commit


def test_every_aim_document_of_the_four_sources_is_collected(upstream: tuple[Path, str]) -> None:
    documents, not_yaml = script.collect(*upstream)
    assert [(d.source, d.where, d.kind) for d in documents] == [
        ("samples", "config/samples/aim_v1alpha1_aimartifact.yaml#1", "AIMArtifact"),
        (
            "helm",
            "tests/fixtures/upstream/aim/helm/clusterruntimeconfig-values-example.yaml#1",
            "AIMClusterRuntimeConfig",
        ),
        ("e2e", "tests/e2e/aimservice/basic/service.yaml#1", "AIMService"),  # the Namespace is no AIM document
        ("docs", "docs/docs/guide.md#1", "AIMRuntimeConfig"),
        ("docs", "docs/docs/guide.md#2", "AIMArtifact"),  # an untagged, indented block
        ("docs", "docs/docs/guide.md#3", "AIMProfile"),  # a here-document of a shell block
    ]
    assert not_yaml == ["docs/docs/guide.md"]  # the broken block; a label selector or Go code is no document


def test_the_measure_accepts_what_omectl_serves_and_names_each_refusal(upstream: tuple[Path, str]) -> None:
    found = asyncio.run(script.measure(*upstream, reference=False))
    outcomes = {(d.where, o.accepted): o.reason for d, o in zip(found.documents, found.ours, strict=True)}
    assert outcomes[("config/samples/aim_v1alpha1_aimartifact.yaml#1", True)] == ""
    assert outcomes[("docs/docs/guide.md#2", True)] == ""
    assert outcomes[("tests/e2e/aimservice/basic/service.yaml#1", True)] == ""
    assert outcomes[("docs/docs/guide.md#3", False)] == (
        'no matches for kind "AIMProfile" in version "aim.eai.amd.com/v1alpha1"'
    )
    assert 'strict decoding error: unknown field "spec.serviceAccountName"' in outcomes[("docs/docs/guide.md#1", False)]
    table = script.report(found)
    assert "| AIMArtifact | 2 | 2 | 0 |" in table
    assert "| AIMService | 1 | 1 | 0 |" in table
    assert "| AIMProfile | 1 | 0 | 1 |" in table
    assert "| **all** | 6 | 4 | 2 |" in table
    assert (
        '| AIMProfile | 1 | no matches for kind "AIMProfile" in version "aim.eai.amd.com/v1alpha1" | `docs/docs/'
        in table
    )


def test_bad_input_is_one_line(tmp_path: Path, upstream: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert script.main(["--upstream-dir", str(tmp_path / "nowhere"), "--no-reference"]) == 2
    assert capsys.readouterr().err == f"error: --upstream-dir {tmp_path / 'nowhere'}: no such directory\n"
    assert script.main(["--upstream-dir", str(upstream[0]), "--commit", "0" * 40, "--no-reference"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --upstream-dir {upstream[0]}: git cat-file -e: ") and err.count("\n") == 1
