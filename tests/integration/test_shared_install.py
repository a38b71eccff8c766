"""The shared installation: ``make setup`` as root publishes its builds in /var/cache/h2lab
(scripts/setup.sh), so a fresh ordinary user, with an empty home and none of h2lab's variables,
runs h2lab rootless with no step of their own: the checkout's ``.venv/bin/h2lab load`` in
Chromium, Rattan found in the shared place, nothing built in the user's cache."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from h2lab.net.rattan import RATTAN_BUILD
from h2lab.paths import SYSTEM_CACHE
from tests.integration.conftest import ROOT
from tests.integration.test_rootless import PATH, _test_user


def test_a_fresh_user_loads_a_page_in_chromium_from_the_shared_installation() -> None:
    assert (Path(SYSTEM_CACHE) / RATTAN_BUILD).is_file(), "make setup as root publishes it"
    user = _test_user()
    home = Path(tempfile.mkdtemp(prefix="h2lab-fresh-user-"))
    try:
        os.chown(home, user.pw_uid, user.pw_gid)
        home.chmod(0o700)
        argv = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]
        argv += ["env", "-i", f"PATH={PATH}", f"HOME={home}"]
        argv += [str(ROOT / ".venv" / "bin" / "h2lab"), "load", "synthetic:n=4,size=10KB,origins=1"]
        argv += ["--protocol", "h2s", "--network", "rtt=20ms", "--client", "chromium"]
        argv += ["--out", str(home / "out"), "--json"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=home)
        print(done.stdout[-3000:], done.stderr[-3000:])
        assert done.returncode == 0, done.stderr
        (trial,) = json.loads(done.stdout)
        assert trial["status"] == "ok", trial["error"]
        assert trial["client"] == "chromium" and trial["plt_ms"] > 0
        cache = home / ".cache" / "h2lab"
        assert not (cache / RATTAN_BUILD).exists()  # the shared Rattan ran, none was built
        # the user's own: the generated page, Rattan's delay calibration; no build
        assert {p.name for p in cache.iterdir()} <= {"pages", "rattan-0.1.1"}
    finally:
        shutil.rmtree(home, ignore_errors=True)
