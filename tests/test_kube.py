"""The one Kubernetes seam (syncer/kube/): deadlines, size limit, typed errors, User-Agent,
the kubeconfig reader, and the live source's LIST / GET paths, over loopback."""

from __future__ import annotations

import base64
import io
import json
import logging
import socket
import threading
import time
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import NOW, ROOT
from tests.test_live_api import load_asgard_as_applied

from tests.fakes.kube_api import FakeKubeAPI
from syncer import __version__
from syncer.cli import main
from syncer.errors import ConfigError
from syncer.kube import (
    USER_AGENT, ClusterUnreachable, Conflict, Connection, Gone, KubeClient, Refused, Timeouts, TooLarge,
    kube_client, load_connection,
)
from syncer.sources.manifests import parse_documents
from syncer.gather.live import KubeSource
from syncer.model import ObjectRef


class SlowServer:
    """A loopback HTTP server that answers every request with ``script(conn)``."""

    def __init__(self, script: Any) -> None:
        self.script = script
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.closed = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                self.script(conn, self.closed)
            except OSError:
                pass

    def close(self) -> None:
        self.closed.set()
        try:  # wakes the accept() of _serve: closing alone leaves the port listening until it returns,
            self.sock.shutdown(socket.SHUT_RDWR)  # and a later test's connection landed here (a flake)
        except OSError:
            pass
        self.sock.close()


@pytest.fixture
def slow() -> Iterator[list[SlowServer]]:
    servers: list[SlowServer] = []
    yield servers
    for s in servers:
        s.close()


def trickle_body(conn: socket.socket, closed: threading.Event) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
    while not closed.wait(0.2):  # a byte every 0.2 s: never a read timeout
        conn.sendall(b" ")


def trickle_headers(conn: socket.socket, closed: threading.Event) -> None:
    for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 1000:
        if closed.wait(0.2):
            return
        conn.sendall(bytes([byte]))


@pytest.mark.parametrize("script", [trickle_body, trickle_headers])
def test_a_trickling_server_cannot_hold_a_call_past_its_total_deadline(slow: list[SlowServer], script: Any) -> None:
    server = SlowServer(script)
    slow.append(server)
    client = KubeClient(Connection(server.url), timeouts=Timeouts(connect=1.0, read=1.0, total=1.5))
    start = time.monotonic()
    with pytest.raises(ClusterUnreachable, match=r"no complete answer within 1\.5s") as err:
        client.call("GET", "/api/v1/namespaces/ai/configmaps/x", what="get ConfigMap ai/x")
    assert time.monotonic() - start < 3.0
    assert err.value.transient and "get ConfigMap ai/x" in err.value.message


def test_an_answer_larger_than_the_limit_is_refused(slow: list[SlowServer]) -> None:
    def big(conn: socket.socket, closed: threading.Event) -> None:
        body = b'{"items": "' + b"x" * 300_000 + b'"}'
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        for i in range(0, len(body), 4096):
            piece = body[i:i + 4096]
            conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
        conn.sendall(b"0\r\n\r\n")

    server = SlowServer(big)
    slow.append(server)
    client = KubeClient(Connection(server.url), max_body=100_000)
    with pytest.raises(TooLarge, match="larger than 100000"):
        client.call("GET", "/api/v1/namespaces/ai/configmaps", what="list")


def test_typed_errors_and_user_agent_on_every_request(fake_kube: FakeKubeAPI, tmp_path: Path) -> None:
    client = kube_client(str(fake_kube.kubeconfig(tmp_path / "kubeconfig")), None, read_yaml=parse_documents)
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ai"}, "data": {"k": "v"}}
    path = "/api/v1/namespaces/ai/configmaps"
    assert client.call("POST", path, body=cm) is not None
    with pytest.raises(Conflict) as conflict:
        client.call("POST", path, body=cm)
    assert conflict.value.status == 409
    assert client.call("GET", f"{path}/absent") is None
    fake_kube.forbid("get", "configmaps", "a")
    with pytest.raises(Refused) as refused:
        client.call("GET", f"{path}/a", what="get a")
    assert refused.value.status == 403 and not refused.value.transient
    fake_kube.fail_next(410, path_contains="/configmaps")
    with pytest.raises(Gone):
        client.call("GET", path)
    assert fake_kube.requests and {r.headers.get("User-Agent") for r in fake_kube.requests} == {USER_AGENT}
    assert USER_AGENT == f"syncer/{__version__}"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ClusterUnreachable, match=f"cannot reach the API server at http://127.0.0.1:{port}"):
        KubeClient(Connection(f"http://127.0.0.1:{port}")).call("GET", "/version")


def _kubeconfig(path: Path, user: dict[str, Any], cluster: dict[str, Any], current: str = "c") -> Path:
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": current,
        "clusters": [{"name": "k", "cluster": cluster}], "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}]}))
    return path


