"""Every external program h2lab runs, declared once: its name, how to print its version (a
command and a regex), and where it comes from: a Debian 12 package (the host's, installed by
``scripts/setup.sh``), the Debian 13 root filesystem (:mod:`h2lab.debian13`), or a build of
setup's (Rattan, the Go origin server, the OkHttp jar).

The adapters' ``version()``, ``h2lab doctor``, :mod:`h2lab.debian13` and the setup script read
these records, so a new program is one more record here. ``setup.sh`` keeps its own list of
Debian packages, because it installs them before h2lab's Python environment exists (and the
container image installs them in a layer made before the sources are copied); a unit test
holds that list equal to :func:`debian12_packages`.

``python -m h2lab.programs --debian-packages`` prints the Debian 12 packages (one a line),
``--debian13-packages`` those of the Debian 13 root filesystem.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from h2lab import procs

DEBIAN12 = "debian12"
"""A package of the host's Debian 12, installed with ``apt-get`` by ``scripts/setup.sh``."""
DEBIAN13 = "debian13"
"""A package of Debian 13, unpacked into the root filesystem :mod:`h2lab.debian13` makes."""
BUILT = "built"
"""Built by ``scripts/setup.sh`` from pinned sources into the cache (its owner finds it)."""


@dataclass(frozen=True)
class Program:
    name: str
    """what h2lab and ``h2lab doctor`` call it"""
    source: str
    """:data:`DEBIAN12`, :data:`DEBIAN13` or :data:`BUILT`"""
    package: str = ""
    """the Debian package holding it (Debian 12 and 13)"""
    executable: str = ""
    """a name on PATH or an absolute path (Debian 12), the path inside the root filesystem
    (Debian 13); empty for a build (where it is, is its owner's business: the cache) and for
    a package with nothing to run"""
    version_args: tuple[str, ...] = ()
    """the arguments that make it print its version"""
    pattern: str = ""
    """a regex whose first group is the version in what it printed (``^`` at each line);
    empty: it has no version to print"""
    release: str = ""
    """Debian 13: the upstream release its version must start with (``1.26.``): a mirror
    that moved to another release fails setup instead of changing the lab's servers"""
    doctor: str = ""
    """the row ``h2lab doctor`` shows it under; empty: no row of its own (another row, or
    nothing, tells of it)"""
    changelog: str = ""
    """Debian 13: a program that prints no version (ngtcp2's example server): the path of its
    package's ``changelog.Debian.gz`` in the root filesystem, whose first line :attr:`pattern`
    reads instead"""

    def version_in(self, text: str) -> str | None:
        """The version in ``text`` (what :meth:`version_argv` printed); None if absent."""
        m = re.search(self.pattern, text, re.MULTILINE) if self.pattern else None
        return m.group(1) if m else None

    def version_argv(self, command: Sequence[str] | None = None) -> list[str]:
        """The command printing its version: ``command`` (how to run it, when that is not
        :attr:`executable` alone: Debian 13's loader, a build's path) and its arguments."""
        return [*(command if command is not None else [self.executable]), *self.version_args]

    def version(self, command: Sequence[str] | None = None) -> str | None:
        """Its version as running it says; None when it does not run or says none."""
        return self.version_in(procs.version_text(self.version_argv(command)))

    def hint(self) -> str:
        """How to get it."""
        if self.source == DEBIAN12:
            return f"apt-get install {self.package}"
        return "make setup"


def _deb12(
    name: str, package: str, args: Sequence[str], pattern: str, executable: str = "", row: str = ""
) -> Program:
    return Program(
        name, DEBIAN12, package, executable or name, tuple(args), pattern, doctor=row or name
    )


def _deb13(name: str, path: str, args: Sequence[str], pattern: str, release: str) -> Program:
    return Program(
        name, DEBIAN13, name, path, tuple(args), pattern, release, doctor=f"{name} (Debian 13)"
    )


# Debian 12, in `h2lab doctor`'s order
NGINX = _deb12("nginx", "nginx", ["-v"], r"nginx/(\S+)")
H2O = _deb12("h2o", "h2o", ["--version"], r"h2o version (\S+)")
APACHE = _deb12("apache2", "apache2", ["-v"], r"Apache/(\S+)")
HAPROXY = _deb12("haproxy", "haproxy", ["-v"], r"HAProxy version (\S+)")
NGHTTP = _deb12("nghttp", "nghttp2-client", ["--version"], r"nghttp2/(\S+)")
H2LOAD = _deb12("h2load", "nghttp2-client", ["--version"], r"nghttp2/(\S+)")
IPERF3 = _deb12("iperf3", "iperf3", ["--version"], r"iperf (\S+)")
IP = _deb12("ip", "iproute2", ["-V"], r"iproute2-(\S+)", row="ip (iproute2)")
NSENTER = _deb12("nsenter", "util-linux", ["--version"], r"util-linux (\S+)")
PING = _deb12("ping", "iputils-ping", ["-V"], r"iputils-(\S+)")
# the lab's resolver (h2lab.net.dns); in /usr/sbin, which a user's PATH may lack
UNBOUND = _deb12("unbound", "unbound", ["-V"], r"^Version (\S+)", "/usr/sbin/unbound")
# the udp-blocked discovery's dropped UDP (h2lab.net.firewall); also in /usr/sbin
NFT = _deb12("nft", "nftables", ["--version"], r"nftables v(\S+)", "/usr/sbin/nft")
# capture = ["pcap"]: tcpdump records a trial's packets; tshark decodes them (tests)
TCPDUMP = _deb12("tcpdump", "tcpdump", ["--version"], r"tcpdump version (\S+)")
TSHARK = _deb12("tshark", "tshark", ["--version"], r"TShark \(Wireshark\) (\S+)")
CHROMIUM = _deb12(
    "chromium", "chromium", ["--version"], r"Chromium (\S+)", "/usr/lib/chromium/chromium"
)
FIREFOX = _deb12(
    "firefox-esr",
    "firefox-esr",
    ["--version"],
    r"Firefox (\S+)",
    "/usr/lib/firefox-esr/firefox-esr",
)
# certutil has no version switch: Firefox's profiles trust the lab CA with it
CERTUTIL = _deb12("certutil", "libnss3-tools", [], "")
# The OkHttp client's (okhttp/): doctor's java row and h2lab okhttp row tell of both
JAVA = Program(
    "java", DEBIAN12, "default-jdk-headless", "java", ("-version",), r'version "([^"]+)"'
)
MAVEN = Program("mvn", DEBIAN12, "maven", "mvn", ("--version",), r"Apache Maven (\S+)")
# setup.sh's own: the npm references' download (curl) and Debian 13's root filesystem
CURL_SETUP = Program("curl", DEBIAN12, "curl", "curl", ("--version",), r"^curl (\S+)")
MMDEBSTRAP = Program("mmdebstrap", DEBIAN12, "mmdebstrap", "mmdebstrap", ("--version",),
                     r"mmdebstrap (\S+)")  # fmt: skip
