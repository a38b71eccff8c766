"""A :class:`~h2lab.record.log.Recording` as a WARC 1.1 file (ISO 28500:2017), written with
warcio: a ``warcinfo`` record, then for each response its ``response`` record and the
``request`` record that got it (``WARC-Concurrent-To`` the response, which gives the importer
its method), in the recording's order, gzipped per record.

The file reads back (``h2lab pages import warc:FILE``,
:func:`~h2lab.pages.importers.warc.read_warc`) to the recording's page, same page id: each
response's head holds the recorded status and headers, bodies are stored decoded, so no
``Content-Encoding`` or ``Transfer-Encoding`` is written and ``Content-Length`` is the stored
length; the first response is the URL navigated to, where the importer starts its search
for the entry.
"""

from __future__ import annotations

from io import BytesIO
from typing import IO
from urllib.parse import urlsplit

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from h2lab.record.log import Exchange, Recording

WARC_VERSION = "1.1"


def write_warc(recording: Recording, out: IO[bytes], software: str = "h2lab record") -> None:
    """Write ``recording`` to ``out`` as a gzipped WARC 1.1."""
    writer = WARCWriter(out, gzip=True, warc_version=WARC_VERSION)
    info = {
        "software": software,
        "format": f"WARC File Format {WARC_VERSION}",
        "description": f"{recording.url} loaded in Chromium",
    }
    writer.write_record(writer.create_warcinfo_record("", info))
    for exchange in recording.exchanges:
        response = _response_record(writer, exchange)
        request = _request_record(writer, exchange)
        writer.write_request_response_pair(request, response)


def _response_record(writer: WARCWriter, exchange: Exchange) -> object:
    r = exchange.response
    headers = [*r.headers, ("Content-Length", str(len(r.body)))]
    head = StatusAndHeaders(
        f"{r.status} {exchange.status_text}".strip(), headers, protocol="HTTP/1.1"
    )
    return writer.create_warc_record(
        r.url, "response", payload=BytesIO(r.body), length=len(r.body), http_headers=head
    )


def _request_record(writer: WARCWriter, exchange: Exchange) -> object:
    r = exchange.response
    parts = urlsplit(r.url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = list(exchange.request_headers)
    if not any(k.lower() == "host" for k, _ in headers):
        headers.insert(0, ("Host", parts.netloc))
    head = StatusAndHeaders(f"{r.method} {target} HTTP/1.1", headers, is_http_request=True)
    body = exchange.request_body
    return writer.create_warc_record(
        r.url, "request", payload=BytesIO(body), length=len(body), http_headers=head
    )
