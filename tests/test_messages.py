"""Messages people read: a multi-line value is summarised per changed line in the commit message
and the PR row (as the log says it), and a PR row says when the changed line's trailing comment
in git may describe the old value."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import EXAMPLE_LIVE, git
from tests.helpers import run

from syncer.cli import main
from syncer.detect.values import changed_lines, describe_line
from syncer.yamledit import YamlFile

ROUTER = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: router
  namespace: ai
data:
  router.env: |   # routing knobs, tuned for the M1
    OLLAMA_ROUTING_MODE=least_inflight
    OLLAMA_MAX_QUEUE=8
    OLLAMA_KEEP_ALIVE=5m
    OLLAMA_DEBUG=0
"""
LIVE_ENV = "OLLAMA_ROUTING_MODE=weighted\nOLLAMA_MAX_QUEUE=8\nOLLAMA_KEEP_ALIVE=5m\nOLLAMA_DEBUG=0\nOLLAMA_NEW=1\n"


def with_router(work: Path, tmp_path: Path) -> Path:
    """Add the router ConfigMap to asgard in git; return a live snapshot where one line changed
    (and one was added) by kubectl edit."""
    (work / "hosts" / "asgard" / "router.yaml").write_text(ROUTER)
    git(work, "add", ".")
    git(work, "commit", "-qm", "router")
    git(work, "push", "-q", "origin", "main")
    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "router", "namespace": "ai"},
               "data": {"router.env": ROUTER.split("|   # routing knobs, tuned for the M1\n")[1].replace("    ", "")}}
    live = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "router", "namespace": "ai", "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": json.dumps(applied)}, "managedFields": [
                {"manager": "kubectl-edit", "operation": "Update", "time": "2026-08-22T10:00:00Z",
                 "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:router.env": {}}}}]},
            "data": {"router.env": LIVE_ENV}}
    path = tmp_path / "router-live.json"
    path.write_text(json.dumps(live))
    return path


def test_changed_lines_pairs_and_words() -> None:
    pairs = changed_lines("A=1\nB=2\nC=3\n", "A=1\nB=20\nC=3\nD=4\n")
    assert pairs == [("B=2", "B=20"), (None, "D=4")]
    assert [describe_line(o, n) for o, n in pairs] == ["B: 2 → 20", "+ D=4"]
    assert describe_line("plain old", "plain new") == "plain old → plain new"
    assert describe_line("gone", None) == "- gone"


def test_commit_message_summarises_a_multiline_value_per_line(asgard_repo: Path, tmp_path: Path) -> None:
    live = with_router(asgard_repo, tmp_path)
    code, out, err = run("sync", "asgard", "--repo", str(asgard_repo), "--mode", "commit",
                         "--live-file", str(EXAMPLE_LIVE), "--live-file", str(live))
    assert code == 0, err
    message = git(tmp_path, "--git-dir", str(tmp_path / "origin.git"), "log", "-1", "--format=%B", "main")
    block = message[message.index("ConfigMap/ai/router"):].split("\n\n")[0]
    assert block.splitlines() == [
        "ConfigMap/ai/router (hosts/asgard/router.yaml):",
        "  data.router.env: 2 line(s) changed",
        "    OLLAMA_ROUTING_MODE: least_inflight → weighted",
        "    + OLLAMA_NEW=1",
        "    value by kubectl-edit at 2026-08-22T10:00:00Z",
    ]
    assert "OLLAMA_KEEP_ALIVE" not in message  # unchanged lines stay out
    # The single-line values keep their old -> new form.
    assert "  data.MAC_ADDRS: 192.168.68.58 100.115.97.90 -> 192.168.68.75 100.115.97.90" in message


def test_pr_row_of_a_multiline_value_and_a_stale_comment(asgard_repo: Path, tmp_path: Path) -> None:
    live = with_router(asgard_repo, tmp_path)
    code, out, err = run("sync", "asgard", "--repo", str(asgard_repo), "--mode", "dry-run",
                         "--live-file", str(EXAMPLE_LIVE), "--live-file", str(live))
    assert code == 0, err
    rows = {ln.split(" | ")[2]: ln for ln in out.splitlines() if ln.startswith("| ConfigMap/") or
            ln.startswith("| Endpoints/")}
    router = rows["data.router.env"]
    assert (" | <code>OLLAMA_ROUTING_MODE=least_inflight</code><br>— | <code>OLLAMA_ROUTING_MODE=weighted</code><br>"
            "<code>OLLAMA_NEW=1</code>") in router
    assert "OLLAMA_KEEP_ALIVE" not in router and "⏎" not in router
    # The block scalar's header comment stays through the edit: the row says it may be stale.
    assert ("the comment on this line in git, <code># routing knobs, tuned for the M1</code>, may describe the old "
            "value") in router
    # asgard's Endpoints lines carry comments naming the host of the old address.
    by_object = {ln.split(" | ")[0]: ln for ln in out.splitlines() if ln.startswith("| Endpoints/")}
    assert ("<code>192.168.68.75</code> ⚠️ the comment on this line in git, <code># Mac Studio, LAN</code>, may "
            "describe the old value" in by_object["| Endpoints/ai/mac-ollama"])
    assert "<code># M1 laptop, tailnet</code>, may describe the old value" in by_object["| Endpoints/ai/m1-ollama"]
    # Values whose line has no comment say nothing of the kind.
    assert "may describe" not in rows["data.MAC_ADDRS"]


def test_trailing_comment_is_the_comment_after_the_value_only() -> None:
    doc = YamlFile.parse('a: 1   # one\nb: "x # not a comment"\nc: y#z\nd: |  # header\n  body\ne: [1, 2] # flow\n')
    assert doc.trailing_comment(0, ("a",)) == "# one"
    assert doc.trailing_comment(0, ("b",)) is None
    assert doc.trailing_comment(0, ("c",)) is None
    assert doc.trailing_comment(0, ("d",)) == "# header"
    assert doc.trailing_comment(0, ("e", 1)) is None  # not the end of its line
    assert doc.trailing_comment(0, ("nope",)) is None