def test_kubeconfig_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "token").write_text("from-file\n")
    cfg = _kubeconfig(tmp_path / "a", {"tokenFile": "token"},
                      {"server": "https://127.0.0.1:6443/", "certificate-authority-data":
                       base64.b64encode(b"-----BEGIN CERTIFICATE-----").decode(), "tls-server-name": "kube"})
    conn = load_connection(str(cfg), None, read_yaml=parse_documents)
    assert (conn.server, conn.tls_server_name, conn.ca_data) == ("https://127.0.0.1:6443", "kube",
                                                                  b"-----BEGIN CERTIFICATE-----")
    assert conn.authorization() == "Bearer from-file"  # relative to the kubeconfig's directory
    basic = load_connection(str(_kubeconfig(tmp_path / "b", {"username": "u", "password": "p"},
                                            {"server": "http://127.0.0.1:1"})), None, read_yaml=parse_documents)
    assert basic.authorization() == "Basic " + base64.b64encode(b"u:p").decode()
    # $KUBECONFIG: a list of files, the first one naming a context wins
    other = _kubeconfig(tmp_path / "c", {"token": "t"}, {"server": "http://127.0.0.1:2"}, current="")
    monkeypatch.setenv("KUBECONFIG", f"{other}:{tmp_path / 'b'}")
    assert load_connection(None, None, read_yaml=parse_documents).server == "http://127.0.0.1:2"
    with pytest.raises(ConfigError, match="context 'nope' not found"):
        load_connection(str(cfg), "nope", read_yaml=parse_documents)
    with pytest.raises(ConfigError, match=r"kubeconfig .*/missing: .*no such file"):
        load_connection(str(tmp_path / "missing"), None, read_yaml=parse_documents)
    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ConfigError, match="in-cluster service account: .*KUBERNETES_SERVICE_HOST"):
        load_connection(None, None, read_yaml=parse_documents)


def _many(fake: FakeKubeAPI, n: int) -> list[ObjectRef]:
    refs = []
    for i in range(n):
        fake.put({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i:03}", "namespace": "ai"},
                  "data": {"i": str(i)}})
        refs.append(ObjectRef("v1", "ConfigMap", "ai", f"cm-{i:03}"))
    return refs


