"""How a browser finds the lab's origins. As before the ``discovery`` factor, from the client
namespace's ``/etc/hosts`` (which ``ip netns exec`` mounts) and, in Chromium, its own
``--host-resolver-rules``: no lookup crosses the link. In a cell whose discovery reads DNS
(:data:`h2lab.spec.factors.BY_DNS`: ``https-rr``), as a browser as shipped does: every lab name
is looked up in the lab's resolver across the link (A and HTTPS records), so the browser runs
in a mount namespace of its own where ``/etc/hosts`` holds ``localhost`` only
(:func:`own_hosts`). The namespace's hosts file stays the same for every other client and
trial beside it."""

from __future__ import annotations

from pathlib import Path

from h2lab.clients import LoadContext
from h2lab.spec.factors import BY_DNS

LOCAL_ONLY = "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n"
"""The hosts file of a browser that resolves the lab's names through DNS."""
HOSTS_FILE = "hosts-by-dns"


def by_dns(ctx: LoadContext) -> bool:
    """Whether the trial's browser resolves the lab's names through the lab's resolver."""
    return ctx.discovery in BY_DNS


def local_hosts(workdir: Path) -> Path:
    """:data:`LOCAL_ONLY` as a file in a browser client's work folder (written once)."""
    path = workdir / HOSTS_FILE
    if not path.exists():
        path.write_text(LOCAL_ONLY)
    return path


def own_hosts(hostname: str | None = None) -> str:
    """A shell command (``unshare`` of a mount namespace, and of a UTS namespace named
    ``hostname`` when one is given, then ``sh -c``) that takes the hosts file as its first
    argument, bind-mounts it over ``/etc/hosts`` and runs the rest of its arguments. As root,
    or as the root of the lab's user namespace (rootless mode), before the browser drops to
    the user."""
    uts = f"--uts sh -c 'hostname {hostname} && " if hostname else "sh -c '"
    return f'unshare --mount {uts}mount --bind "$1" /etc/hosts && shift && exec "$@"\' sh'
