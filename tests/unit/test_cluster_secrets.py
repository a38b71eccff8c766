"""h2lab.cluster.secrets and LocalCA.node: the cluster's token and CA, and the certificate each
Ray process issues itself for its address (mutual TLS)."""

from __future__ import annotations

import datetime as dt
import ipaddress
import re
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from h2lab.cluster.secrets import CLUSTER_CA_DAYS, TOKEN, check_secrets, make_secrets, ray_env
from h2lab.errors import SpecError


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One secrets folder (key generation is the slow part) for the read-only tests."""
    f = tmp_path_factory.mktemp("cluster") / "secrets"
    make_secrets(f)
    return f


def _node_cert(folder: Path, ip: str) -> tuple[x509.Certificate, list[x509.Certificate]]:
    env = ray_env(folder, ip)
    chain = x509.load_pem_x509_certificates(Path(env["RAY_TLS_SERVER_CERT"]).read_bytes())
    return chain[0], chain


def _ca(folder: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate((folder / "ca.pem").read_bytes())


# ------------------------------------------------------------------ make_secrets


def test_make_secrets_makes_a_private_folder_token_and_ca(tmp_path: Path) -> None:
    f = tmp_path / "a" / "secrets"
    make_secrets(f)
    assert sorted(p.name for p in f.iterdir()) == ["ca.key", "ca.pem", TOKEN]
    assert _mode(f) == 0o700
    token = f / TOKEN
    assert _mode(token) == 0o600 and _mode(f / "ca.key") == 0o600
    text = token.read_text()
    assert re.fullmatch(r"[0-9a-f]{64}\n", text), text
    ca = _ca(f)
    assert ca.subject.rfc4514_string() == "CN=h2lab cluster CA"
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True


def test_make_secrets_again_keeps_the_token_and_the_ca(tmp_path: Path) -> None:
    f = tmp_path / "secrets"
    make_secrets(f)
    token, ca = (f / TOKEN).read_bytes(), (f / "ca.pem").read_bytes()
    make_secrets(f)
    assert (f / TOKEN).read_bytes() == token
    assert (f / "ca.pem").read_bytes() == ca


def test_make_secrets_makes_an_existing_folder_private(tmp_path: Path) -> None:
    f = tmp_path / "open"
    f.mkdir(mode=0o755)
    f.chmod(0o755)
    make_secrets(f)
    assert _mode(f) == 0o700


def test_two_folders_have_different_tokens(tmp_path: Path) -> None:
    make_secrets(tmp_path / "one")
    make_secrets(tmp_path / "two")
    assert (tmp_path / "one" / TOKEN).read_text() != (tmp_path / "two" / TOKEN).read_text()


# ------------------------------------------------------------------ check_secrets


def test_check_secrets_on_an_empty_folder_names_the_flag_and_the_remedy(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as exc:
        check_secrets(tmp_path)
    assert exc.value.source == "command line"
    assert exc.value.field == "--secrets"
    assert exc.value.reason == (
        f"{tmp_path / TOKEN} is missing (make the folder with `h2lab cluster secrets "
        f"{tmp_path}` and copy it to every node)"
    )


@pytest.mark.parametrize("missing", [TOKEN, "ca.pem", "ca.key"])
def test_check_secrets_names_the_file_missing(tmp_path: Path, missing: str) -> None:
    f = tmp_path / "secrets"
    make_secrets(f)
    (f / missing).unlink()
    with pytest.raises(SpecError) as exc:
        check_secrets(f, "--cluster-secrets")
    assert (exc.value.source, exc.value.field) == ("command line", "--cluster-secrets")
    assert exc.value.reason.startswith(f"{f / missing} is missing")


def test_check_secrets_passes_a_whole_folder(folder: Path) -> None:
    check_secrets(folder)


# ------------------------------------------------------------------ ray_env


def test_ray_env_turns_on_token_auth_and_mutual_tls(folder: Path) -> None:
    env = ray_env(folder, "10.1.2.3")
    assert env["RAY_AUTH_MODE"] == "token"
    assert env["RAY_USE_TLS"] == "1"
    assert env["RAY_USAGE_STATS_ENABLED"] == "0"
    assert env["RAY_AUTH_TOKEN_PATH"] == str(folder / TOKEN)
    assert env["RAY_TLS_CA_CERT"] == str(folder / "ca.pem")
    assert env["RAY_TLS_SERVER_CERT"] == str(folder / "nodes" / "10.1.2.3.pem")
    assert env["RAY_TLS_SERVER_KEY"] == str(folder / "nodes" / "10.1.2.3.key")
    for key in ("RAY_AUTH_TOKEN_PATH", "RAY_TLS_CA_CERT", "RAY_TLS_SERVER_CERT"):
        assert Path(env[key]).is_file(), key
    assert _mode(Path(env["RAY_TLS_SERVER_KEY"])) == 0o600


def test_ray_env_issues_a_nodes_certificate_once(folder: Path) -> None:
    first = Path(ray_env(folder, "10.9.9.9")["RAY_TLS_SERVER_CERT"]).read_bytes()
    assert Path(ray_env(folder, "10.9.9.9")["RAY_TLS_SERVER_CERT"]).read_bytes() == first


def test_ray_env_refuses_a_host_name(folder: Path) -> None:
    with pytest.raises(ValueError, match=r"'head\.example' does not appear to be an IPv4 or IPv6"):
        ray_env(folder, "head.example")
    assert not (folder / "nodes" / "head.example.pem").exists()


def test_ray_env_without_secrets_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as exc:
        ray_env(tmp_path, "10.1.2.3")
    assert exc.value.field == "--secrets"


# ------------------------------------------------------------------ the node certificate


def test_node_certificate_names_its_address_and_loopback(folder: Path) -> None:
    cert, _ = _node_cert(folder, "10.1.2.3")
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address("10.1.2.3"),
        ipaddress.ip_address("127.0.0.1"),
    ]
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    assert cert.subject.rfc4514_string() == "CN=node 10.1.2.3"


def test_node_certificate_of_loopback_names_it_once(folder: Path) -> None:
    cert, _ = _node_cert(folder, "127.0.0.1")
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]


def test_node_certificate_serves_both_ends_of_a_connection(folder: Path) -> None:
    cert, _ = _node_cert(folder, "10.1.2.3")
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert set(eku) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False


def test_node_certificate_is_signed_by_the_folders_ca(folder: Path) -> None:
    cert, chain = _node_cert(folder, "10.1.2.3")
    ca = _ca(folder)
    assert cert.issuer == ca.subject
    assert cert.signature_hash_algorithm is not None
    pub = ca.public_key()
    assert isinstance(pub, ec.EllipticCurvePublicKey)
    pub.verify(
        cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(cert.signature_hash_algorithm)
    )  # raises InvalidSignature otherwise
    assert chain == [cert, ca]  # full chain: leaf, then the CA


def test_node_certificate_is_not_signed_by_another_ca(folder: Path, tmp_path: Path) -> None:
    from cryptography.exceptions import InvalidSignature

    other = tmp_path / "other"
    make_secrets(other)
    cert, _ = _node_cert(folder, "10.1.2.3")
    pub = _ca(other).public_key()
    assert isinstance(pub, ec.EllipticCurvePublicKey)
    assert cert.signature_hash_algorithm is not None
    with pytest.raises(InvalidSignature):
        pub.verify(
            cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(cert.signature_hash_algorithm)
        )


def test_node_certificate_is_valid_about_a_year_from_now(folder: Path) -> None:
    cert, _ = _node_cert(folder, "10.1.2.3")
    now = dt.datetime.now(dt.UTC)
    assert cert.not_valid_before_utc <= now
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert abs(lifetime - dt.timedelta(days=CLUSTER_CA_DAYS)) <= dt.timedelta(hours=2)
    assert CLUSTER_CA_DAYS == 365
    left = cert.not_valid_after_utc - now
    assert dt.timedelta(days=364) < left <= dt.timedelta(days=365)