# per-namespace sysctls (h2lab.net.netns.sysctl)
SYSCTL = Program("sysctl", DEBIAN12, "procps", "sysctl", ("--version",), r"procps-ng (\S+)")
# not a program: the Apache manual, a page of the tests (dir: import) and of the corpus
APACHE_MANUAL = Program("apache2 manual", DEBIAN12, "apache2-doc")
# not a program: the Public Suffix List, which tells a page's first party (h2lab.pages.sites)
PUBLIC_SUFFIX_LIST = Program("public suffix list", DEBIAN12, "publicsuffix")

# Debian 13's, in the order of the root filesystem's package list (which names its folder)
NGINX_13 = _deb13("nginx", "usr/sbin/nginx", ["-v"], r"nginx/(\S+)", "1.26.")
HAPROXY_13 = _deb13("haproxy", "usr/sbin/haproxy", ["-v"], r"HAProxy version (\S+)", "3.0.")
CURL_13 = _deb13("curl", "usr/bin/curl", ["--version"], r"^curl (\S+)", "8.14.")
# Go, built with cgo: linked against libc, so run as the others; Debian's prints the bare
# version ("2.6.2"), upstream's a "v" before it
CADDY_13 = _deb13("caddy", "usr/bin/caddy", ["version"], r"^v?(\d+\.\d+\.\d+\S*)", "2.6.")
# ngtcp2's example HTTP/3 server (GnuTLS), the one QUIC stack of Debian 13 with BBR; it prints
# no version: its package's changelog tells it
NGTCP2_13 = Program(
    "ngtcp2-server", DEBIAN13, "ngtcp2-server", "usr/sbin/gtlsserver", (), r"^\S+ \((\S+)\)",
    "1.11.", doctor="ngtcp2-server (Debian 13)",
    changelog="usr/share/doc/ngtcp2-server/changelog.Debian.gz",
)  # fmt: skip

# setup.sh's builds (scripts/setup.sh): their owners find them in the cache
RATTAN = Program("rattan", BUILT, version_args=("--version",), pattern=r"rattan (\S+)",
                 doctor="rattan")  # fmt: skip
ORIGIN = Program("h2lab-origin", BUILT, version_args=("-version",), pattern=r"^(h2lab-origin .+)",
                 doctor="h2lab origin (Go)")  # fmt: skip
CADDY_211 = Program("caddy@2.11", BUILT, version_args=("version",), pattern=r"^v?(\d+\.\d+\.\d+)",
                    doctor="caddy@2.11 (Go)")  # fmt: skip
OKHTTP = Program("h2lab-okhttp", BUILT, version_args=("-version",), pattern=r"^(h2lab-okhttp .+)",
                 doctor="h2lab okhttp (JVM)")  # fmt: skip

PROGRAMS: tuple[Program, ...] = (
    NGINX, H2O, APACHE, HAPROXY, NGHTTP, H2LOAD, IPERF3, IP, NSENTER, PING, UNBOUND, NFT,
    TCPDUMP, TSHARK, CHROMIUM, FIREFOX, CERTUTIL, JAVA, MAVEN, CURL_SETUP, MMDEBSTRAP, SYSCTL,
    APACHE_MANUAL, PUBLIC_SUFFIX_LIST, NGINX_13, HAPROXY_13, CURL_13, CADDY_13, NGTCP2_13,
    RATTAN, ORIGIN, OKHTTP,
)  # fmt: skip
"""Every record, each once."""


def of(source: str) -> tuple[Program, ...]:
    """The records of one source, in :data:`PROGRAMS`' order."""
    return tuple(p for p in PROGRAMS if p.source == source)


def debian12_packages() -> list[str]:
    """The host's Debian packages h2lab needs (setup.sh's list), each once."""
    return list(dict.fromkeys(p.package for p in of(DEBIAN12)))


def debian13_packages() -> list[str]:
    """The packages of the Debian 13 root filesystem, in order."""
    return list(dict.fromkeys(p.package for p in of(DEBIAN13)))


def main(argv: Sequence[str]) -> int:
    if list(argv) == ["--debian-packages"]:
        print("\n".join(debian12_packages()))
    elif list(argv) == ["--debian13-packages"]:
        print("\n".join(debian13_packages()))
    else:
        print("usage: python -m h2lab.programs --debian-packages|--debian13-packages")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
