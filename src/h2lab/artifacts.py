"""The names of the files h2lab writes, defined once: the client, runner and lab that write a
file and the report that reads it take its name from here.

A name with a ``{field}`` is a template, filled with :meth:`str.format` (``NGHTTP_HAR.format(
i=0)``; ``NGHTTP_OUT.format(i="*")`` is the glob of them all). A trial's artifacts folder is
``ARTIFACTS_DIR/<trial>.<attempt>`` in the run's output folder."""

from __future__ import annotations

# -- a run's output folder

EXPERIMENT_FILE = "experiment.json"
"""The run's experiment: its name, source file, seed, trials, outlier rule and comparison."""
RESULTS_DB = "results.sqlite"
"""The results store: every trial's row and its resources."""
ARTIFACTS_DIR = "artifacts"
"""The folder of the trials' artifacts folders."""

# -- a trial's artifacts folder: browser clients (Chromium, Firefox)

PAGE_HAR = "page.har"
"""A load's requests as HAR 1.2 (docs/har.md): a browser's (a failed load's too: every request,
with ``_error``), and h2load's (one client)."""
VISUAL_PROGRESS = "visual-progress.json"
"""A browser load's visual progress: ``{"frames": n, "progress": [[t_ms, 0..1], ...]}``."""
FILMSTRIP_DIR = "filmstrip"
"""The folder of a browser load's screenshots, with ``chromium:filmstrip=1``."""
FILMSTRIP_FRAME = "{t_ms:09.1f}ms.jpg"
"""One screenshot in :data:`FILMSTRIP_DIR`, named by its ms from navigation start."""
NETLOG = "netlog-{n}.json"
"""The NetLog of the ``n``-th browser of a run (``chromium:netlog=1``), in its last trial."""
KEYLOG = "keylog-{n}.txt"
"""The TLS keys (SSLKEYLOGFILE) of the ``n``-th browser of a run (``chromium:keylog=1``)."""

# -- a trial's artifacts folder: load clients

NGHTTP_HAR = "nghttp-{i}.har"
"""The HAR of a load's ``i``-th nghttp process (one connection to one origin)."""
NGHTTP_OUT = "nghttp-{i}.out"
"""The output of a load's ``i``-th nghttp process: its ``-v`` frame log and errors."""
H2LOAD_LOG = "h2load-{i}.log"
"""The per-request log (``--log-file``) of a load's ``i``-th h2load process."""
H2LOAD_OUT = "h2load-{i}.out"
"""The output of a load's ``i``-th h2load process: its summary and errors."""
CURL_CONFIG = "curl.config"
"""The URLs curl fetched (its ``-K`` file)."""
CURL_OUT = "curl.out"
"""What curl printed: a ``%{json}`` line per transfer, then any error."""
OKHTTP_PLAN = "okhttp-plan.json"
"""What the OkHttp client was asked to fetch: URLs in order, protocol, limits, hosts, CA."""
OKHTTP_RESULT = "okhttp-result.json"
"""The OkHttp client's result: every call's times, connection and error (metrics.okhttp)."""
OKHTTP_OUT = "okhttp.out"
"""The OkHttp client's output: the JVM's errors, if any."""

# -- a trial's artifacts folder: the packet capture (``capture = ["pcap"]``, any client)

CAPTURE_PCAP = "capture.pcap"
"""The packets of the trial on the client's side of the link (tcpdump in the client namespace,
from before the client starts until it ends), up to a size cap (:mod:`h2lab.net.capture`)."""
EARLY_DATA_PCAP = "early-data.pcap"
"""A repeat view over HTTP/3: the QUIC 0-RTT packets the client sent (the trial's
``early_data_packets``), and :data:`EARLY_DATA_LOG` its capture program's output."""
EARLY_DATA_LOG = "early-data.log"
CAPTURE_LOG = "capture.log"
"""tcpdump's output for :data:`CAPTURE_PCAP` (its packet counts, drops by the kernel) and
h2lab's line on what the file holds (packets, whether the size cap cut it)."""
QLOG_DIR = "qlog"
"""A trial's qlog files (``capture = ["qlog"]``): ``<odcid>_server.sqlog`` from the server,
``<odcid>_client.sqlog`` (curl) from the client, one per QUIC connection, JSON-SEQ."""
DNS_LOOKUPS = "dns-lookups.tsv"
"""The queries the lab's resolver answered during the trial (``dns_lookups``): one line
each, its second (Unbound logs whole seconds), name, type and answer; none: no file."""
CAPTURE_KEYLOG = "keylog.txt"
"""The TLS keys of the trial's connections (SSLKEYLOGFILE format), beside
:data:`CAPTURE_PCAP`, for the clients that can write them (Chromium, Firefox, h2load)."""

# -- a failed trial's artifacts folder: what the runner and the lab keep

TRACEBACK = "traceback.txt"
"""The Python traceback of a trial that failed with an unexpected error."""
LINK_STATE = "link-state.txt"
"""The emulated link's state when the trial failed: Rattan alive, drops, client sockets."""
LINK_RATTAN_LOG = "link-rattan.log"
"""The end of Rattan's log when the trial failed."""
SERVER_LOG = "server-{name}"
"""The end of the server's log named ``name`` when the trial failed."""
