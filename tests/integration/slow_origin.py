"""A test origin whose responses come at known times: ``/x.png?hold=MS&rgb=RRGGBB`` answers a
1x1 PNG of that colour (``&w=W&h=H``: W x H) after holding the request MS milliseconds
(``?drop=1``: the connection is closed instead, without a response); any other path serves
the file of that name from DOCROOT. Plain HTTP/1.1 (Chromium's h1c).

    python slow_origin.py IP PORT DOCROOT
"""

from __future__ import annotations

import struct
import sys
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit


def png(rgb: tuple[int, int, int], width: int = 1, height: int = 1) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(bytes([0, *rgb * width]) * height))
        + chunk(b"IEND", b"")
    )


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    docroot = Path(".")

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path.endswith(".png"):
            q = parse_qs(url.query)
            if q.get("drop"):
                self.close_connection = True
                return
            time.sleep(int(q.get("hold", ["0"])[0]) / 1000)
            hexrgb = q.get("rgb", ["cc0000"])[0]
            rgb = (int(hexrgb[0:2], 16), int(hexrgb[2:4], 16), int(hexrgb[4:6], 16))
            body = png(rgb, int(q.get("w", ["1"])[0]), int(q.get("h", ["1"])[0]))
            kind = "image/png"
        elif url.path.endswith(".json"):  # a beacon's answer: ORB blocks it for an <img>
            body, kind = b'{"ok": true}', "application/json"
        else:
            target = self.docroot / url.path.lstrip("/")
            if not target.is_file():
                self.send_error(404)
                return
            body, kind = target.read_bytes(), "text/html"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def main() -> None:
    ip, port, docroot = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    Handler.docroot = docroot
    server = ThreadingHTTPServer((ip, port), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
