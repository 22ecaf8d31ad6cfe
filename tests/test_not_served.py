"""Objects of an API the cluster does not serve (syncer/gather/served.py, issue 20): one warning, decided
from discovery, in the one-shot diff, in the sidecar's watch cache, and what a snapshot says.
The real kube-apiserver's discovery: tests/realapi/test_realapi_not_served.py."""

from __future__ import annotations

import io
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tests.conftest import git
from tests.fakes.kube_api import FakeKubeAPI
from tests.test_sidecar import agree_with_live, fake, seed, sidecar  # noqa: F401  (fake: the fixture)

from syncer.cli import main
from syncer.writeback.deliver import Mode

NOW = datetime(2026, 8, 21, 9, 0, tzinfo=timezone.utc)

EXTRA = """\
apiVersion: v1
kind: ServiceAccount
metadata:
  name: runner
---
apiVersion: talos.dev/v1alpha1
kind: ServiceAccount
metadata:
  name: runner
spec:
  roles: ["os:admin"]
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: web
spec:
  secretName: web-tls
"""


def _with_extra(work: Path, track: str) -> None:
    host = work / "hosts" / "asgard"
    (host / "extra.yaml").write_text(EXTRA)
    conf = host / "syncer.conf"
    conf.write_text(conf.read_text().replace("track:\n", f"track:\n  ServiceAccount: writeback\n{track}"))
    git(work, "add", ".")
    git(work, "commit", "-qm", "a runner and a certificate")
    git(work, "push", "-q", "origin", "main")


def _served_sa(api: FakeKubeAPI) -> None:
    api.put({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "runner", "namespace": "ai"}})


WARNINGS = [
    "ServiceAccount/ai/runner: the cluster does not serve talos.dev/v1alpha1 ServiceAccount: not compared "
    "(track.ServiceAccount writes back the ServiceAccount of v1, which it serves)",
    "Certificate/ai/web: the cluster does not serve cert-manager.io/v1 Certificate: not compared",
]


def _diff(work: Path, kubeconfig: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    code = main(["diff", "asgard", "--repo", str(work), *extra, "-o", "json"] +
                (["--kubeconfig", str(kubeconfig), "--context", "fake"] if not extra else []),
                now=NOW, stdout=out, stderr=io.StringIO())
    return code, dict(json.loads(out.getvalue()))


def test_one_shot_diff_warns_and_exits_0(asgard_repo: Path, fake: FakeKubeAPI, tmp_path: Path) -> None:
    agree_with_live(asgard_repo)
    seed(fake, asgard_repo)
    _served_sa(fake)
    _with_extra(asgard_repo, "")
    code, doc = _diff(asgard_repo, fake.kubeconfig(tmp_path / "kubeconfig"))
    assert (code, doc["drifts"], doc["errors"]) == (0, [], [])
    assert sorted(e["message"] for e in doc["warnings"]) == sorted(WARNINGS)


def test_a_kind_written_back_that_nothing_serves_stays_an_error(asgard_repo: Path, fake: FakeKubeAPI,
                                                                tmp_path: Path) -> None:
    agree_with_live(asgard_repo)
    seed(fake, asgard_repo)
    _served_sa(fake)
    _with_extra(asgard_repo, "  Certificate: writeback\n")
    code, doc = _diff(asgard_repo, fake.kubeconfig(tmp_path / "kubeconfig"))
    assert (code, doc["drifts"]) == (2, [])
    assert [e["message"] for e in doc["warnings"]] == WARNINGS[:1]
    assert [e["message"] for e in doc["errors"]] == [
        "Certificate/ai/web: the cluster does not serve cert-manager.io/v1 Certificate: its kind is written back "
        "(track.Certificate), so it is not synced; install its API (the CRD) or track Certificate as report"]


def test_a_snapshot_has_no_discovery_so_a_missing_object_is_absent_live(asgard_repo: Path, tmp_path: Path) -> None:
    """A snapshot cannot say which APIs the cluster serves: what it lacks is absent live (a drift
    that is only reported, never written), whatever its API."""
    agree_with_live(asgard_repo)
    _with_extra(asgard_repo, "")
    snapshot = tmp_path / "live.json"
    snapshot.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": []}))
    code, doc = _diff(asgard_repo, tmp_path, "--live-file", str(snapshot))
    absent = {(d["kind"], d["name"], d["detail"], d["action"]) for d in doc["drifts"]}
    assert code == 1 and doc["errors"] == []
    assert not [w for w in doc["warnings"] if "does not serve" in w["message"]]
    assert {("ServiceAccount", "runner", "declared in git, absent live", "report"),
            ("Certificate", "web", "declared in git, absent live", "report")} <= absent


def test_the_sidecar_warns_once_and_compares_the_rest(asgard_repo: Path, fake: FakeKubeAPI, tmp_path: Path) -> None:
    agree_with_live(asgard_repo)
    seed(fake, asgard_repo)
    _served_sa(fake)
    _with_extra(asgard_repo, "")
    sc = sidecar(fake, asgard_repo, tmp_path, mode=Mode.COMMIT)
    sc.start(run_loop=False)
    try:
        report = sc.loop.step()
        assert report is not None and report.error is None and report.outcome is not None
        result = report.outcome.result
        assert (result.drifts, result.errors) == ((), ())
        assert sorted(w.message for w in result.warnings) == sorted(WARNINGS)
    finally:
        sc.stop()
