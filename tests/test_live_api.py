"""The live side through the official client against the fake API server over loopback."""

from __future__ import annotations

import io
import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import NOW, ROOT

from tests.fakes.kube_api import FakeKubeAPI
from syncer.cli import main
from syncer.kube import Timeouts
from syncer.sources.manifests import load_manifests


def load_asgard_as_applied(api: FakeKubeAPI) -> None:
    """Create asgard's objects the way ``kubectl apply`` did, then replay the live edits."""
    for obj in load_manifests(ROOT, "asgard", "ai").objects.values():
        api.put(obj.data, applied=True, time="2026-06-02T18:40:11Z")
    api.patch("v1", "ConfigMap", "ai", "ollama-endpoint-manager",
              {"data": {"MAC_ADDRS": "192.168.68.75 100.115.97.90", "M1_ADDRS": "192.168.68.89 100.127.6.20"}},
              manager="kubectl-edit", time="2026-08-20T09:14:00Z")
    for name, ip, when in (("mac-ollama", "192.168.68.75", "2026-08-21T08:03:24Z"),
                           ("m1-ollama", "192.168.68.89", "2026-08-21T06:52:40Z")):
        api.patch("v1", "Endpoints", "ai", name,
                  {"subsets": [{"addresses": [{"ip": ip}], "ports": [{"name": "http", "port": 11434}]}]},
                  manager="ollama-endpoint-manager", time=when)


def diff(kubeconfig: Path, *extra: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["diff", "asgard", "--repo", str(ROOT), "--kubeconfig", str(kubeconfig), "--context", "fake",
                 *extra], now=NOW, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_asgard_drift_read_from_the_api(fake_kube: FakeKubeAPI, tmp_path: Path) -> None:
    load_asgard_as_applied(fake_kube)
    fake_kube.clear_requests()
    code, out, err = diff(fake_kube.kubeconfig(tmp_path / "kubeconfig"), "-o", "json")
    assert (code, err) == (1, "")
    doc: dict[str, Any] = json.loads(out)
    got = sorted((d["kind"], d["name"], d["path"], d["class"], d["direction"], d["manager"], d["action"])
                 for d in doc["drifts"])
    assert got == [
        ("ConfigMap", "ollama-endpoint-manager", "data.M1_ADDRS", "value", "cluster", "kubectl-edit", "write"),
        ("ConfigMap", "ollama-endpoint-manager", "data.MAC_ADDRS", "value", "cluster", "kubectl-edit", "write"),
        ("Endpoints", "m1-ollama", "subsets", "pick", "cluster", "ollama-endpoint-manager", "write"),
        ("Endpoints", "mac-ollama", "subsets", "pick", "cluster", "ollama-endpoint-manager", "write"),
    ]
    # Read by name only: no namespace-wide lists, and never a write.
    assert fake_kube.count(method="GET", path_contains="/namespaces/ai/") == 9
    for req in fake_kube.requests:
        assert req.method == "GET"
        assert not req.path.endswith(("/configmaps", "/endpoints", "/services", "/deployments"))


def test_in_sync_cluster_exits_zero(fake_kube: FakeKubeAPI, tmp_path: Path) -> None:
    for obj in load_manifests(ROOT, "asgard", "ai").objects.values():
        fake_kube.put(obj.data, applied=True)
    code, out, _ = diff(fake_kube.kubeconfig(tmp_path / "kubeconfig"))
    assert code == 0 and "asgard: in sync (9 objects checked)" in out


def test_forbidden_object_names_verb_resource_and_name(fake_kube: FakeKubeAPI, tmp_path: Path) -> None:
    load_asgard_as_applied(fake_kube)
    fake_kube.forbid("get", "endpoints", "mac-ollama")
    code, out, _ = diff(fake_kube.kubeconfig(tmp_path / "kubeconfig"))
    assert code == 2
    line = [ln for ln in out.splitlines() if ln.startswith("error:")]
    assert len(line) == 1
    assert 'endpoints "mac-ollama" is forbidden' in line[0] and 'cannot get resource "endpoints"' in line[0]
    # The rest of the installation was still compared.
    assert "data.MAC_ADDRS" in out and "m1-ollama" in out


def test_unreachable_api_server_fails_fast_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "fake", "context": {"cluster": "c", "user": "u"}}]}))
    start = time.monotonic()
    code, _, err = diff(kubeconfig)
    assert time.monotonic() - start < 30
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"syncer: error: cannot reach the API server at http://127.0.0.1:{port}")


def test_hanging_api_server_is_time_bounded(fake_kube: FakeKubeAPI, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    load_asgard_as_applied(fake_kube)
    monkeypatch.setattr("syncer.kube.client.DEFAULT_TIMEOUTS", Timeouts(connect=1.0, read=1.0, total=2.0))
    fake_kube.hang_next(30, path_contains="/configmaps/", count=5)
    start = time.monotonic()
    code, out, err = diff(fake_kube.kubeconfig(tmp_path / "kubeconfig"))
    assert time.monotonic() - start < 15
    assert code == 2 and "cannot reach the API server" in err
