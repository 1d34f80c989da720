"""A small certificate authority (EC P-256): a CA, server certificates and SSL contexts, for the embedded API
server and the admission webhook server."""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["CertificateAuthority", "ServerCertificate", "client_ssl_context", "server_ssl_context"]

CA_VALIDITY = dt.timedelta(days=3650)
SERVER_VALIDITY = dt.timedelta(days=365)
# Certificates start slightly in the past so a client whose clock runs a little behind still accepts them.
CLOCK_SKEW = dt.timedelta(minutes=5)


@dataclass(frozen=True)
class ServerCertificate:
    """A PEM server certificate (leaf only) and its unencrypted PKCS#8 private key."""

    cert_pem: bytes
    key_pem: bytes


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return x509.DNSName(host)


class CertificateAuthority:
    """A self-signed EC P-256 CA that issues server certificates for the given hosts."""

    def __init__(self, certificate: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> None:
        self.certificate = certificate
        self.key = key
        self.cert_pem = certificate.public_bytes(serialization.Encoding.PEM)
        self.key_pem = _key_pem(key)

    @classmethod
    def generate(cls, common_name: str = "omectl-embedded-ca") -> CertificateAuthority:
        key = _new_key()
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        now = dt.datetime.now(dt.UTC)
        public_key = key.public_key()
        certificate = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - CLOCK_SKEW)
            .not_valid_after(now + CA_VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
            .sign(key, hashes.SHA256())
        )
        return cls(certificate, key)

    @classmethod
    def load(cls, cert_pem: bytes, key_pem: bytes) -> CertificateAuthority:
        certificate = x509.load_pem_x509_certificate(cert_pem)
        key = serialization.load_pem_private_key(key_pem, password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError("the CA key must be an EC private key")
        if certificate.public_key() != key.public_key():
            raise ValueError("the CA key does not match the CA certificate")
        return cls(certificate, key)

    def issue(self, hosts: list[str]) -> ServerCertificate:
        """A server certificate whose SANs are `hosts` (IP literals as IP SANs, other names as DNS)."""
        if not hosts:
            raise ValueError("a server certificate needs at least one host")
        key = _new_key()
        now = dt.datetime.now(dt.UTC)
        public_key = key.public_key()
        ca_ski = self.certificate.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
        certificate = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
            .issuer_name(self.certificate.subject)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - CLOCK_SKEW)
            .not_valid_after(now + SERVER_VALIDITY)
            .add_extension(x509.SubjectAlternativeName([_san(h) for h in dict.fromkeys(hosts)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=False,
                    crl_sign=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        return ServerCertificate(certificate.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def server_ssl_context(cert: ServerCertificate) -> ssl.SSLContext:
    """A TLS ≥ 1.2 server context presenting `cert` (HTTP/1.1 via ALPN, which aiohttp serves)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["http/1.1"])
    # `load_cert_chain` only reads files: write both PEMs to a private temporary directory for the call.
    with tempfile.TemporaryDirectory(prefix="omectl-tls-") as directory:
        cert_path = Path(directory, "tls.crt")
        key_path = Path(directory, "tls.key")
        cert_path.write_bytes(cert.cert_pem)
        descriptor = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(cert.key_pem)
        context.load_cert_chain(cert_path, key_path)
    return context


def client_ssl_context(ca_pem: bytes) -> ssl.SSLContext:
    """A TLS ≥ 1.2 client context that trusts only `ca_pem` and checks the server's host name."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cadata=ca_pem.decode("ascii"))
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context
