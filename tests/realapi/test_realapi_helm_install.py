"""``helm install`` of the chart on the real kube-apiserver of this tier (v1.20: below the old
``kubeVersion: >=1.25``), in each mode, with the opt-in Grafana dashboard and PrometheusRule. This
tier runs no controller-manager nor kubelet: what is checked is what the install creates (the
objects, as the server stored them), not pods running.

The Prometheus Operator's CRDs are not at hand offline: ServiceMonitor and PrometheusRule are
installed here as schema-less CRDs of the same group, version and names, which is what the
install needs from them (the kinds served), not their validation.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from .cluster import RealCluster
from .tools import kubectl, require_tool

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "syncer"


def crd(kind: str, plural: str) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.monitoring.coreos.com"},
            "spec": {"group": "monitoring.coreos.com", "scope": "Namespaced",
                     "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


def helm(kubeconfig: Path, *args: str) -> str:
    done = subprocess.run([require_tool("helm"), "--kubeconfig", str(kubeconfig), *args], capture_output=True,
                          text=True, timeout=180, check=False)
    assert done.returncode == 0, f"helm {' '.join(args)}: {done.stderr}"
    return done.stdout


def installed(admin: Path, ns: str, release: str) -> dict[str, dict[str, Any]]:
    """kind/name -> object, of everything the release created (from helm's manifest, read back live)."""
    manifest = helm(admin, "get", "manifest", release, "-n", ns)
    out = {}
    for doc in yaml.safe_load_all(manifest):
        if not doc:
            continue
        where = doc["metadata"].get("namespace", ns)
        live = json.loads(kubectl(admin, "get", f"{doc['kind']}.{doc['apiVersion'].split('/')[0]}"
                                  if "/" in doc["apiVersion"] else doc["kind"], doc["metadata"]["name"], "-n", where,
                                  "-o", "json"))
        out[f"{doc['kind']}/{doc['metadata']['name']}"] = live
    return out


def values(tmp_path: Path, name: str, extra: dict[str, Any]) -> Path:
    base = yaml.safe_load((CHART / "ci" / "observability-values.yaml").read_text())
    base.update(extra)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(base))
    return path


def test_helm_install_in_each_mode_with_dashboard_and_rules(real_cluster: RealCluster, tmp_path: Path) -> None:
    require_tool("kubectl")
    ns = real_cluster.create_namespace("helm")
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=ns)
    crds = tmp_path / "crds.yaml"
    crds.write_text(yaml.safe_dump_all([crd("ServiceMonitor", "servicemonitors"),
                                        crd("PrometheusRule", "prometheusrules")]))
    kubectl(admin, "apply", "-f", str(crds))
    kubectl(admin, "wait", "--for=condition=Established", "--timeout=60s", "crd/servicemonitors.monitoring.coreos.com",
            "crd/prometheusrules.monitoring.coreos.com")

    # standalone, everything opt-in turned on (the chart's own observability scenario)
    helm(admin, "install", "syncer", str(CHART), "-n", ns, "-f", values(tmp_path, "standalone", {}))
    objs = installed(admin, ns, "syncer")
    assert set(objs) == {"ServiceAccount/syncer", "Role/syncer", "RoleBinding/syncer", "Service/syncer",
                         "Deployment/syncer", "ServiceMonitor/syncer", "PrometheusRule/syncer",
                         "ConfigMap/syncer-dashboard", "NetworkPolicy/syncer"}
    deploy = objs["Deployment/syncer"]
    pod = deploy["spec"]["template"]["spec"]
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}  # stored: 1.19+ knows it
    assert pod["containers"][0]["args"][0] == "run"
    rules = objs["PrometheusRule/syncer"]["spec"]["groups"][0]["rules"]
    assert [r["alert"] for r in rules] == ["SyncerDriftNotCopiedBack", "SyncerSyncErrors", "SyncerNotReady"]
    assert f'namespace="{ns}"' in rules[0]["expr"]
    dashboard = objs["ConfigMap/syncer-dashboard"]
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dashboard["data"]["syncer.json"])["uid"] == "syncer-drift"

    # cronjob: batch/v1beta1 on this v1.20 server (batch/v1 CronJob is 1.21+)
    helm(admin, "install", "cron", str(CHART), "-n", ns, "-f", values(tmp_path, "cron", {
        "mode": "cronjob", "serviceMonitor": {"enabled": False, "interval": "1m", "scrapeTimeout": "10s", "labels": {}},
        "grafanaDashboard": {"enabled": False, "labels": {}, "annotations": {}, "namespace": ""},
        "prometheusRule": {"enabled": False, "labels": {}, "driftAgeSeconds": 3600, "driftFor": "5m",
                           "errorsFor": "15m", "notReadyFor": "10m", "severity": "warning"},
        "networkPolicy": {"enabled": False, "apiServerCIDRs": [], "gitCIDRs": [], "metricsFrom": [],
                          "dnsPodSelector": {"k8s-app": "kube-dns"}}}))
    cron = installed(admin, ns, "cron")
    assert cron["CronJob/cron-syncer"]["apiVersion"] == "batch/v1beta1"
    assert cron["CronJob/cron-syncer"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"][0] \
        == "sync"

    # sidecar: the RBAC and the patch ConfigMap, no workload of its own
    helm(admin, "install", "side", str(CHART), "-n", ns, "-f", values(tmp_path, "side", {
        "mode": "sidecar", "sidecar": {"deploymentName": "ollama-endpoint-manager",
                                       "podSelector": {"app": "ollama-endpoint-manager"}},
        "networkPolicy": {"enabled": False, "apiServerCIDRs": [], "gitCIDRs": [], "metricsFrom": [],
                          "dnsPodSelector": {"k8s-app": "kube-dns"}}}))
    side = installed(admin, ns, "side")
    assert "ConfigMap/side-syncer-sidecar-patch" in side and not [k for k in side if k.startswith("Deployment/")]
    assert "PrometheusRule/side-syncer" in side and "ConfigMap/side-syncer-dashboard" in side

    listed = helm(admin, "list", "-n", ns, "-o", "json")
    assert sorted((r["name"], r["status"]) for r in json.loads(listed)) == [
        ("cron", "deployed"), ("side", "deployed"), ("syncer", "deployed")]
