"""What is installed, what is missing, with versions."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from h2lab import programs
from h2lab.paths import find_build, looked_in


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def _version(program: programs.Program, command: list[str] | None = None) -> str | None:
    """None if it is not installed, else its version ("unknown version" if it printed none)."""
    argv = program.version_argv(command)
    if not shutil.which(argv[0]) and not Path(argv[0]).exists():
        return None
    return program.version(command) or "unknown version"


def _okhttp_checks() -> list[Check]:
    """Java, and the OkHttp client's jar for the current sources with its versions (running it
    takes a JVM start, about 0.3 s)."""
    from h2lab.clients import okhttp_build
    from h2lab.errors import H2LabError

    java = okhttp_build.java_version()
    out = [Check(programs.JAVA.name, java is not None, java or okhttp_build.JAVA_HINT)]
    jar = okhttp_build.jar_path()
    if not jar.exists() or java is None:
        where = looked_in(f"{jar.parent.name}/{jar.name}")
        return [*out, Check(programs.OKHTTP.doctor, False, f"{where}: make setup")]
    try:
        detail = f"{okhttp_build.jar_version(jar)} ({jar})"
    except H2LabError as exc:
        return [*out, Check(programs.OKHTTP.doctor, False, exc.line())]
    return [*out, Check(programs.OKHTTP.doctor, True, detail)]


def checks() -> list[Check]:
    from h2lab.errors import MissingTool
    from h2lab.net.rattan import RATTAN_VERSION, rattan_binary

    out = []
    try:
        rattan = rattan_binary()
        v = _version(programs.RATTAN, [str(rattan)])
        detail = f"{v} ({rattan}; pinned {RATTAN_VERSION})"
        out.append(Check(programs.RATTAN.doctor, v is not None, detail))
    except MissingTool as exc:
        out.append(Check(programs.RATTAN.doctor, False, exc.hint))
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
    out += _debian12_checks()
    from h2lab.servers.origin import SOURCE_DIR, source_hash

    relative = f"origin-{source_hash(SOURCE_DIR)}"
    built = find_build(relative)
    out.append(
        Check(
            programs.ORIGIN.doctor,
            built is not None,
            str(built) if built is not None else f"{looked_in(relative)}: make setup",
        )
    )
    from h2lab.servers import caddy_build

    relative = f"{caddy_build.folder_name()}/{caddy_build.BINARY}"
    built = find_build(relative)
    detail = str(built) if built is not None else f"{looked_in(relative)}: make setup"
    out.append(Check(programs.CADDY_211.doctor, built is not None, detail))
    out += _okhttp_checks()
    out += _debian13_checks()
    cc = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
    avail = cc.read_text().split() if cc.exists() else []
    out.append(Check("tcp congestion control", "cubic" in avail, " ".join(avail) or "unknown"))
    out.append(_mode_check())
    return out


def _debian12_checks() -> list[Check]:
    """The host's programs that have a row of their own, each with its version (or where it
    is, for one without a version switch) or the package to install."""
    out = []
    for p in programs.of(programs.DEBIAN12):
        if not p.doctor:
            continue
        # one without a version switch (certutil): where it is
        v = _version(p) if p.pattern else shutil.which(p.executable)
        out.append(Check(p.doctor, v is not None, v or p.hint()))
    return out


def _debian13_checks() -> list[Check]:
    """Debian 13's builds (:mod:`h2lab.debian13`), as their folder recorded them when made."""
    from h2lab import debian13

    found = debian13.versions()
    return [
        Check(
            p.doctor,
            p.name in found,
            f"{found[p.name]} ({debian13.root()})"
            if p.name in found
            else f"{looked_in(debian13.root().name)}: make setup",
        )
        for p in debian13.PROGRAMS
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
