"""A kube-apiserver's name-narrowed lists and watches over TLS + HTTP/2, on loopback.

Enough of the API for the sidecar's per-object watches (syncer/sidecar/h2watch.py): ConfigMaps of
one namespace, ``GET .../configmaps?fieldSelector=metadata.name=X`` (a list of that one object,
at the store's resourceVersion) and the same with ``watch=1&resourceVersion=R`` (the object's
events after R as newline-delimited JSON, BOOKMARKs on request, ``ERROR`` 410 when the history
is expired; the stream ends at ``timeoutSeconds``). A bearer token is required.

Like kube-apiserver it speaks HTTP/2 only by ALPN and advertises
``SETTINGS_MAX_CONCURRENT_STREAMS`` (100 by default); a client that opens more streams than that
on a connection gets its connection closed with a protocol error, as h2 servers do, and the
count is recorded (``refused``). Observation: ``connections`` (accepted), ``peak_streams``
(the most streams open at once on any connection), ``requests`` (paths), ``agents`` (the
User-Agents seen).
"""

from __future__ import annotations

import datetime
import json
import socket
import ssl
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def self_signed() -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM) for 127.0.0.1, its own CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake-kube-h2")])
    now = datetime.datetime.now(datetime.timezone.utc)
    import ipaddress
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


class _Watch:
    def __init__(self, sid: int, name: str, rv: int, ends_at: float) -> None:
        self.sid, self.name, self.rv, self.ends_at = sid, name, rv, ends_at
        self.flood = False


