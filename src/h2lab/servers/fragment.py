"""The user's own server configuration fragment: ``nginx:conf=FILE``, ``h2o:conf=FILE``,
``apache:conf=FILE`` (docs/servers.md, "Your own configuration").

A relative ``FILE`` is relative to the experiment file (to the working directory on the command
line); the server spec is stored with the absolute path
(:func:`h2lab.spec.options.resolve_paths`), so a trial's ``server`` level names the file it ran
with and the server's recorded version carries the file's digest (:attr:`Fragment.digest`).
Where each server includes it is the adapter's choice; before any trial the adapter's ``check``
renders h2lab's configuration for a one-resource page with the fragment into a temporary folder
and runs the server's own configuration test there (:func:`check_setup`), so a bad fragment
fails validation with the server's own message and leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from h2lab import procs
from h2lab.errors import ProcessFailed, SpecError, telling_line
from h2lab.pages import Page
from h2lab.pages.manifest import PageWriter
from h2lab.servers import ServeContext
from h2lab.spec.options import Parser, option

NGINX_LOG_PREFIX = re.compile(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d (\[\w+\]) \d+#\d+: ")
INCLUDED_FROM = re.compile(r" \(included from file [^)]*\)")
CHECK_HOST = "check.h2lab.test"
CHECK_IP = "127.0.0.1"


@dataclass(frozen=True)
class Fragment:
    """A configuration file of the user's, included in h2lab's."""

    path: Path
    """absolute"""

    @classmethod
    def of(cls, value: str) -> Fragment:
        """``conf=`` as given (absolute after :func:`h2lab.spec.options.resolve_paths`);
        ValueError with one line when it is not a readable file."""
        path = Path(value)
        if not path.is_absolute():
            path = path.resolve()
        if not path.is_file():
            raise ValueError(f"no such file {value!r}")
        try:
            path.read_bytes()
        except OSError as exc:
            raise ValueError(f"cannot read {value!r} ({exc.strerror})") from None
        return cls(path)

    @property
    def digest(self) -> str:
        """12 hex digits of the file's SHA-256, for the server's recorded version."""
        return hashlib.sha256(self.path.read_bytes()).hexdigest()[:12]

    def describe(self) -> str:
        """``conf=/abs/file (sha256 0123456789ab)``, the tail of a server's version."""
        return f"conf={self.path} (sha256 {self.digest})"

    def failed(self, test: str, err: ProcessFailed) -> SpecError:
        """The one-line error of a failed configuration test ``test`` (``nginx -t``)."""
        return SpecError(self.path, test, message(err.stderr_tail) or f"exit {err.returncode}")

    def test(self, name: str, argv: list[str]) -> None:
        """Run the server's configuration test ``argv`` (called ``name``, ``nginx -t``) on
        h2lab's configuration with this fragment: SpecError naming the file when it fails."""
        try:
            procs.run(argv)
        except ProcessFailed as exc:
            raise self.failed(name, exc) from None


CONF_DOC = (
    "a configuration fragment of the user's, included in h2lab's own and tested with the "
    "server's configuration test before any trial (docs/servers.md)"
)


def conf_option(doc: str = CONF_DOC) -> Any:
    """The ``conf=FILE`` option's field of a server's options dataclass (none by default)."""
    return option(Parser("FILE", Fragment.of), None, doc, "conf=FILE")


def versioned(found: str, fragment: Fragment | None) -> str:
    """A server's version ``found``, followed by its fragment's path and digest when it has one."""
    return f"{found} {fragment.describe()}" if fragment else found


def message(output: str) -> str:
    """The line of a configuration test's output that says what is wrong, with the line after
    it when it ends in a colon (Apache: ``Syntax error on line 2 of FILE:`` then the reason)."""
    said = telling_line(output)
    said = NGINX_LOG_PREFIX.sub(r"\1 ", said)
    said = INCLUDED_FROM.sub("", said)  # h2o names h2lab's temporary config too
    if said.endswith(":"):
        lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
        at = lines.index(said)
        if at + 1 < len(lines):
            said += " " + lines[at + 1]
    return said


@dataclass(frozen=True)
class CheckSetup:
    """What a configuration test renders against (all inside one temporary folder)."""

    page: Page
    ctx: ServeContext
    """no namespace (``netns`` is empty): nothing is started"""


@contextmanager
def check_setup() -> Iterator[CheckSetup]:
    """A one-resource page, a state and a CA folder in a temporary folder removed on exit.
    No namespace: the configuration tests used here (``nginx -t``, ``h2o -t``, ``apache2
    -t``) parse, load certificates and open logs, and bind nothing."""
    root = Path(tempfile.mkdtemp(prefix="h2lab-conf-check-"))
    try:
        with PageWriter("conf-check", root=root / "pages") as w:
            w.add(f"https://{CHECK_HOST}/", b"<html></html>", content_type="text/html")
            page = w.commit()
        state = root / "srv"
        state.mkdir()
        yield CheckSetup(page, ServeContext("", {CHECK_HOST: CHECK_IP}, state, root / "tls"))
    finally:
        shutil.rmtree(root, ignore_errors=True)
