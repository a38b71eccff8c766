"""A local CA per state folder and a leaf certificate per origin hostname (ECDSA P-256)."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class CertPair:
    cert: Path
    key: Path


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


class LocalCA:
    """Created on first use in ``folder``; reused afterwards."""

    def __init__(self, folder: Path, valid_days: int = 30, name: str = "h2lab local CA") -> None:
        self.folder = folder
        self._valid = dt.timedelta(days=valid_days)
        self._name = name
        self.cert_path = folder / "ca.pem"
        self.key_path = folder / "ca.key"
        if not self.cert_path.exists():
            self._create()
        self._cert = x509.load_pem_x509_certificate(self.cert_path.read_bytes())
        key = serialization.load_pem_private_key(self.key_path.read_bytes(), None)
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        self._key = key

    def _create(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, self._name)])
        now = dt.datetime.now(dt.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + self._valid)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(key, hashes.SHA256())
        )
        _write_key(key, self.key_path)
        self.cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))

    def leaf(self, hostname: str) -> CertPair:
        """Certificate for ``hostname`` (created once, then reused); an IP literal gets an IP
        SAN, which is what a client checks for a URL with that address."""
        try:
            san: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(hostname))
        except ValueError:
            san = x509.DNSName(hostname)
        return self._issue(
            hostname,
            [san],
            [ExtendedKeyUsageOID.SERVER_AUTH],
            self.folder / f"{hostname}.pem",
        )

    def node(self, ip: str) -> CertPair:
        """Certificate of a cluster node at address ``ip`` (and its loopback), for both ends of
        a connection: Ray's TLS is mutual (created once, then reused)."""
        sans: list[x509.GeneralName] = [
            x509.IPAddress(ipaddress.ip_address(a)) for a in dict.fromkeys((ip, "127.0.0.1"))
        ]
        sans.append(x509.DNSName("localhost"))
        ekus = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
        return self._issue(f"node {ip}", sans, ekus, self.folder / "nodes" / f"{ip}.pem")

    def _issue(
        self,
        name: str,
        sans: list[x509.GeneralName],
        ekus: list[x509.ObjectIdentifier],
        cert_path: Path,
    ) -> CertPair:
        pair = CertPair(cert_path, cert_path.with_suffix(".key"))
        if pair.cert.exists():
            return pair
        pair.cert.parent.mkdir(parents=True, exist_ok=True)
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + self._valid)
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(ekus), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        _write_key(key, pair.key)
        # full chain: leaf then CA
        pair.cert.write_bytes(
            cert.public_bytes(serialization.Encoding.PEM)
            + self._cert.public_bytes(serialization.Encoding.PEM)
        )
        return pair

    def spki_sha256(self) -> str:
        """Base64 SHA-256 of the CA's SubjectPublicKeyInfo (Chromium's SPKI pin format)."""
        der = self._cert.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return base64.b64encode(hashlib.sha256(der).digest()).decode()