class FakeKubeH2:
    """ConfigMaps of ``namespace``, listed and watched by name over HTTP/2 at ``url``."""

    def __init__(self, namespace: str = "ai", token: str = "h2-token", max_streams: int = 100,
                 alpn: tuple[str, ...] = ("h2",)) -> None:
        self.namespace, self.token, self.max_streams = namespace, token, max_streams
        self.cert_pem, key_pem = self_signed()
        self._ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "c.pem").write_bytes(self.cert_pem)
            (Path(tmp) / "k.pem").write_bytes(key_pem)
            self._ctx.load_cert_chain(str(Path(tmp) / "c.pem"), str(Path(tmp) / "k.pem"))
        self._ctx.set_alpn_protocols(list(alpn))
        self._lock = threading.Lock()
        self.rv = 1000
        self.objects: dict[str, dict[str, Any]] = {}
        self.history: dict[str, list[tuple[int, str, dict[str, Any]]]] = {}  # name -> (rv, type, object)
        self.min_rv = 0  # watches from before this answer 410
        self._bookmarks = 0
        self._drops: list[bool] = []
        self.failing_lists = 0  # the next this many lists answer 500
        #: A hostile server: the watches of these names get data without a newline, as fast as
        #: flow control lets it go; lists of ``flood_lists`` an answer that never ends.
        self.flood: set[str] = set()
        self.flood_lists: set[str] = set()
        self.flooded = 0  # bytes of flood sent
        self.connections = 0
        self.peak_streams = 0
        self.refused = 0
        self.requests: list[str] = []
        self.agents: set[str] = set()
        self._stopping = False
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.1)
        self.url = f"https://127.0.0.1:{self._sock.getsockname()[1]}"
        self._threads: list[threading.Thread] = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    # -- the store ----------------------------------------------------------------------------

    def put(self, name: str, data: dict[str, str]) -> None:
        with self._lock:
            self.rv += 1
            etype = "MODIFIED" if name in self.objects else "ADDED"
            obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
                "name": name, "namespace": self.namespace, "resourceVersion": str(self.rv)}, "data": dict(data)}
            self.objects[name] = obj
            self.history.setdefault(name, []).append((self.rv, etype, obj))

    def expire(self) -> None:
        """Compaction: every open watch ends with ERROR 410, and so does any watch from before now."""
        with self._lock:
            self.rv += 1
            self.min_rv = self.rv

    def drop_connections(self, goaway: bool = False) -> None:
        """End every connection: with a GOAWAY first, or just closed (a lost connection)."""
        with self._lock:
            self._drops.append(goaway)

    def bookmark(self) -> None:
        with self._lock:
            self._bookmarks += 1

    def stop(self) -> None:
        self._stopping = True
        for t in self._threads:
            t.join(2)
        self._sock.close()

    # -- the server ---------------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._stopping:
            try:
                raw, _ = self._sock.accept()
            except (socket.timeout, OSError):
                continue
            t = threading.Thread(target=self._serve, args=(raw,), daemon=True)
            self._threads.append(t)
            t.start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            raw.settimeout(5)
            sock = self._ctx.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            raw.close()
            return
        with self._lock:
            self.connections += 1
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        conn.local_settings = h2.settings.Settings(client=False, initial_values={
            h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: self.max_streams})
        conn.initiate_connection()
        watches: dict[int, _Watch] = {}
        bookmarks, seen = self._bookmarks, -1
        drops = len(self._drops)
        try:
            sock.sendall(conn.data_to_send())
            sock.settimeout(0.02)
            while not self._stopping:
                try:
                    data = sock.recv(65536)
                    if not data:
                        return
                    try:
                        events = conn.receive_data(data)
                    except h2.exceptions.TooManyStreamsError:
                        with self._lock:
                            self.refused += 1
                        return
                    for ev in events:
                        if isinstance(ev, h2.events.RequestReceived):
                            self._request(conn, ev, watches)
                            seen = -1  # a new watch may have history to catch up on
                        elif isinstance(ev, h2.events.StreamReset):
                            watches.pop(ev.stream_id, None)
                    with self._lock:
                        self.peak_streams = max(self.peak_streams, conn.open_inbound_streams)
                except (socket.timeout, ssl.SSLWantReadError):
                    pass
                with self._lock:
                    dropped = self._drops[drops:]
                    bookmark, bookmarks = self._bookmarks != bookmarks, self._bookmarks
                    moved, seen = self.rv != seen, self.rv
                if dropped:
                    if dropped[0]:
                        conn.close_connection()
                        sock.sendall(conn.data_to_send())
                    return
                now = time.monotonic()
                for w in list(watches.values()):
                    if w.flood:
                        self._flood(conn, w.sid)
                        continue
                    if moved or bookmark or now >= w.ends_at:
                        self._push(conn, w, bookmark)
                    if w.rv < 0:
                        del watches[w.sid]
                out = conn.data_to_send()
                if out:
                    sock.settimeout(5)
                    sock.sendall(out)
                    sock.settimeout(0.02)
        except (OSError, h2.exceptions.H2Error):
            return
        finally:
            sock.close()

    def _request(self, conn: h2.connection.H2Connection, ev: h2.events.RequestReceived,
                 watches: dict[int, _Watch]) -> None:
        headers = dict(ev.headers or [])
        sid = ev.stream_id or 0
        path = str(headers.get(":path", ""))
        with self._lock:
            self.requests.append(path)
            self.agents.add(str(headers.get("user-agent", "")))
        parts = urlsplit(path)
        q = {k: v[0] for k, v in parse_qs(parts.query).items()}
        if headers.get("authorization") != f"Bearer {self.token}":
            return self._answer(conn, sid, 401, {"kind": "Status", "code": 401, "reason": "Unauthorized",
                                                 "message": "Unauthorized"})
        if parts.path != f"/api/v1/namespaces/{self.namespace}/configmaps" or \
                not q.get("fieldSelector", "").startswith("metadata.name="):
            return self._answer(conn, sid, 403, {"kind": "Status", "code": 403, "reason": "Forbidden",
                                                 "message": "names only"})
        name = q["fieldSelector"].split("=", 1)[1]
        with self._lock:
            if q.get("watch") != "1" and self.failing_lists > 0:
                self.failing_lists -= 1
                return self._answer(conn, sid, 500, {"kind": "Status", "code": 500, "reason": "InternalError",
                                                     "message": "etcdserver: request timed out"})
            if q.get("watch") != "1" and name in self.flood_lists:
                conn.send_headers(sid, [(":status", "200"), ("content-type", "application/json")])
                watches[sid] = _Watch(sid, name, 0, time.monotonic() + 3600)
                watches[sid].flood = True
                return None
            if q.get("watch") != "1":
                items = [self.objects[name]] if name in self.objects else []
                return self._answer(conn, sid, 200, {"kind": "ConfigMapList", "apiVersion": "v1",
                                                     "metadata": {"resourceVersion": str(self.rv)}, "items": items})
            rv = int(q.get("resourceVersion") or self.rv)
        conn.send_headers(sid, [(":status", "200"), ("content-type", "application/json")])
        watches[sid] = _Watch(sid, name, rv, time.monotonic() + int(q.get("timeoutSeconds") or 3600))
        watches[sid].flood = name in self.flood

    def _flood(self, conn: h2.connection.H2Connection, sid: int) -> None:
        """As much newline-free data as the stream's window and the connection's allow."""
        room = min(conn.local_flow_control_window(sid), conn.max_outbound_frame_size, 65536)
        if room > 0:
            conn.send_data(sid, b"x" * room)
            with self._lock:
                self.flooded += room

    @staticmethod
    def _answer(conn: h2.connection.H2Connection, sid: int, status: int, body: dict[str, Any]) -> None:
        conn.send_headers(sid, [(":status", str(status)), ("content-type", "application/json")])
        conn.send_data(sid, json.dumps(body).encode(), end_stream=True)

    def _push(self, conn: h2.connection.H2Connection, w: _Watch, bookmark: bool) -> None:
        """The events of ``w`` since its version; ends it at 410 or at its timeoutSeconds."""
        with self._lock:
            if w.rv < self.min_rv:
                line = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired",
                                                    "message": "too old resource version"}}
                conn.send_data(w.sid, json.dumps(line).encode() + b"\n", end_stream=True)
                w.rv = -1
                return
            new = [e for e in self.history.get(w.name, ()) if e[0] > w.rv]
            latest = self.rv
        for rv, etype, obj in new:
            conn.send_data(w.sid, json.dumps({"type": etype, "object": obj}).encode() + b"\n")
            w.rv = rv
        if bookmark and latest > w.rv:
            mark = {"type": "BOOKMARK", "object": {"kind": "ConfigMap", "apiVersion": "v1",
                                                   "metadata": {"resourceVersion": str(latest)}}}
            conn.send_data(w.sid, json.dumps(mark).encode() + b"\n")
            w.rv = latest
        if time.monotonic() >= w.ends_at:
            conn.end_stream(w.sid)
            w.rv = -1
