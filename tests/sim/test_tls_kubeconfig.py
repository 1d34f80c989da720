"""TLS: a real aiohttp server and client over the generated CA; kubeconfig: YAML and kubernetes-asyncio."""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import yaml
from aiohttp import web
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config

from omectl.sim.kubeconfig import KubeconfigEntry, build_kubeconfig, write_kubeconfig
from omectl.tls import CertificateAuthority, client_ssl_context, server_ssl_context

DEADLINE = 10.0
VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.5",
    "gitCommit": "0" * 40,
    "gitTreeState": "clean",
    "buildDate": "2025-01-01T00:00:00Z",
    "goVersion": "go1.23.8",
    "compiler": "gc",
    "platform": "linux/amd64",
}


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority.generate()


async def _serve(ca: CertificateAuthority) -> AsyncIterator[str]:
    async def version(request: web.Request) -> web.Response:
        return web.json_response({**VERSION, "scheme": request.scheme})

    app = web.Application()
    app.router.add_get("/version", version)
    app.router.add_get("/version/", version)  # kubernetes-asyncio's VersionApi asks with a trailing slash
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_ssl_context(ca.issue(["127.0.0.1", "localhost"])))
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"https://{host}:{port}"
    finally:
        await runner.cleanup()


@pytest.fixture
async def https_url(ca: CertificateAuthority) -> AsyncIterator[str]:
    async for url in _serve(ca):
        yield url


async def test_client_trusting_the_ca_talks_to_the_server(ca: CertificateAuthority, https_url: str) -> None:
    async with aiohttp.ClientSession() as session:
        response = await asyncio.wait_for(
            session.get(f"{https_url}/version", ssl=client_ssl_context(ca.cert_pem)), DEADLINE
        )
        async with response:
            assert response.status == 200
            assert await response.json() == {**VERSION, "scheme": "https"}


async def test_client_trusting_another_ca_fails_verification(https_url: str) -> None:
    other = CertificateAuthority.generate("someone-else")
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await asyncio.wait_for(
                session.get(f"{https_url}/version", ssl=client_ssl_context(other.cert_pem)), DEADLINE
            )


async def test_plain_http_client_is_refused_by_the_tls_server(https_url: str) -> None:
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientError):
            await asyncio.wait_for(session.get(https_url.replace("https://", "http://") + "/version"), DEADLINE)


def test_issued_certificate_has_sans_eku_and_one_year_validity(ca: CertificateAuthority) -> None:
    issued = ca.issue(["127.0.0.1", "localhost", "::1", "api.cluster-a.test"])
    cert = x509.load_pem_x509_certificate(issued.cert_pem)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("::1"),
    ]
    assert sans.get_values_for_type(x509.DNSName) == ["localhost", "api.cluster-a.test"]
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    assert cert.issuer == ca.certificate.subject
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert 365 <= lifetime.days <= 366
    assert b"PRIVATE KEY" in issued.key_pem


def test_issue_needs_a_host(ca: CertificateAuthority) -> None:
    with pytest.raises(ValueError, match="at least one host"):
        ca.issue([])


async def test_loaded_ca_issues_certificates_the_original_trusts(ca: CertificateAuthority) -> None:
    loaded = CertificateAuthority.load(ca.cert_pem, ca.key_pem)
    assert loaded.cert_pem == ca.cert_pem
    async for url in _serve(loaded):
        async with aiohttp.ClientSession() as session:
            response = await asyncio.wait_for(
                session.get(f"{url}/version", ssl=client_ssl_context(ca.cert_pem)), DEADLINE
            )
            async with response:
                assert response.status == 200


def test_load_rejects_a_mismatched_key(ca: CertificateAuthority) -> None:
    other = CertificateAuthority.generate()
    with pytest.raises(ValueError, match="does not match"):
        CertificateAuthority.load(ca.cert_pem, other.key_pem)


# --- kubeconfig -----------------------------------------------------------------------------------


def entries(ca: CertificateAuthority) -> list[KubeconfigEntry]:
    return [
        KubeconfigEntry("cluster-a", "https://127.0.0.1:6443", ca_pem=ca.cert_pem, token="tok-a", namespace="team-a"),
        KubeconfigEntry("cluster-b", "https://127.0.0.1:6444", insecure_skip_tls_verify=True),
        KubeconfigEntry("cluster-c", "http://127.0.0.1:8080", token="tok-c"),
    ]


