"""A ``pick`` on an EndpointSlice writes what it says (issue 12): the ready candidate
endpoints, with git's entries and their comments kept where the address stays -- never a
not-ready endpoint (a sleeping backend's state) carried along by a rewritten list."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from tests.conftest import ROOT, git, pushed_repo
from tests.helpers import _loopback_only, run  # noqa: F401 - autouse fixture: loopback only

VANAHEIM_LIVE = ROOT / "examples" / "vanaheim-live.yaml"
BACKENDS = "hosts/vanaheim/ollama-backends.yaml"
ASLEEP = "10.99.99.99"  # not ready, in no candidate list


def live_file(tmp_path: Path, ipv4_endpoints: list[dict[str, Any]], mac_addrs: str | None = None) -> Path:
    """examples/vanaheim-live.yaml with mac-ollama-ipv4's endpoints (and MAC_ADDRS) replaced."""
    items = YAML(typ="safe").load(VANAHEIM_LIVE.read_text())["items"]
    for obj in items:
        if obj["kind"] == "EndpointSlice" and obj["metadata"]["name"] == "mac-ollama-ipv4":
            obj["endpoints"] = ipv4_endpoints
        if obj["kind"] == "ConfigMap" and mac_addrs is not None:
            obj["data"]["MAC_ADDRS"] = mac_addrs
    path = tmp_path / "live.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, default=str))
    return path


def ep(address: str, ready: bool) -> dict[str, Any]:
    return {"addresses": [address], "conditions": {"ready": ready}}


def commit_lines(work: Path) -> list[str]:
    """The lines the commit syncer pushed changes in BACKENDS."""
    git(work, "fetch", "-q", "origin")
    out = git(work, "show", "--format=", "--unified=0", "origin/main", "--", BACKENDS)
    return [ln for ln in out.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]


def test_a_pick_does_not_write_a_not_ready_endpoint_and_keeps_the_comment(tmp_path: Path) -> None:
    """Was: the drift said `+192.168.68.75 -192.168.68.58`, but the whole list was rewritten:
    the not-ready 10.99.99.99 went into git and `# Mac Studio, LAN` was lost."""
    work = pushed_repo(tmp_path, "vanaheim")
    live = live_file(tmp_path, [ep("192.168.68.75", True), ep(ASLEEP, False)])
    code, out, err = run("diff", "vanaheim", "--repo", str(work), "--live-file", str(live))
    assert code == 1 and err == "", err
    assert "endpoints: +192.168.68.75 -192.168.68.58 (Service mac-ollama now: 192.168.68.75)" in out
    patch = out[out.index(f"--- a/{BACKENDS}"):]
    assert ASLEEP not in patch
    assert "-      - 192.168.68.58   # Mac Studio, LAN\n+      - 192.168.68.75   # Mac Studio, LAN\n" in patch

    code, out, err = run("sync", "vanaheim", "--repo", str(work), "--live-file", str(live), "--mode", "commit")
    assert (code, err) == (0, ""), out
    assert commit_lines(work) == ["-      - 192.168.68.58   # Mac Studio, LAN",
                                  "+      - 192.168.68.75   # Mac Studio, LAN"]
    assert ASLEEP not in git(work, "show", f"origin/main:{BACKENDS}")  # (fetched by commit_lines)


def test_a_pick_adding_an_endpoint_keeps_the_staying_one_as_git_has_it(tmp_path: Path) -> None:
    work = pushed_repo(tmp_path, "vanaheim")
    live = live_file(tmp_path, [ep(ASLEEP, False), ep("192.168.68.75", True), ep("192.168.68.58", True)],
                     mac_addrs="192.168.68.58 192.168.68.75 fd7a:115c:a1e0::5a")
    code, out, err = run("diff", "vanaheim", "--repo", str(work), "--live-file", str(live))
    assert code == 1 and err == "", err
    assert "endpoints: +192.168.68.75 (Service mac-ollama now: 192.168.68.75 192.168.68.58)" in out, out
    code, out, err = run("sync", "vanaheim", "--repo", str(work), "--live-file", str(live), "--mode", "commit")
    assert (code, err) == (0, ""), out
    git(work, "fetch", "-q", "origin")
    written = git(work, "show", f"origin/main:{BACKENDS}")
    assert ASLEEP not in written
    assert "      - 192.168.68.58   # Mac Studio, LAN\n" in written  # the staying entry, comment and all
    assert all(ln.startswith("+") for ln in commit_lines(work))  # only added lines: nothing of git's rewritten
    doc = next(d for d in YAML(typ="safe").load_all(written) if d and d["metadata"]["name"] == "mac-ollama-ipv4")
    assert doc["endpoints"] == [ep("192.168.68.58", True), ep("192.168.68.75", True)]


def test_a_not_ready_endpoint_git_does_not_declare_is_no_pick(tmp_path: Path) -> None:
    """The ready address is git's: a sleeping extra endpoint is neither written nor a drift
    (before: a `pick` that committed it)."""
    work = pushed_repo(tmp_path, "vanaheim")
    live = live_file(tmp_path, [ep("192.168.68.58", True), ep(ASLEEP, False)],
                     mac_addrs="192.168.68.58 fd7a:115c:a1e0::5a")
    code, out, err = run("diff", "vanaheim", "--repo", str(work), "--live-file", str(live))
    assert err == "" and "mac-ollama-ipv4" not in out, out
    code, out, err = run("sync", "vanaheim", "--repo", str(work), "--live-file", str(live), "--mode", "commit")
    assert (code, err) == (0, "") and "nothing to commit" in out, out
