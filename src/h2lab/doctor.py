"""What is installed, what is missing, with versions."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from h2lab import procs
from h2lab.paths import find_build, looked_in


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def _version(argv: list[str], pattern: str) -> str | None:
    if not shutil.which(argv[0]) and not Path(argv[0]).exists():
        return None
    m = re.search(pattern, procs.version_text(argv))
    return m.group(1) if m else "unknown version"


def _okhttp_checks() -> list[Check]:
    """Java, and the OkHttp client's jar for the current sources with its versions (running it
    takes a JVM start, about 0.3 s)."""
    from h2lab.clients import okhttp_build
    from h2lab.errors import H2LabError

    java = okhttp_build.java_version()
    out = [Check("java", java is not None, java or okhttp_build.JAVA_HINT)]
    jar = okhttp_build.jar_path()
    if not jar.exists() or java is None:
        where = looked_in(f"{jar.parent.name}/{jar.name}")
        return [*out, Check("h2lab okhttp (JVM)", False, f"{where}: make setup")]
    try:
        detail = f"{okhttp_build.jar_version(jar)} ({jar})"
    except H2LabError as exc:
        return [*out, Check("h2lab okhttp (JVM)", False, exc.line())]
    return [*out, Check("h2lab okhttp (JVM)", True, detail)]


def checks() -> list[Check]:
    from h2lab.errors import MissingTool
    from h2lab.net.rattan import RATTAN_VERSION, rattan_binary

    out = []
    try:
        rattan = rattan_binary()
        v = _version([str(rattan), "--version"], r"rattan (\S+)")
        out.append(Check("rattan", v is not None, f"{v} ({rattan}; pinned {RATTAN_VERSION})"))
    except MissingTool as exc:
        out.append(Check("rattan", False, exc.hint))
    from h2lab.net import calibration

    cal = calibration.load()
    out.append(
        Check(
            "rattan delay overhead",
            True,
            f"{cal.overhead_ms:.3f} ms per direction, measured {cal.measured_at} "
            f"(RTT {cal.asked_rtt_ms:g} ms asked, median {cal.measured_rtt_ms} ms of {cal.probes})"
            if cal
            else "not measured since boot (the first link measures it, about 4 s)",
        )
    )
    tools = [
        ("nginx", ["nginx", "-v"], r"nginx/(\S+)", "apt-get install nginx"),
        ("h2o", ["h2o", "--version"], r"h2o version (\S+)", "apt-get install h2o"),
        ("apache2", ["apache2", "-v"], r"Apache/(\S+)", "apt-get install apache2"),
        ("haproxy", ["haproxy", "-v"], r"HAProxy version (\S+)", "apt-get install haproxy"),
        ("nghttp", ["nghttp", "--version"], r"nghttp2/(\S+)", "apt-get install nghttp2-client"),
        ("h2load", ["h2load", "--version"], r"nghttp2/(\S+)", "apt-get install nghttp2-client"),
        ("iperf3", ["iperf3", "--version"], r"iperf (\S+)", "apt-get install iperf3"),
        ("ip (iproute2)", ["ip", "-V"], r"iproute2-(\S+)", "apt-get install iproute2"),
        ("nsenter", ["nsenter", "--version"], r"util-linux (\S+)", "apt-get install util-linux"),
        ("ping", ["ping", "-V"], r"iputils-(\S+)", "apt-get install iputils-ping"),
        # capture = ["pcap"]: tcpdump records a trial's packets; tshark decodes them (tests)
        ("tcpdump", ["tcpdump", "--version"], r"tcpdump version (\S+)", "apt-get install tcpdump"),
        (
            "tshark",
            ["tshark", "--version"],
            r"TShark \(Wireshark\) (\S+)",
            "apt-get install tshark",
        ),
        (
            "chromium",
            ["/usr/lib/chromium/chromium", "--version"],
            r"Chromium (\S+)",
            "apt-get install chromium",
        ),
        (
            "firefox-esr",
            ["/usr/lib/firefox-esr/firefox-esr", "--version"],
            r"Firefox (\S+)",
            "apt-get install firefox-esr",
        ),
    ]
    for name, argv, pat, hint in tools:
        v = _version(argv, pat)
        out.append(Check(name, v is not None, v or hint))
    # certutil (libnss3-tools) has no version switch: Firefox's profiles trust the lab CA with it
    certutil = shutil.which("certutil")
    out.append(Check("certutil", certutil is not None, certutil or "apt-get install libnss3-tools"))
    from h2lab.servers.origin import SOURCE_DIR, source_hash

    relative = f"origin-{source_hash(SOURCE_DIR)}"
    built = find_build(relative)
    out.append(
        Check(
            "h2lab origin (Go)",
            built is not None,
            str(built) if built is not None else f"{looked_in(relative)}: make setup",
        )
    )
    out += _okhttp_checks()
    out += _debian13_checks()
    cc = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
    avail = cc.read_text().split() if cc.exists() else []
    out.append(Check("tcp congestion control", "cubic" in avail, " ".join(avail) or "unknown"))
    out.append(_mode_check())
    return out


def _debian13_checks() -> list[Check]:
    """Debian 13's builds (:mod:`h2lab.debian13`), as their folder recorded them when made."""
    from h2lab import debian13

    found = debian13.versions()
    return [
        Check(
            f"{program} (Debian 13)",
            program in found,
            f"{found[program]} ({debian13.root()})"
            if program in found
            else f"{looked_in(debian13.root().name)}: make setup",
        )
        for program in debian13.PACKAGES
    ]


def _mode_check() -> Check:
    """Root mode as root; else whether rootless mode works here and, if not, the switch that
    forbids it (docs/rootless.md)."""
    import os

    from h2lab.net import userns

    if os.geteuid() == 0:
        return Check("root", True, "root mode (network namespaces on the host)")
    why = userns.probe()
    allowed = userns.read_sysctl("net.ipv4.tcp_allowed_congestion_control") or "unknown"
    rmem_max = int(userns.read_sysctl("net.core.rmem_max") or 0)
    detail = why or (
        f"rootless mode: a user namespace per lab; congestion control: {allowed}; "
        + userns.packet_buffer_note(rmem_max)
    )
    return Check("rootless", why is None, detail)
