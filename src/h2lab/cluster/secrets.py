"""The cluster's secrets folder and the environment that makes Ray use it.

``h2lab cluster secrets DIR`` writes ``token`` (Ray's token authentication, ``RAY_AUTH_MODE=
token``) and a CA (``ca.pem``, ``ca.key``) from which every process issues itself a
certificate for its node address (``nodes/<ip>.pem``; Ray's gRPC checks the address against
the certificate and asks the client for one too: mutual TLS, ``RAY_USE_TLS=1``). Whoever holds
the folder is a member of the cluster: copy it to every node and the driver's machine only.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
from pathlib import Path

from h2lab.errors import SpecError
from h2lab.tls import LocalCA

TOKEN = "token"
CLUSTER_CA_DAYS = 365


def make_secrets(folder: Path) -> None:
    """A new token and CA in ``folder`` (created 0700); an existing one is kept."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    folder.chmod(0o700)
    token = folder / TOKEN
    if not token.exists():
        fd = os.open(token, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32) + "\n")
    LocalCA(folder, valid_days=CLUSTER_CA_DAYS, name="h2lab cluster CA")


def check_secrets(folder: Path, flag: str = "--secrets") -> None:
    """``folder`` holds a token and a CA, or one line says what is missing."""
    for name in (TOKEN, "ca.pem", "ca.key"):
        if not (folder / name).is_file():
            raise SpecError(
                "command line",
                flag,
                f"{folder / name} is missing (make the folder with `h2lab cluster secrets "
                f"{folder}` and copy it to every node)",
            )


def ray_env(folder: Path, ip: str) -> dict[str, str]:
    """The environment of a Ray process at address ``ip``: token authentication, mutual TLS
    with a certificate for ``ip`` (issued once from the cluster's CA), no usage statistics."""
    check_secrets(folder)
    ipaddress.ip_address(ip)  # raises ValueError for a host name: Ray needs the address
    ca = LocalCA(folder, valid_days=CLUSTER_CA_DAYS, name="h2lab cluster CA")
    pair = ca.node(ip)
    return {
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN_PATH": str(folder / TOKEN),
        "RAY_USE_TLS": "1",
        "RAY_TLS_SERVER_CERT": str(pair.cert),
        "RAY_TLS_SERVER_KEY": str(pair.key),
        "RAY_TLS_CA_CERT": str(ca.cert_path),
        "RAY_USAGE_STATS_ENABLED": "0",
    }
