"""How long a trial may take: shared by experiment files and the servers (which wait as long
on a slow client)."""

from __future__ import annotations

DEFAULT_TIMEOUT_S = 120.0
MAX_TIMEOUT_S = 3600.0
"""The longest a trial may take; servers wait this long on a slow client (see
:data:`h2lab.servers.WRITE_TIMEOUT_S`), so a load ends by its own timeout, never a server's."""
