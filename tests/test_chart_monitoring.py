"""The chart's opt-in monitoring: the PrometheusRule's alerts pass ``promtool check rules`` and fire,
under ``promtool test rules``, on series taken from a running sidecar's own ``/metrics``; the Grafana
dashboard's panels ask only for metrics that sidecar serves.

promtool comes with Debian's ``prometheus`` package (``.ci/run`` installs it); without it the promtool
tests are skipped with one line (CI: they fail).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families
from tests.test_sidecar import FakeClock, live_like_example, origin, seed, sidecar

from tests.fakes.kube_api import FakeKubeAPI
from syncer.writeback.deliver import Mode

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "syncer"
VALUES = CHART / "ci" / "observability-values.yaml"
#: The labels a ServiceMonitor's scrape adds to every series of the pod.
SCRAPE_LABELS = {"namespace": "ai", "pod": "syncer-7d9f-x2k4p", "job": "syncer", "service": "syncer"}


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require(tool: str, hint: str) -> str:
    path = shutil.which(tool)
    if path is None:
        message = f"{tool} is not on PATH; {hint}"
        if _in_ci():
            pytest.fail(message + " (CI is set, so this is an error, not a skip)", pytrace=False)
        pytest.skip(message)
    return path


def rendered(kind: str) -> dict[str, Any]:
    helm = require("helm", "run bash .ci/helm.sh to install it")
    done = subprocess.run([helm, "template", "syncer", str(CHART), "-n", "ai", "-f", str(VALUES)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return next(d for d in yaml.safe_load_all(done.stdout) if d and d["kind"] == kind)


@pytest.fixture(scope="module")
def scrapes(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """Two ``/metrics`` scrapes of a sidecar watching the fake API server: after a pass that found
    the example's drift, then after a pass whose git fetch failed (the remote went away)."""
    tmp_path = tmp_path_factory.mktemp("scrapes")
    from tests.conftest import pushed_repo

    work = pushed_repo(tmp_path, "asgard")
    with FakeKubeAPI() as api:
        seed(api, work)
        live_like_example(api)
        clock = FakeClock(datetime(2026, 9, 1, 12, 0, tzinfo=timezone.utc))
        sc = sidecar(api, work, tmp_path, mode=Mode.DRY_RUN, listen=("127.0.0.1", 0), clock=clock)
        sc.start(run_loop=False)
        try:
            assert sc.server is not None
            url = f"http://127.0.0.1:{sc.server.port}/metrics"
            report = sc.loop.step()
            assert report is not None and report.error is None
            first = httpx.get(url, timeout=5, trust_env=False).text
            origin(work).rename(tmp_path / "gone.git")
            sc.loop.poke()
            sc.loop.step()
            second = httpx.get(url, timeout=5, trust_env=False).text
        finally:
            sc.stop()
    return first, second


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if not s.name.endswith("_created"):
                out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def series(name: str, labels: tuple[tuple[str, str], ...]) -> str:
    both = {**dict(labels), **SCRAPE_LABELS}
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(both.items())) + "}"


def test_the_rules_pass_promtool_check(tmp_path: Path) -> None:
    promtool = require("promtool", "apt-get install prometheus (Debian's package ships promtool)")
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": rendered("PrometheusRule")["spec"]["groups"]}))
    done = subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 3 rules found" in done.stdout