def test_build_kubeconfig_has_one_cluster_user_and_context_per_entry(ca: CertificateAuthority) -> None:
    config = build_kubeconfig(entries(ca), current="cluster-b")
    assert config["apiVersion"] == "v1" and config["kind"] == "Config"
    assert config["current-context"] == "cluster-b"
    assert [c["name"] for c in config["clusters"]] == ["cluster-a", "cluster-b", "cluster-c"]
    assert [u["name"] for u in config["users"]] == ["cluster-a", "cluster-b", "cluster-c"]
    first = config["clusters"][0]["cluster"]
    assert base64.b64decode(first["certificate-authority-data"]) == ca.cert_pem
    assert "insecure-skip-tls-verify" not in first
    assert config["clusters"][1]["cluster"] == {
        "server": "https://127.0.0.1:6444",
        "insecure-skip-tls-verify": True,
    }
    assert config["users"][1]["user"] == {"token": "embedded"}
    assert config["contexts"][0] == {
        "name": "cluster-a",
        "context": {"cluster": "cluster-a", "user": "cluster-a", "namespace": "team-a"},
    }


def test_current_context_defaults_to_the_first_entry(ca: CertificateAuthority) -> None:
    assert build_kubeconfig(entries(ca))["current-context"] == "cluster-a"
    assert build_kubeconfig([])["current-context"] == ""


@pytest.mark.parametrize(
    ("bad_entries", "current", "message"),
    [
        ([KubeconfigEntry("a", "http://x"), KubeconfigEntry("a", "http://y")], None, "duplicate"),
        ([KubeconfigEntry("a", "http://x")], "b", "not one of the entries"),
        ([KubeconfigEntry("a", "https://x", ca_pem=b"pem", insecure_skip_tls_verify=True)], None, "not both"),
        ([KubeconfigEntry("", "http://x")], None, "needs a name"),
    ],
)
def test_build_kubeconfig_rejects_inconsistent_entries(
    bad_entries: list[KubeconfigEntry], current: str | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        build_kubeconfig(bad_entries, current)


def test_write_kubeconfig_is_private_yaml_in_created_folders(tmp_path: Path, ca: CertificateAuthority) -> None:
    target = tmp_path / "deep" / "er" / "kubeconfig"
    written = write_kubeconfig(target, entries(ca), current="cluster-c")
    assert written == target
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert yaml.safe_load(target.read_text()) == build_kubeconfig(entries(ca), current="cluster-c")
    assert list(target.parent.iterdir()) == [target]  # no temp file left behind


def test_write_kubeconfig_replaces_an_existing_file(tmp_path: Path, ca: CertificateAuthority) -> None:
    target = tmp_path / "kubeconfig"
    target.write_text("old: content\n")
    target.chmod(0o644)
    write_kubeconfig(target, entries(ca)[:1])
    assert yaml.safe_load(target.read_text())["current-context"] == "cluster-a"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_failed_write_leaves_no_temp_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        write_kubeconfig(tmp_path / "kubeconfig", [KubeconfigEntry("a", "http://x")], current="missing")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("context", "host", "token", "verify_ssl", "has_ca"),
    [
        ("cluster-a", "https://127.0.0.1:6443", "Bearer tok-a", True, True),
        ("cluster-b", "https://127.0.0.1:6444", "Bearer embedded", False, False),
        ("cluster-c", "http://127.0.0.1:8080", "Bearer tok-c", True, False),
    ],
)
async def test_kubernetes_asyncio_loads_each_context(
    tmp_path: Path,
    ca: CertificateAuthority,
    context: str,
    host: str,
    token: str,
    verify_ssl: bool,
    has_ca: bool,
) -> None:
    path = write_kubeconfig(tmp_path / "kubeconfig", entries(ca))
    configuration = k8s_client.Configuration()
    await k8s_config.load_kube_config(
        config_file=str(path),
        context=context,
        client_configuration=configuration,
        temp_file_path=str(tmp_path),
    )
    assert configuration.host == host
    assert configuration.api_key["BearerToken"] == token
    assert configuration.verify_ssl is verify_ssl
    if has_ca:
        ca_file = configuration.ssl_ca_cert
        assert ca_file is not None
        assert await asyncio.to_thread(Path(ca_file).read_bytes) == ca.cert_pem
    else:
        assert configuration.ssl_ca_cert is None


async def test_kubernetes_asyncio_reaches_a_tls_server_through_the_kubeconfig(
    tmp_path: Path, ca: CertificateAuthority, https_url: str
) -> None:
    path = write_kubeconfig(tmp_path / "kubeconfig", [KubeconfigEntry("live", https_url, ca_pem=ca.cert_pem)])
    api = await k8s_config.new_client_from_config(config_file=str(path), temp_file_path=str(tmp_path))
    async with api:
        version = await asyncio.wait_for(k8s_client.VersionApi(api).get_code(), DEADLINE)
    assert version.git_version == "v1.32.5"