def test_live_reads_one_paged_list_per_kind_and_namespace(fake_kube: FakeKubeAPI, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr("syncer.gather.live.PAGE", 7)
    refs = _many(fake_kube, 20)
    source = KubeSource(kube_client(str(fake_kube.kubeconfig(tmp_path / "kubeconfig")), None, read_yaml=parse_documents))
    fake_kube.clear_requests()
    absent = ObjectRef("v1", "ConfigMap", "ai", "cm-absent")
    with caplog.at_level(logging.DEBUG, logger="syncer.live"):
        source.prefetch([*refs, absent])
    lists = [r for r in fake_kube.requests if r.path == "/api/v1/namespaces/ai/configmaps"]
    assert len(lists) == 3 and len(fake_kube.requests) == 3 + 1  # 3 pages + discovery
    assert source.get(refs[5]) == {**fake_kube.get("v1", "ConfigMap", "ai", "cm-005"), "apiVersion": "v1",
                                   "kind": "ConfigMap"}  # type: ignore[dict-item]
    assert source.get(absent) is None
    assert [r.getMessage() for r in caplog.records] == ["live reads: one LIST for 21 ConfigMap in ai"]


class _ListsTogether:
    """The real client, but the first page of a LIST waits until ``n`` LISTs have begun: LISTs
    sent one after the other never get past the first (the barrier breaks)."""

    def __init__(self, inner: Any, n: int) -> None:
        self.inner = inner
        self.barrier = threading.Barrier(n, timeout=20)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def call(self, method: str, path: str, **kw: Any) -> Any:
        query = dict(kw.get("query", ()))
        if "limit" in query and "continue" not in query:
            self.barrier.wait()
        return self.inner.call(method, path, **kw)


def test_the_lists_of_several_kinds_go_at_once_and_read_as_one_by_one(fake_kube: FakeKubeAPI, tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    refs = _many(fake_kube, 10)
    for i in range(9):
        fake_kube.put({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": f"ep-{i}", "namespace": "ai"},
                       "subsets": [{"addresses": [{"ip": f"10.0.0.{i}"}]}]})
        refs.append(ObjectRef("v1", "Endpoints", "ai", f"ep-{i}"))
    source = KubeSource(_ListsTogether(kube_client(str(fake_kube.kubeconfig(tmp_path / "kubeconfig")), None, read_yaml=parse_documents), 2))
    with caplog.at_level(logging.DEBUG, logger="syncer.live"):
        source.prefetch(refs)
    assert [source.get(r)["metadata"]["name"] for r in refs] == [r.name for r in refs]  # type: ignore[index]
    assert [r.getMessage() for r in caplog.records if r.name == "syncer.live"] == [
        "live reads: one LIST for 10 ConfigMap in ai", "live reads: one LIST for 9 Endpoints in ai"]


def test_a_role_that_cannot_list_falls_back_to_gets_by_name_once(fake_kube: FakeKubeAPI, tmp_path: Path,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    refs = _many(fake_kube, 12)
    fake_kube.forbid("list", "configmaps")  # a Role with resourceNames: get by name only
    source = KubeSource(kube_client(str(fake_kube.kubeconfig(tmp_path / "kubeconfig")), None, read_yaml=parse_documents),
                        concurrency=4)
    with caplog.at_level(logging.DEBUG, logger="syncer.live"):
        for _ in range(2):
            fake_kube.clear_requests()
            source.prefetch(refs)
            assert [source.get(r)["data"] for r in refs] == [{"i": str(i)} for i in range(12)]  # type: ignore[index]
    gets = [r for r in fake_kube.requests if r.path.startswith("/api/v1/namespaces/ai/configmaps/cm-")]
    assert len(gets) == 12 and len(fake_kube.requests) == 12  # the second pass does not try to list again
    [said] = [r.getMessage() for r in caplog.records if r.name == "syncer.live"]  # not other tests' threads
    assert said.startswith("live reads: cannot list ConfigMap in ai (API server refused list ConfigMap in ai (403)")
    assert said.endswith("reading 12 by name (GET, 4 at a time)")


def test_diff_through_the_list_path_equals_the_get_path(fake_kube: FakeKubeAPI, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    load_asgard_as_applied(fake_kube)
    kubeconfig = fake_kube.kubeconfig(tmp_path / "kubeconfig")
    outputs = []
    for list_from in (1, 1000):  # asgard read with LISTs, then with GETs only
        monkeypatch.setattr("syncer.gather.live.LIST_FROM", list_from)
        fake_kube.clear_requests()
        out, err = io.StringIO(), io.StringIO()
        code = main(["diff", "asgard", "--repo", str(ROOT), "--kubeconfig", str(kubeconfig), "-o", "json"],
                    now=NOW, stdout=out, stderr=err)
        outputs.append((code, out.getvalue(), err.getvalue()))
        listed = fake_kube.count("GET", "/namespaces/ai/configmaps", watch=False) - fake_kube.count(
            "GET", "/namespaces/ai/configmaps/", watch=False)
        assert (listed > 0) == (list_from == 1)
    assert outputs[0] == outputs[1] and outputs[0][0] == 1


def test_an_idle_watch_stays_open_with_tcp_keepalive_instead_of_a_read_timeout(fake_kube: FakeKubeAPI,
                                                                               tmp_path: Path) -> None:
    from syncer.kube import KEEPALIVE_IDLE
    from syncer.sidecar.watch import WatchSettings

    client = kube_client(str(fake_kube.kubeconfig(tmp_path / "kubeconfig")), None, read_yaml=parse_documents)
    settings = WatchSettings()
    assert settings.read_timeout > settings.watch_seconds  # silence until the server ends the watch is normal
    stream = client.open_watch("/api/v1/namespaces/ai/configmaps", [("watch", "1"), ("timeoutSeconds", "30")],
                               what="watch", budget=settings.watch_seconds + settings.grace)
    try:
        sock = stream._resp.connection.sock
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == KEEPALIVE_IDLE
        assert fake_kube.requests[-1].headers.get("User-Agent") == USER_AGENT
    finally:
        stream.close()
        for _ in stream.chunks():
            pass


def _exec_kubeconfig(tmp_path: Path) -> Path:
    credential = json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
                             "status": {"token": "from-plugin"}})
    return _kubeconfig(tmp_path / "exec", {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                                    "command": "sh", "args": ["-c", f"echo '{credential}'"]}},
                       {"server": "http://127.0.0.1:1"})


def test_an_exec_plugin_runs_through_the_official_client(tmp_path: Path) -> None:
    conn = load_connection(str(_exec_kubeconfig(tmp_path)), None, read_yaml=parse_documents)
    assert conn.authorization() == "Bearer from-plugin"


def test_an_exec_plugin_without_the_extra_is_one_line_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    for name in [m for m in sys.modules if m == "kubernetes" or m.startswith("kubernetes.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "kubernetes", None)  # what an install without the extra has: no module
    code = main(["diff", "asgard", "--repo", str(ROOT), "--kubeconfig", str(_exec_kubeconfig(tmp_path))])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "credential plugin" in err and "pip install 'syncer[exec-auth]'" in err


def test_a_connection_the_pool_cannot_keep_is_closed_without_a_warning_line(fake_kube: FakeKubeAPI, tmp_path: Path,
                                                                            caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    client = kube_client(str(fake_kube.kubeconfig(tmp_path / "kubeconfig")), None, read_yaml=parse_documents,
                         pool_size=1)
    streams = [client.open_watch("/api/v1/namespaces/ai/configmaps", [("watch", "1"), ("timeoutSeconds", "1")],
                                 what=f"watch {i}", budget=5) for i in range(3)]  # three connections, room for one
    for s in streams:
        for _ in s.chunks():  # the server ends each after 1 s; each connection goes back to the pool
            pass
    assert client.call("GET", "/api/v1/namespaces/ai/configmaps") is not None
    assert [r.getMessage() for r in caplog.records if "pool" in r.getMessage().lower()] == []


def test_the_client_stands_below_the_git_side_and_detection() -> None:
    """``syncer.kube`` reads kubeconfig YAML through the caller's reader and the served versions
    from ``kinds``: importing it loads neither the manifests nor the Endpoints rules."""
    import subprocess

    probe = "import sys, syncer.kube; print(sorted(m for m in sys.modules if m.startswith('syncer.')))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                            cwd=ROOT).stdout
    assert "syncer.kube.client" in loaded
    assert "syncer.sources.manifests" not in loaded and "syncer.detect.endpoints" not in loaded


def test_list_items_one_rule_for_answers_and_documents() -> None:
    """A LIST answer's items by name (what a broken server adds is skipped), and a ``kind: List``
    document's items (any other document is one object)."""
    from syncer.kinds import list_items
    from syncer.kube.lists import named_items

    answer = {"kind": "ConfigMapList", "items": [
        {"metadata": {"name": "a"}, "data": {"k": "v"}}, {"metadata": {"name": 5}}, {"metadata": ["b"]},
        "c", None, {"metadata": {"name": "d"}}]}
    assert [(n, o.get("data")) for n, o in named_items(answer)] == [("a", {"k": "v"}), ("d", None)]
    assert list(named_items({"items": {"a": {}}})) == list(named_items({})) == []
    cm = {"kind": "ConfigMap", "items": [1]}
    assert list_items({"apiVersion": "v1", "kind": "List", "items": [cm]}) == [cm]
    assert list_items(cm) is None and list_items({"kind": "List", "items": "x"}) is None and list_items([]) is None


def test_a_kind_discovery_lacked_is_asked_again_after_the_miss_ttl(fake_kube: FakeKubeAPI, tmp_path: Path) -> None:
    """A CRD installed after the sidecar started: its kind is served once discovery is asked again."""
    from syncer.errors import ClusterError
    from syncer.kube.client import DISCOVERY_MISS_TTL
    from tests.fakes.kube_api.resources import Resource

    client = kube_client(str(fake_kube.kubeconfig(tmp_path / "kubeconfig")), None, read_yaml=parse_documents)
    now = [1000.0]
    client.clock = lambda: now[0]
    ref = ObjectRef("v1", "Widget", "default", "w1")
    with pytest.raises(ClusterError, match="does not serve Widget in v1"):
        client.object_path(ref)
    fake_kube.add_resource(Resource("", "v1", "widgets", "widget", "Widget"))
    now[0] += DISCOVERY_MISS_TTL / 2
    with pytest.raises(ClusterError, match="does not serve Widget"):  # the table read at 1000 still stands
        client.object_path(ref)
    now[0] += DISCOVERY_MISS_TTL
    assert client.object_path(ref) == "/api/v1/namespaces/default/widgets/w1"
    assert client.resource("v1", "ConfigMap") == ("configmaps", True)


def test_tls_context_reads_the_system_store_only_when_it_checks_the_server() -> None:
    """A kubeconfig's own CA is the only one trusted, insecure checks nothing, and neither
    pays for reading the system's CA store; without a CA the system's store checks."""
    import ssl

    from syncer.kube.config import Connection, ssl_context
    from tests.fakes.h2_kube import self_signed

    cert, _key = self_signed()
    own = ssl_context(Connection(server="https://127.0.0.1:1", ca_data=cert))
    assert own.verify_mode is ssl.CERT_REQUIRED and own.check_hostname
    assert own.cert_store_stats()["x509_ca"] == 1  # that CA alone
    insecure = ssl_context(Connection(server="https://127.0.0.1:1", insecure=True))
    assert insecure.verify_mode is ssl.CERT_NONE and not insecure.check_hostname
    assert insecure.cert_store_stats()["x509"] == 0
    system = ssl_context(Connection(server="https://127.0.0.1:1"))
    expected = ssl.create_default_context()
    assert system.verify_mode is ssl.CERT_REQUIRED and system.cert_store_stats() == expected.cert_store_stats()