def test_the_alerts_fire_on_the_sidecar_s_real_series(scrapes: tuple[str, str], tmp_path: Path) -> None:
    """Each series is one the sidecar served (name, labels, value), with the scrape's own labels;
    minute 0-4 hold the first scrape's value, minute 5 on the second's. A counter that failed once
    keeps failing (a remote that stays away fails every pass: +1 a minute), a drift age grows with
    the clock. Annotations are left out of the tested copy (their text is promtool check's)."""
    promtool = require("promtool", "apt-get install prometheus (Debian's package ships promtool)")
    first, second = (samples(s) for s in scrapes)
    before_keys = set(first)
    inputs = []
    for (name, labels), value in second.items():
        if name not in ("syncer_drift_age_seconds", "syncer_sync_errors_total", "syncer_ready"):
            continue
        start = first.get((name, labels), value)
        if name == "syncer_drift_age_seconds":
            values = f"{start:g}+60x40"
        elif name == "syncer_sync_errors_total" and value > start:
            values = f"{start:g}x4 {value:g}+1x35"
        else:
            values = f"{start:g}x4 {value:g}x35"
        inputs.append({"series": series(name, labels), "values": values})
    assert ("syncer_ready", (("installation", "asgard"),)) in before_keys
    assert first[("syncer_ready", (("installation", "asgard"),))] == 1.0  # ready after a good pass
    assert second[("syncer_ready", (("installation", "asgard"),))] == 0.0  # not once git failed
    failed = [dict(lb)["stage"] for (n, lb), v in second.items()
              if n == "syncer_sync_errors_total" and v > first.get((n, lb), 0)]
    assert failed == ["git"], failed
    drifting = sorted((dict(lb)["kind"], dict(lb)["name"]) for (n, lb) in second if n == "syncer_drift_age_seconds")
    assert drifting == [("ConfigMap", "ollama-endpoint-manager"), ("Endpoints", "m1-ollama"),
                        ("Endpoints", "mac-ollama")]

    groups = rendered("PrometheusRule")["spec"]["groups"]
    for group in groups:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    base = {"namespace": "ai", "severity": "warning"}
    drift = [{"exp_labels": {**base, "installation": "asgard", "kind": k, "name": n}} for k, n in drifting]
    test = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": inputs,
        "alert_rule_test": [
            # Before the failure: the drift (days old) fires once it held 5m; nothing else.
            {"eval_time": "4m", "alertname": "SyncerSyncErrors", "exp_alerts": []},
            {"eval_time": "4m", "alertname": "SyncerNotReady", "exp_alerts": []},
            {"eval_time": "6m", "alertname": "SyncerDriftNotCopiedBack", "exp_alerts": drift},
            # Not ready from minute 5: fires after 10m, not before.
            {"eval_time": "12m", "alertname": "SyncerNotReady", "exp_alerts": []},
            {"eval_time": "16m", "alertname": "SyncerNotReady", "exp_alerts": [
                {"exp_labels": {**base, "installation": "asgard", "pod": SCRAPE_LABELS["pod"]}}]},
            # git failing every pass from minute 5: fires once that held 15m.
            {"eval_time": "18m", "alertname": "SyncerSyncErrors", "exp_alerts": []},
            {"eval_time": "22m", "alertname": "SyncerSyncErrors", "exp_alerts": [
                {"exp_labels": {**base, "stage": "git"}}]},
        ]}]}
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(test, sort_keys=False))
    done = subprocess.run([promtool, "test", "rules", "test.yaml"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr + (tmp_path / "test.yaml").read_text()[:3000]


def test_the_dashboard_asks_only_for_metrics_the_sidecar_serves(scrapes: tuple[str, str]) -> None:
    served = {name for name, _ in samples(scrapes[1])}
    helm = require("helm", "run bash .ci/helm.sh to install it")
    done = subprocess.run([helm, "template", "syncer", str(CHART), "-n", "ai", "-f", str(VALUES), "--show-only",
                           "templates/grafana-dashboard.yaml"], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    cm = yaml.safe_load(done.stdout)
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["metadata"]["annotations"] == {"grafana_folder": "GitOps"}
    dashboard = json.loads(cm["data"]["syncer.json"])
    titles = {p["title"] for p in dashboard["panels"]}
    assert {"Drifting objects by class", "Drift age per object", "Since the last sync", "Errors by stage",
            "Watch restarts", "Pull request open", "Ready"} <= titles
    asked = {m for p in dashboard["panels"] for t in p["targets"] for m in re.findall(r"\bsyncer_[a-z_]+", t["expr"])}
    assert asked and asked <= served, asked - served
    for p in dashboard["panels"]:  # every label a panel filters or groups by is one the series carry
        for t in p["targets"]:
            assert "$namespace" in t["expr"]
