"""Every HTTP request syncer makes says ``syncer/<version>``: Kubernetes API (audit logs), forges,
webhooks, and git over HTTP."""

from __future__ import annotations

import io
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from tests.conftest import NOW, ROOT
from tests.fakes.kube_api import FakeKubeAPI

from syncer import USER_AGENT, __version__
from syncer.cli import main
from syncer.errors import GitError
from syncer.forges import make_forge
from syncer.gitrepo import run_git
from syncer.sources.manifests import load_manifests
from syncer.writeback.notify import Notifier


def test_the_agent_names_the_version() -> None:
    assert USER_AGENT == f"syncer/{__version__}" and __version__.count(".") == 2


def test_kubernetes_requests(fake_kube: FakeKubeAPI, tmp_path: Path) -> None:
    for obj in load_manifests(ROOT, "asgard", "ai").objects.values():
        fake_kube.put(obj.data, applied=True, time="2026-06-02T18:40:11Z")
    fake_kube.clear_requests()
    out, err = io.StringIO(), io.StringIO()
    code = main(["diff", "asgard", "--repo", str(ROOT), "--kubeconfig", str(fake_kube.kubeconfig(tmp_path / "kc")),
                 "--context", "fake"], now=NOW, stdout=out, stderr=err)
    assert code in (0, 1), err.getvalue()
    agents = {r.headers.get("User-Agent") for r in fake_kube.requests}
    assert agents == {USER_AGENT}, agents


@pytest.mark.parametrize("kind", ["github", "gitea", "gitlab"])
def test_forge_requests(kind: str) -> None:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("User-Agent", ""))
        return httpx.Response(200, json=[])

    forge = make_forge(kind, "http://127.0.0.1:9/api", "ops/homelab", "t0ken",
                       client=httpx.Client(transport=httpx.MockTransport(answer)))
    assert forge.find_open("syncer/asgard", "main") is None
    assert seen and set(seen) == {USER_AGENT}


def test_webhook_requests() -> None:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("User-Agent", ""))
        return httpx.Response(200, text="ok")

    notifier = Notifier(["http://127.0.0.1:9/hook"], httpx.Client(transport=httpx.MockTransport(answer)))
    assert notifier.notify("pr.opened", {"installation": "asgard", "summary": "x"}) == []
    assert seen == [USER_AGENT]


def test_git_over_http() -> None:
    agents: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            agents.append(self.headers.get("User-Agent", ""))
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        with pytest.raises(GitError):
            run_git(["ls-remote", f"http://127.0.0.1:{server.server_address[1]}/homelab.git"], None, timeout=20)
    finally:
        server.shutdown()
        server.server_close()
    assert agents and set(agents) == {USER_AGENT}
