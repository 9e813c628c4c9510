"""A certificate authority made in the test run, and server certificates it signs, so that tests talk TLS to the
fake API server (and to webhook receivers) and exercise certificate verification rather than skipping it."""
from __future__ import annotations

import datetime
import functools
import ipaddress
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class TestCA:
    __test__ = False

    ca_pem: str
    ca_file: str  # the CA on disk, for --ca-cert-file
    cert_file: str  # a server certificate for 127.0.0.1, ::1 and localhost
    key_file: str

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert_file, self.key_file)
        return context


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_ca(directory: Path, *, common_name: str = "gpu-portal test CA") -> TestCA:
    """A CA and a server certificate signed by it, written to `directory`."""
    now = datetime.datetime.now(datetime.timezone.utc)
    valid = {"not_valid_before": now - datetime.timedelta(hours=1), "not_valid_after": now + datetime.timedelta(days=2)}
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder(subject_name=_name(common_name), issuer_name=_name(common_name),
                                public_key=ca_key.public_key(), serial_number=x509.random_serial_number(), **valid)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    key = ec.generate_private_key(ec.SECP256R1())
    sans = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            x509.IPAddress(ipaddress.ip_address("::1"))]
    cert = (
        x509.CertificateBuilder(subject_name=_name("fake-kube-apiserver"), issuer_name=ca_cert.subject,
                                public_key=key.public_key(), serial_number=x509.random_serial_number(), **valid)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM).decode()
    paths = {name: directory / name for name in ("ca.crt", "tls.crt", "tls.key")}
    paths["ca.crt"].write_text(ca_pem)
    paths["tls.crt"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths["tls.key"].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                   serialization.NoEncryption()))
    return TestCA(ca_pem=ca_pem, ca_file=str(paths["ca.crt"]), cert_file=str(paths["tls.crt"]),
                  key_file=str(paths["tls.key"]))


@functools.lru_cache(maxsize=1)
def test_ca() -> TestCA:
    """The run's CA (made once per process; its directory lives as long as the process)."""
    directory = tempfile.mkdtemp(prefix="gpu-portal-test-ca-")
    return make_ca(Path(directory))


test_ca.__test__ = False  # type: ignore[attr-defined]
