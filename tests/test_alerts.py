"""Webhooks: ``syncer sync`` and a sidecar pass build their events in one place
(``syncer.writeback.alerts``), so the same outcome sends the same events with the same payloads.

Two identical worlds (same manifests, same live objects, each with its own bare origin and
its own fake forge over loopback): the one-shot ``syncer sync`` runs in one, a sidecar pass
in the other, and both post to one webhook receiver.
"""

from __future__ import annotations

import io
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import NOW, pushed_repo
from tests.fakes.forges import FAKES
from tests.fakes.kube_api import FakeKubeAPI
from tests.fakes.webhook import Receiver
from tests.helpers import _loopback_only, fake  # noqa: F401 - fixtures
from tests.test_sidecar import FakeClock, live_like_example, seed, set_endpoints, sidecar
from syncer.cli import main
from syncer.forges import make_forge
from syncer.writeback.notify import Notifier
from syncer.writeback.deliver import Mode, load_installation

TOKEN = "forge-token-alerts"


def world(root: Path) -> Path:
    """hosts/asgard committed on main in ``root/work``, pushed to the bare ``root/origin.git``."""
    root.mkdir()
    return pushed_repo(root, "asgard")


def snapshot(fake: FakeKubeAPI, work: Path, path: Path) -> Path:
    """The live objects exactly as the fake API serves them, as ``kubectl get -o json`` writes them."""
    items = [fake.get(r.api_version, r.kind, r.namespace, r.name)
             for r in load_installation(work, "asgard").manifests.objects]
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [o for o in items if o]}))
    return path


def test_sync_and_a_sidecar_pass_send_the_same_webhooks(fake: FakeKubeAPI, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYNCER_FORGE_TOKEN", TOKEN)
    one_shot, side = world(tmp_path / "one-shot"), world(tmp_path / "sidecar")
    seed(fake, one_shot)
    live_like_example(fake)  # a kubectl edit and the manager's picks: a pull request
    set_endpoints(fake, "mac-ollama", "10.9.8.7", "2026-08-21T08:03:24Z")  # hand-patched: undeclared
    live = snapshot(fake, one_shot, tmp_path / "live.json")
    hook = Receiver()
    kind = sorted(FAKES)[0]
    try:
        with FAKES[kind](git_dir=one_shot.parent / "origin.git", token=TOKEN) as forge_a, \
                FAKES[kind](git_dir=side.parent / "origin.git", token=TOKEN) as forge_b:
            out, err = io.StringIO(), io.StringIO()
            code = main(["sync", "asgard", "--repo", str(one_shot), "--live-file", str(live), "--mode", "pr",
                         "--forge", kind, "--forge-url", forge_a.url, "--forge-repo", forge_a.repo,
                         "--notify-url", f"{hook.url}/one-shot"], now=NOW, stdout=out, stderr=err)
            assert code == 0, out.getvalue() + err.getvalue()

            clock = FakeClock(NOW - timedelta(days=1))  # the watch saw every object long ago
            sc = sidecar(fake, side, tmp_path, mode=Mode.PR, clock=clock, state_configmap=None,
                         forge=make_forge(kind, forge_b.url, forge_b.repo, TOKEN),
                         notifier=Notifier([f"{hook.url}/sidecar"], httpx.Client(), secrets=[TOKEN]))
            sc.start(run_loop=False)
            try:
                clock.set(NOW)
                report = sc.loop.run_pass("start")
            finally:
                sc.stop()
            assert report.error is None, report.error
            urls = {"/one-shot": forge_a.url, "/sidecar": forge_b.url}
    finally:
        hook.stop()

    def posted(path: str) -> list[dict[str, Any]]:
        bodies = [body for p, body in hook.posts if p == path]
        return json.loads(json.dumps(bodies).replace(urls[path], "FORGE"))  # the only difference: the forge

    from_sync, from_pass = posted("/one-shot"), posted("/sidecar")
    assert [b["event"] for b in from_sync] == ["pr.opened", "drift.undeclared"]
    assert from_sync == from_pass
    undeclared = from_sync[1]
    assert undeclared["summary"].startswith("Endpoints/ai/mac-ollama: ") and undeclared["installation"] == "asgard"
    assert [d["live"] for d in undeclared["drifts"]] == ["10.9.8.7"]
    assert from_sync[0]["pr"]["number"] == 1 and from_sync[0]["drifts"]

