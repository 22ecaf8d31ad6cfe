"""A git smart-HTTP server on loopback, backed by ``git http-backend``.

Reads are anonymous; pushes need ``Authorization: Basic`` with the configured token (as on
GitHub, where a public repository clones without credentials but a push asks for them).
"""

from __future__ import annotations

import base64
import os
import subprocess
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit


class GitHTTPServer:
    def __init__(self, root: Path, token: str = "push-token",
                 authorize: Callable[[str | None], bool] | None = None) -> None:
        self.root = root  # directory holding bare repositories
        self.token = token
        #: Decides on a push's Authorization header instead of ``token`` (a GitHub App's tokens).
        self.authorize = authorize
        self.pushes_refused = 0
        #: When set, every request is answered with a redirect to this base URL (plus the path).
        self.redirect_to: str | None = None
        self.redirect_status = 302
        #: Every request as it arrived: (method, path, headers).
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _run(self) -> None:
                server.requests.append((self.command, self.path, dict(self.headers.items())))
                if server.redirect_to is not None:
                    self.send_response(server.redirect_status)
                    self.send_header("Location", server.redirect_to + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                url = urlsplit(self.path)
                wants_push = "git-receive-pack" in url.path or "service=git-receive-pack" in (url.query or "")
                if wants_push:
                    expected = "Basic " + base64.b64encode(f"x-access-token:{server.token}".encode()).decode()
                    given = self.headers.get("Authorization")
                    if not (server.authorize(given) if server.authorize else given == expected):
                        server.pushes_refused += 1
                        self.send_response(401)
                        self.send_header("WWW-Authenticate", 'Basic realm="git"')
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                env = {
                    "GIT_PROJECT_ROOT": str(server.root), "GIT_HTTP_EXPORT_ALL": "1",
                    "PATH_INFO": url.path, "QUERY_STRING": url.query or "", "REQUEST_METHOD": self.command,
                    "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
                    "REMOTE_USER": "pusher", "REMOTE_ADDR": "127.0.0.1", "PATH": os.environ.get("PATH", "/usr/bin"),
                    "HTTP_GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
                }
                proc = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, timeout=30)
                head, _, payload = proc.stdout.partition(b"\r\n\r\n")
                status = 200
                headers = []
                for line in head.decode("latin-1").split("\r\n"):
                    if not line:
                        continue
                    name, _, value = line.partition(":")
                    if name.lower() == "status":
                        status = int(value.strip().split()[0])
                    else:
                        headers.append((name, value.strip()))
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = _run
            do_POST = _run

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "GitHTTPServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
