"""Every comparison rule of issue #15 on objects as real tools produce them, through the CLI.

Each case is a manifest (as a person writes it) and the live object (as the API server returns
it, with managedFields as kubectl edit / apply / admission leave them).  ``diff`` must see
exactly the real differences, and ``sync --mode pr --forge none`` must write only what the
rules allow, whole, and nothing else.
"""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import NOW, git

from syncer.cli import main
from syncer.detect.diff import compare, quantity
from syncer.sources.manifests import parse_documents
from syncer.model import DriftClass
from syncer.detect.normalize import normalize
from syncer.writeback.plan import plan_changes

DEPLOY = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: apps
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: app
          image: web:1  # pinned
          env:
            - name: MODE
              value: fast
          resources:
            requests:
              cpu: 1000m
              memory: 1Gi
          volumeMounts:
            - name: conf
              mountPath: /etc/web
              readOnly: false
      volumes:
        - name: conf
          configMap:
            name: web
            defaultMode: 0755
"""


def _live_deploy(**changes: Any) -> dict[str, Any]:
    """The Deployment above as the API server returns it: defaults filled in, zero values dropped."""
    container = {
        "name": "app", "image": "web:1", "imagePullPolicy": "IfNotPresent",
        "env": [{"name": "MODE", "value": "fast"}],
        "resources": {"requests": {"cpu": "1", "memory": "1024Mi"}},
        "volumeMounts": [{"name": "conf", "mountPath": "/etc/web"}],
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
    }
    obj: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "apps", "uid": "u1", "resourceVersion": "9", "generation": 3,
                     "managedFields": [_mf("kubectl-client-side-apply", "2026-08-01T10:00:00Z", {"f:spec": {"f:replicas": {}}})]},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [container], "restartPolicy": "Always",
                                       "volumes": [{"name": "conf", "configMap": {"name": "web",
                                                                                    "defaultMode": 493}}]}}},
        "status": {"replicas": 2},
    }
    for key, value in changes.items():
        obj[key] = value
    return obj


def _mf(manager: str, time: str, fields: dict[str, Any], operation: str = "Update") -> dict[str, Any]:
    return {"manager": manager, "operation": operation, "apiVersion": "apps/v1", "time": time,
            "fieldsType": "FieldsV1", "fieldsV1": fields}


def _containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return obj["spec"]["template"]["spec"]["containers"]  # type: ignore[no-any-return]


def _repo(tmp: Path, files: dict[str, str], live: list[dict[str, Any]], track: str) -> tuple[Path, Path, Path]:
    bare, work = tmp / "origin.git", tmp / "work"
    git(tmp, "init", "-q", "--bare", "-b", "main", str(bare))
    host = work / "hosts" / "t"
    host.mkdir(parents=True)
    git(work, "init", "-q", "-b", "main")
    (host / "syncer.conf").write_text(f"installation: t\nnamespace: apps\ntrack:\n{track}")
    for name, text in files.items():
        (host / name).write_text(text)
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "manifests")
    git(work, "remote", "add", "origin", str(bare))
    git(work, "push", "-q", "origin", "main")
    snap = tmp / "live.json"
    snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": live}))
    return bare, work, snap


def _diff(work: Path, snap: Path) -> dict[tuple[str, str], tuple[str, str, str]]:
    out = io.StringIO()
    main(["diff", "t", "--repo", str(work), "--live-file", str(snap), "-o", "json"], now=NOW, stdout=out)
    doc = json.loads(out.getvalue())
    assert doc["errors"] == []
    return {(d["kind"], d["path"]): (d["class"], d["action"], d["reason"]) for d in doc["drifts"]}


def _pr(work: Path, snap: Path, bare: Path, tmp: Path) -> tuple[str, str | None]:
    """Run ``sync --mode pr --forge none``; (output, the proposed file text or None)."""
    out = io.StringIO()
    main(["sync", "t", "--repo", str(work), "--live-file", str(snap), "--mode", "pr", "--forge", "none",
          "--remote", str(bare), "--clone-dir", str(tmp / "clone")], now=NOW, stdout=out)
    ok = subprocess.run(["git", "-C", str(bare), "rev-parse", "--verify", "-q", "syncer/t"],
                        capture_output=True).returncode == 0
    return out.getvalue(), git(bare, "show", "syncer/t:hosts/t/web.yaml") + "\n" if ok else None


# -- values by meaning ----------------------------------------------------------------------------


def test_a_person_writes_it_the_server_stores_it_no_drift(tmp_path: Path) -> None:
    """1000m == "1", 1Gi == 1024Mi, 0755 == 493, readOnly: false == absent."""
    bare, work, snap = _repo(tmp_path, {"web.yaml": DEPLOY}, [_live_deploy()], "  Deployment: writeback\n")
    assert _diff(work, snap) == {}
    out, proposed = _pr(work, snap, bare, tmp_path)
    assert proposed is None, out


@pytest.mark.parametrize(("a", "b", "same"), [
    ("1000m", "1", True), (1, "1000m", True), ("1Gi", "1024Mi", True), ("0.5", "500m", True),
    ("1G", "1000M", True), ("1e3", "1k", True), ("500m", "1", False), ("1Gi", "1G", False),
])
def test_quantities_compare_canonically(a: Any, b: Any, same: bool) -> None:
    git_obj = {"kind": "Pod", "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": a}}}]}}
    live_obj = {"kind": "Pod", "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": b}}}]}}
    assert (compare("Pod", git_obj, live_obj) == []) is same
    assert quantity("bogus") is None


LIMITS = """\
apiVersion: v1
kind: LimitRange
metadata: {name: limits}
spec:
  limits:
    - type: Container
      default: {cpu: 1000m, memory: 1024Mi}
      defaultRequest: {cpu: 500m, ephemeral-storage: 2048Mi}
      max: {cpu: "2.0", memory: 2048Mi}
      min: {cpu: 0.1}
      maxLimitRequestRatio: {cpu: "2.0"}
"""
#: The LimitRange above as kube-apiserver stores it (tests/realapi shows the real one).
LIMITS_STORED = {"spec": {"limits": [{"type": "Container", "default": {"cpu": "1", "memory": "1Gi"},
                                      "defaultRequest": {"cpu": "500m", "ephemeral-storage": "2Gi"},
                                      "max": {"cpu": "2", "memory": "2Gi"}, "min": {"cpu": "100m"},
                                      "maxLimitRequestRatio": {"cpu": "2"}}]}}
HPA = """\
apiVersion: autoscaling/v2beta2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  maxReplicas: 3
  metrics:
    - {type: Resource, resource: {name: cpu, target: {type: AverageValue, averageValue: 1000m}}}
    - {type: Pods, pods: {metric: {name: qps}, target: {type: AverageValue, averageValue: 1500m}}}
    - {type: Object, object: {metric: {name: hits}, target: {type: Value, value: 2048Mi}}}
    - {type: External, external: {metric: {name: queue}, target: {type: Value, value: "10.0"}}}
    - {type: ContainerResource, containerResource: {name: cpu, container: app,
                                                    target: {type: AverageValue, averageValue: 0.5}}}
"""
HPA_STORED = {"spec": {"maxReplicas": 3, "metrics": [
    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "AverageValue", "averageValue": "1"}}},
    {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1500m"}}},
    {"type": "Object", "object": {"metric": {"name": "hits"}, "target": {"type": "Value", "value": "2Gi"}}},
    {"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "Value", "value": "10"}}},
    {"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "app", "target": {
        "type": "AverageValue", "averageValue": "500m"}}}]}}
HPA_V2BETA1 = """\
apiVersion: autoscaling/v2beta1
kind: HorizontalPodAutoscaler
metadata: {name: old}
spec:
  maxReplicas: 3
  metrics:
    - {type: Resource, resource: {name: memory, targetAverageValue: 1024Mi}}
    - {type: Pods, pods: {metricName: qps, targetAverageValue: 1500m}}
    - {type: Object, object: {metricName: hits, targetValue: 2000m, averageValue: 1000m}}
    - {type: External, external: {metricName: queue, targetValue: "10.0", targetAverageValue: 0.5}}
"""
HPA_V2BETA1_STORED = {"spec": {"maxReplicas": 3, "metrics": [
    {"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "1Gi"}},
    {"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "1500m"}},
    {"type": "Object", "object": {"metricName": "hits", "targetValue": "2", "averageValue": "1"}},
    {"type": "External", "external": {"metricName": "queue", "targetValue": "10", "targetAverageValue": "500m"}}]}}
QUOTA_AND_VOLUMES = """\
apiVersion: v1
kind: ResourceQuota
metadata: {name: q}
spec:
  hard: {requests.cpu: 4000m, requests.storage: 10240Mi, limits.ephemeral-storage: 1024Gi}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv}
spec:
  capacity: {storage: 1024Mi}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  resources: {requests: {storage: 1024Mi}, limits: {storage: 2048Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  overhead: {cpu: 250m}
  resources: {limits: {cpu: 2000m}}
  containers:
    - name: app
      env:
        - name: CPU
          valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 1000m}}
  volumes:
    - {name: scratch, emptyDir: {sizeLimit: 1024Mi}}
    - name: claim
      ephemeral:
        volumeClaimTemplate:
          spec: {resources: {requests: {storage: 512Mi}}}
"""
QUOTA_AND_VOLUMES_STORED = [
    {"spec": {"hard": {"requests.cpu": "4", "requests.storage": "10Gi", "limits.ephemeral-storage": "1Ti"}}},
    {"spec": {"capacity": {"storage": "1Gi"}}},
    {"spec": {"resources": {"requests": {"storage": "1Gi"}, "limits": {"storage": "2Gi"}}}},
    {"spec": {"overhead": {"cpu": "250m"}, "resources": {"limits": {"cpu": "2"}},
              "containers": [{"name": "app", "env": [{"name": "CPU", "valueFrom": {"resourceFieldRef": {
                  "resource": "limits.cpu", "divisor": "1"}}}]}],
              "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}},
                          {"name": "claim", "ephemeral": {"volumeClaimTemplate": {"spec": {"resources": {
                              "requests": {"storage": "512Mi"}}}}}}]}},
]


@pytest.mark.parametrize(("text", "stored"), [
    (LIMITS, [LIMITS_STORED]), (HPA, [HPA_STORED]), (HPA_V2BETA1, [HPA_V2BETA1_STORED]),
    (QUOTA_AND_VOLUMES, QUOTA_AND_VOLUMES_STORED),
], ids=["LimitRange", "HPA-v2beta2", "HPA-v2beta1", "quota-volumes-pod"])
def test_every_quantity_the_api_holds_compares_by_amount(text: str, stored: list[dict[str, Any]]) -> None:
    for git_obj, live in zip(parse_documents(text, "q.yaml"), stored, strict=True):
        assert compare(git_obj["kind"], {"spec": git_obj["spec"]}, live) == [], git_obj["kind"]


def test_quantity_spelling_counts_where_the_api_holds_no_quantity() -> None:
    """A ConfigMap value, a custom resource's field, an annotation: compared as spelled."""
    cm = {"data": {"cpu": "1000m", "storage": "1024Mi", "limits": "1Gi"}}
    live = {"data": {"cpu": "1", "storage": "1Gi", "limits": "1024Mi"}}
    assert [d.path for d in compare("ConfigMap", cm, live)] == [("data", "cpu"), ("data", "storage"),
                                                                ("data", "limits")]
    widget = {"spec": {"storage": "1024Mi", "hard": {"cpu": "1000m"}, "max": {"cpu": "2.0"}, "target": {"value": "1000m"}}}
    stored = {"spec": {"storage": "1Gi", "hard": {"cpu": "1"}, "max": {"cpu": "2"}, "target": {"value": "1"}}}
    assert len(compare("Widget", widget, stored)) == 4
    # LimitRange's and HPA's fields by those names, in another kind, are not quantities either.
    assert len(compare("Deployment", {"spec": {"limits": [{"max": {"cpu": "2.0"}}]}},
                       {"spec": {"limits": [{"max": {"cpu": "2"}}]}})) == 1
    assert len(compare("ConfigMap", {"metadata": {"annotations": {"requests": "1000m"}}},
                       {"metadata": {"annotations": {"requests": "1"}}})) == 1
    # ...while a custom resource embedding ResourceRequirements compares them by amount.
    assert compare("Widget", {"spec": {"resources": {"limits": {"cpu": "1000m"}}}},
                   {"spec": {"resources": {"limits": {"cpu": "1"}}}}) == []


def test_a_limit_range_respelled_by_the_server_commits_nothing(tmp_path: Path) -> None:
    git_obj = parse_documents(LIMITS, "q.yaml")[0]
    live = {**git_obj, **LIMITS_STORED, "metadata": {
        "name": "limits", "namespace": "apps", "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": json.dumps({**git_obj, "metadata": {
                "name": "limits", "namespace": "apps"}})},
        "managedFields": [{**_mf("kubectl-client-side-apply", "2026-08-01T10:00:00Z", {"f:spec": {"f:limits": {}}}),
                           "apiVersion": "v1"}]}}
    bare, work, snap = _repo(tmp_path, {"web.yaml": LIMITS}, [live], "  LimitRange: writeback\n")
    assert _diff(work, snap) == {}
    main(["sync", "t", "--repo", str(work), "--live-file", str(snap), "--mode", "commit", "--remote", str(bare),
          "--clone-dir", str(tmp_path / "clone")], now=NOW, stdout=io.StringIO())
    assert git(bare, "rev-list", "--count", "main") == "1"


def test_int_or_string_and_zero_values() -> None:
    git_obj = {"spec": {"ports": [{"port": 80, "targetPort": "8080", "nodePort": 0}], "publishNotReadyAddresses": False,
                        "externalIPs": [], "selector": {}, "sessionAffinity": ""}}
    live_obj = {"spec": {"ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}]}}
    assert compare("Service", git_obj, live_obj) == []
    live_obj["spec"]["ports"][0]["targetPort"] = 8081
    assert [(d.path, d.cls) for d in compare("Service", git_obj, live_obj)] == [
        (("spec", "ports", 0, "targetPort"), DriftClass.VALUE)]


def test_yaml_11_reading_yes_is_a_boolean_where_the_schema_wants_one() -> None:
    git_obj = parse_documents("kind: Widget\nspec:\n  enabled: yes\n  mode: 0644\n  at: 12:30\n", "w.yaml")[0]
    assert compare("Widget", git_obj, {"kind": "Widget", "spec": {"enabled": True, "mode": 420, "at": "12:30"}}) == []
    # ...and a string-typed field holding "yes" is a real difference: kubectl would send true.
    assert len(compare("Widget", git_obj, {"kind": "Widget", "spec": {"enabled": "yes", "mode": 420,
                                                                        "at": "12:30"}})) == 1


def test_secret_string_data_is_the_base64_data_the_server_stores(tmp_path: Path) -> None:
    secret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  user: admin\n"
    live = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "apps"},
            "type": "Opaque", "data": {"user": "YWRtaW4="}}
    bare, work, snap = _repo(tmp_path, {"s.yaml": secret}, [live], "  Secret: writeback\n")
    assert _diff(work, snap) == {}
    live["data"]["user"] = "cm9vdA=="
    snap.write_text(json.dumps(live))
    found = _diff(work, snap)
    assert list(found) == [("Secret", "data.user")]
    assert found[("Secret", "data.user")][1] == "report"  # Secrets are never written


def test_namespace_on_a_cluster_scoped_object_means_nothing(tmp_path: Path) -> None:
    role = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: r\n  namespace: apps\nrules: []\n"
    crd_obj = "apiVersion: example.io/v1\nkind: Cluster\nmetadata:\n  name: c\n  namespace: apps\nspec:\n  size: 3\n"
    live = [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"},
             "rules": None},
            {"apiVersion": "example.io/v1", "kind": "Cluster", "metadata": {"name": "c"}, "spec": {"size": 3}}]
    bare, work, snap = _repo(tmp_path, {"r.yaml": role, "c.yaml": crd_obj}, live, "  ClusterRole: writeback\n"
                             "  Cluster: writeback\n")
    assert _diff(work, snap) == {}


def test_the_same_kind_in_another_version_is_named_plainly(tmp_path: Path) -> None:
    hpa = "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: h\nspec:\n  maxReplicas: 3\n"
    live = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h", "namespace": "apps"}, "spec": {"maxReplicas": 3}}
    bare, work, snap = _repo(tmp_path, {"h.yaml": hpa}, [live], "  HorizontalPodAutoscaler: writeback\n")
    out = io.StringIO()
    code = main(["diff", "t", "--repo", str(work), "--live-file", str(snap)], now=NOW, stdout=out)
    # One note naming the object and how to export it in git's version; no drift (exit 0).
    assert code == 0, out.getvalue()
    assert ("note: HorizontalPodAutoscaler/apps/h not compared: the snapshot holds it as autoscaling/v2, git "
            "declares autoscaling/v1; export it in git's version: kubectl get horizontalpodautoscalers.v1.autoscaling "
            "h -n apps -o yaml --show-managed-fields") in out.getvalue()
    assert "absent live" not in out.getvalue() and "removed" not in out.getvalue()


# -- lists by their API semantics ---------------------------------------------------------------


def test_keyed_lists_match_by_key_not_position() -> None:
    live = _live_deploy()
    c = _containers(live)
    c.insert(0, {"name": "other", "image": "o:1"})
    c[1]["env"].insert(0, {"name": "FIRST", "value": "x"})
    git_obj = normalize(parse_documents(DEPLOY, "web.yaml")[0])
    found = [(d.path, d.cls, d.live_path) for d in compare("Deployment", git_obj, normalize(live))]
    base = ("spec", "template", "spec", "containers")
    assert found == [
        (base + (0, "env", 1), DriftClass.ADDED, base + (1, "env", 0)),
        (base + (1,), DriftClass.ADDED, base + (0,)),
    ]


def test_a_key_changed_live_is_one_change_of_that_key() -> None:
    """A port number or an env var's name changed live: the API keys the item by it, so the item
    reads as gone plus one only live. When the two pair up (the same count gone as only live, every
    other declared field still held) it is one change of the key, and the server's default for a
    key field git omits (``protocol: TCP``) is no difference; an item removed and an unrelated one
    added stay what they are."""
    git_obj = {"spec": {"template": {"spec": {"containers": [
        {"name": "app", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
         "ports": [{"containerPort": 8080}]}]}}}}
    live = {"spec": {"template": {"spec": {"containers": [
        {"name": "app", "env": [{"name": "A", "value": "1"}, {"name": "B2", "value": "2"}],
         "ports": [{"containerPort": 8081, "protocol": "TCP"}]}]}}}}
    base = ("spec", "template", "spec", "containers", 0)
    found = [(d.path, d.cls, d.git, d.live, d.live_path) for d in compare("Deployment", git_obj, live)]
    assert found == [
        (base + ("env", 1, "name"), DriftClass.VALUE, "B", "B2", base + ("env", 1, "name")),
        (base + ("ports", 0, "containerPort"), DriftClass.VALUE, 8080, 8081, base + ("ports", 0, "containerPort")),
    ]
    # another value as well: not the same item renamed, an item removed and another added
    _containers(live)[0]["env"][1]["value"] = "3"
    found = [(d.path, d.cls) for d in compare("Deployment", git_obj, live)]
    assert (base + ("env", 1), DriftClass.REMOVED) in found and (base + ("env", 2), DriftClass.ADDED) in found
    # two gone, one only live: nothing pairs
    git_obj["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "C", "value": "4"})
    _containers(live)[0]["env"][1]["value"] = "2"
    found = [(d.path, d.cls) for d in compare("Deployment", git_obj, live)]
    assert [c for _, c in found if c is not DriftClass.VALUE] == [DriftClass.REMOVED, DriftClass.REMOVED,
                                                                   DriftClass.ADDED]


def test_sets_compare_in_any_order_and_atomic_lists_whole() -> None:
    eps = {"subsets": [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}]}]}
    live = {"subsets": [{"addresses": [{"ip": "10.0.0.2", "nodeName": "n"}, {"ip": "10.0.0.1"}]}]}
    assert compare("Endpoints", eps, live) == []
    rules = {"rules": [{"verbs": ["get"]}, {"verbs": ["list"]}]}
    found = compare("ClusterRole", rules, {"rules": [{"verbs": ["get"], "resources": ["pods"]}]})
    assert [(d.path, d.cls, d.live) for d in found] == [(("rules",), DriftClass.VALUE,
                                                          [{"verbs": ["get"], "resources": ["pods"]}])]


# -- items only live: reported with their manager, written whole only when a person added them ----


def _env_added_by(manager: str) -> dict[str, Any]:
    live = _live_deploy()
    _containers(live)[0]["env"].append({"name": "DEBUG", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}})
    fields = {"f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"app"}': {"f:env": {
        'k:{"name":"DEBUG"}': {".": {}, "f:name": {}, "f:valueFrom": {"f:fieldRef": {"f:fieldPath": {}}}}}}}}}}}
    live["metadata"]["managedFields"].append(_mf(manager, "2026-08-20T09:00:00Z", fields))
    return live


def test_an_env_var_a_person_added_live_is_proposed_whole(tmp_path: Path) -> None:
    bare, work, snap = _repo(tmp_path, {"web.yaml": DEPLOY}, [_env_added_by("kubectl-edit")], "  Deployment: writeback\n")
    path = "spec.template.spec.containers[0].env[1]"
    assert _diff(work, snap)[("Deployment", path)][:2] == ("added", "write")
    out, proposed = _pr(work, snap, bare, tmp_path)
    assert proposed is not None, out
    old = parse_documents(DEPLOY, "web.yaml")[0]
    _containers(old)[0]["env"].append({"name": "DEBUG", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}})
    assert parse_documents(proposed, "web.yaml")[0] == old  # the whole item, valueFrom included, nothing else
    assert "image: web:1  # pinned" in proposed and "defaultMode: 0755" in proposed


def test_items_from_admission_or_the_server_are_reported_never_written(tmp_path: Path) -> None:
    live = _live_deploy()
    spec = live["spec"]["template"]["spec"]
    spec["containers"].append({"name": "istio-proxy", "image": "proxyv2:1.22"})
    spec["volumes"].append({"name": "istio-envoy", "emptyDir": {}})
    spec["tolerations"] = [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                            "tolerationSeconds": 300}]
    text = DEPLOY + "      tolerations:\n        - key: dedicated\n          operator: Exists\n"
    spec["tolerations"].insert(0, {"key": "dedicated", "operator": "Exists"})
    bare, work, snap = _repo(tmp_path, {"web.yaml": text}, [live], "  Deployment: writeback\n")
    found = _diff(work, snap)
    assert {k[1]: v[:2] for k, v in found.items()} == {
        "spec.template.spec.containers[1]": ("added", "report"),
        "spec.template.spec.volumes[1]": ("added", "report"),
        "spec.template.spec.tolerations[1]": ("added", "report"),
    }
    assert all("not by a person: never written" in v[2] for v in found.values())
    out, proposed = _pr(work, snap, bare, tmp_path)
    assert proposed is None, out


POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: p
  namespace: apps
spec:
  containers:
    - name: app
      image: web:1
  tolerations:
    - key: dedicated
      operator: Exists
"""


def _pod_with_default_tolerations(manager: str, operation: str) -> dict[str, Any]:
    """The Pod above as the server stores it after one request by ``manager``: the
    DefaultTolerationSeconds admission plugin added two tolerations, and managedFields record them
    under the request's manager (what kube-apiserver v1.32 did for ``kubectl apply``)."""
    default = [{"key": f"node.kubernetes.io/{k}", "operator": "Exists", "effect": "NoExecute",
                "tolerationSeconds": 300} for k in ("not-ready", "unreachable")]
    owned = {'k:{"key":"dedicated","operator":"Exists"}': {".": {}, "f:key": {}, "f:operator": {}},
             **{f'k:{{"effect":"NoExecute","key":"{t["key"]}","operator":"Exists"}}':
                {".": {}, "f:effect": {}, "f:key": {}, "f:operator": {}, "f:tolerationSeconds": {}} for t in default}}
    applied = json.dumps(parse_documents(POD, "web.yaml")[0], separators=(",", ":"))
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "apps", "uid": "u2", "resourceVersion": "5",
                         "annotations": {"kubectl.kubernetes.io/last-applied-configuration": applied + "\n"},
                         "managedFields": [{**_mf(manager, "2026-08-20T09:00:00Z", {"f:spec": {
                             "f:containers": {'k:{"name":"app"}': {".": {}, "f:image": {}, "f:name": {}}},
                             "f:tolerations": owned}}, operation), "apiVersion": "v1"}]},
            "spec": {"containers": [{"name": "app", "image": "web:1"}],
                     "tolerations": [{"key": "dedicated", "operator": "Exists"}, *default]}}


@pytest.mark.parametrize("manager,operation", [
    ("kubectl-client-side-apply", "Update"),  # kubectl apply
    ("kubectl", "Apply"),  # kubectl apply --server-side
    ("kubectl-create", "Update"),
    ("kubectl-replace", "Update"),
    ("helm", "Update"),
    ("gitops-robot", "Update"),  # named in the installation's appliers
    ("kubectl-edit", "Apply"),  # whatever its name, an Apply is an applier
])
def test_admission_items_recorded_under_an_applier_or_creator_are_never_written(
        tmp_path: Path, manager: str, operation: str) -> None:
    bare, work, snap = _repo(tmp_path, {"web.yaml": POD}, [_pod_with_default_tolerations(manager, operation)],
                             "  Pod: writeback\nappliers: [kubectl-client-side-apply, kubectl, helm, gitops-robot]\n")
    found = _diff(work, snap)
    assert sorted(found) == [("Pod", "spec.tolerations[1]"), ("Pod", "spec.tolerations[2]")]
    for cls, action, reason in found.values():  # the last-applied base says the cluster moved: who did?
        assert (cls, action, reason) == ("added", "report",
                                         f"list item added live by {manager}, not by a person: never written")
    out, proposed = _pr(work, snap, bare, tmp_path)
    assert proposed is None, out


@pytest.mark.parametrize("manager", ["kubectl-edit", "kubectl-patch", "k9s"])
def test_a_toleration_a_person_added_with_an_edit_tool_is_written(tmp_path: Path, manager: str) -> None:
    bare, work, snap = _repo(tmp_path, {"web.yaml": POD}, [_pod_with_default_tolerations(manager, "Update")],
                             "  Pod: writeback\n")
    found = _diff(work, snap)
    assert {v[:2] for v in found.values()} == {("added", "write")}
    out, proposed = _pr(work, snap, bare, tmp_path)
    assert proposed is not None, out
    assert "node.kubernetes.io/unreachable" in proposed


def test_an_item_added_by_a_controller_is_reported_with_its_manager(tmp_path: Path) -> None:
    bare, work, snap = _repo(tmp_path, {"web.yaml": DEPLOY}, [_env_added_by("vpa-updater")], "  Deployment: writeback\n")
    (cls, action, reason), = _diff(work, snap).values()
    assert (cls, action) == ("added", "report") and "by vpa-updater" in reason


# -- templated files and write verification ------------------------------------------------------


def test_a_templated_value_is_never_edited_and_the_files_other_values_are(tmp_path: Path) -> None:
    """Templating is judged per value: the image git holds as ``{{ .Values.image }}`` is a
    tool's input (reported, never written); the literal next to it is what the cluster got."""
    text = DEPLOY.replace("replicas: 2", "replicas: 2\n  revisionHistoryLimit: 5").replace(
        "image: web:1  # pinned", 'image: "{{ .Values.image }}"')
    live = _live_deploy()
    live["spec"]["revisionHistoryLimit"] = 7
    live["spec"]["template"]["spec"]["containers"][0]["image"] = "web:2"
    live["metadata"]["managedFields"].append(_mf("kubectl-edit", "2026-08-20T09:00:00Z", {"f:spec": {
        "f:revisionHistoryLimit": {}, "f:template": {"f:spec": {"f:containers": {'k:{"name":"app"}': {"f:image": {}}}}}}}))
    bare, work, snap = _repo(tmp_path, {"web.yaml": text}, [live], "  Deployment: writeback\n")
    found = _diff(work, snap)
    assert found[("Deployment", "spec.template.spec.containers[0].image")] == ("value", "report",
                                                                              "templated: not written")
    assert found[("Deployment", "spec.revisionHistoryLimit")][:2] == ("value", "write")
    out, proposed = _pr(work, snap, bare, tmp_path)
    assert proposed == text.replace("revisionHistoryLimit: 5", "revisionHistoryLimit: 7"), out


def test_a_shell_variable_in_a_command_is_text_not_a_template(tmp_path: Path) -> None:
    """``${FRONTEND_ADDR}`` in a container's script is the shell's: no Flux postBuild in the
    repository substitutes it, so the file's values are written (and the script kept)."""
    text = DEPLOY.replace("        - name: app\n", "        - name: app\n          command: [sh, -c, 'wget ${FRONTEND_ADDR}']\n")
    live = _live_deploy()
    live["spec"]["template"]["spec"]["containers"][0]["command"] = ["sh", "-c", "wget ${FRONTEND_ADDR}"]
    live["spec"]["revisionHistoryLimit"] = 7
    live["metadata"]["managedFields"].append(_mf("kubectl-edit", "2026-08-20T09:00:00Z",
                                                 {"f:spec": {"f:revisionHistoryLimit": {}}}))
    text = text.replace("replicas: 2", "replicas: 2\n  revisionHistoryLimit: 5")
    bare, work, snap = _repo(tmp_path, {"web.yaml": text}, [live], "  Deployment: writeback\n")
    assert _diff(work, snap)[("Deployment", "spec.revisionHistoryLimit")][:2] == ("value", "write")
    out, proposed = _pr(work, snap, bare, tmp_path)
    assert proposed == text.replace("revisionHistoryLimit: 5", "revisionHistoryLimit: 7"), out


def test_a_write_that_does_not_read_back_exactly_aborts_that_file(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from syncer import yamledit
    from syncer.config import load_config
    from syncer.gather.collect import detect_live
    from syncer.gather.live import SnapshotSource
    from syncer.sources.manifests import load_manifests
    from syncer.writeback.deliver import Mode, select

    live = _live_deploy()
    live["spec"]["replicas"] = 5
    live["metadata"]["managedFields"].append(_mf("kubectl-edit", "2026-08-20T09:00:00Z", {"f:spec": {"f:replicas": {}}}))
    bare, work, snap = _repo(tmp_path, {"web.yaml": DEPLOY, "other.yaml": DEPLOY.replace("name: web\n", "name: web2\n", 1)},
                             [live, {**live, "metadata": {**live["metadata"], "name": "web2"}}],
                             "  Deployment: writeback\n")
    config = load_config(work / "hosts" / "t", "t")
    manifests = load_manifests(work, "t", config.namespace)
    result = detect_live(config, manifests, SnapshotSource([snap], "apps"), NOW)
    drifts = select(result, Mode.PR)
    assert len(drifts) == 2
    # An editor that also changes something nobody asked for, in one of the two files:
    real_render = yamledit.YamlFile.render

    def sloppy(self: yamledit.YamlFile) -> str:
        text = real_render(self)
        return text.replace("cpu: 1000m", "cpu: 2000m") if self.name.endswith("web.yaml") else text

    monkeypatch.setattr(yamledit.YamlFile, "render", sloppy)
    aborted: list[Any] = []
    changes = plan_changes(work, "t", drifts, manifests.objects, aborted)
    assert [c.file for c in changes] == ["hosts/t/other.yaml"]
    assert [e.message for e in aborted] == [
        "hosts/t/web.yaml: not written: verification failed: the edited file would not read back as git plus "
        "the accepted live values (at document 1 spec.template.spec.containers[0].resources.requests.cpu)"]


# -- properties -----------------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_names = st.lists(st.from_regex(r"[A-Z][A-Z0-9_]{0,6}", fullmatch=True), min_size=1, max_size=6, unique=True)


@settings(max_examples=80, deadline=None)
@given(_names, st.randoms(use_true_random=False))
def test_reordering_a_keyed_list_or_a_set_is_never_drift(names: list[str], rnd: Any) -> None:
    env = [{"name": n, "value": n.lower()} for n in names]
    addrs = [{"ip": f"10.0.0.{i}"} for i in range(len(names))]
    git_obj = {"spec": {"template": {"spec": {"containers": [{"name": "c", "env": env}]}}}}
    shuffled, shuffled_addrs = env[:], addrs[:]
    rnd.shuffle(shuffled)
    rnd.shuffle(shuffled_addrs)
    live = {"spec": {"template": {"spec": {"containers": [{"name": "c", "env": shuffled}]}}}}
    assert compare("Deployment", git_obj, live) == []
    assert compare("Endpoints", {"subsets": [{"addresses": addrs}]}, {"subsets": [{"addresses": shuffled_addrs}]}) == []


@settings(max_examples=80, deadline=None)
@given(_names, st.data())
def test_a_live_only_keyed_item_is_one_added_drift_with_its_live_value_whole(names: list[str],
                                                                               data: st.DataObject) -> None:
    env = [{"name": n, "value": n.lower()} for n in names]
    extra = {"name": "ZZ_EXTRA", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
    at = data.draw(st.integers(0, len(env)))
    live_env = env[:at] + [extra] + env[at:]
    git_obj = {"spec": {"containers": [{"name": "c", "env": env}]}}
    found = compare("Pod", git_obj, {"spec": {"containers": [{"name": "c", "env": live_env}]}})
    assert [(d.path, d.cls, d.live, d.live_path) for d in found] == [
        (("spec", "containers", 0, "env", len(env)), DriftClass.ADDED, extra, ("spec", "containers", 0, "env", at))]


def test_direction_follows_items_by_key_when_the_live_list_is_in_another_order(tmp_path: Path) -> None:
    """last-applied agrees with git but for the order of env; live moved MODE: the cluster moved
    MODE (a positional base would call it a conflict), so it is committed."""
    text = DEPLOY.replace("            - name: MODE\n              value: fast\n",
                          "            - name: MODE\n              value: fast\n            - name: LEVEL\n"
                          "              value: \"3\"\n")
    live = _live_deploy()
    applied = parse_documents(text, "web.yaml")[0]
    _containers(applied)[0]["env"].reverse()  # applied before a person reordered git's list: no change
    live["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": json.dumps(applied)}
    _containers(live)[0]["env"] = [{"name": "LEVEL", "value": "3"}, {"name": "MODE", "value": "slow"}]
    fields = {"f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"app"}': {"f:env": {
        'k:{"name":"MODE"}': {"f:value": {}}}}}}}}}
    live["metadata"]["managedFields"].append(_mf("kubectl-edit", "2026-08-20T09:00:00Z", fields))
    bare, work, snap = _repo(tmp_path, {"web.yaml": text}, [live], "  Deployment: writeback\n")
    out = io.StringIO()
    main(["diff", "t", "--repo", str(work), "--live-file", str(snap), "-o", "json"], now=NOW, stdout=out)
    (drift,) = json.loads(out.getvalue())["drifts"]
    assert (drift["path"], drift["direction"], drift["action"], drift["manager"]) == (
        "spec.template.spec.containers[0].env[0].value", "cluster", "write", "kubectl-edit")
    main(["sync", "t", "--repo", str(work), "--live-file", str(snap), "--mode", "commit", "--remote", str(bare),
          "--clone-dir", str(tmp_path / "clone")], now=NOW, stdout=io.StringIO())
    committed = git(bare, "show", "main:hosts/t/web.yaml") + "\n"
    assert committed == text.replace("value: fast", "value: slow")


def test_every_document_of_a_file_is_read_as_yaml_11() -> None:
    docs = parse_documents("kind: A\n---\nkind: B\nmode: 0755\non: yes\nat: 12:30\n", "multi.yaml")
    assert docs[1] == {"kind": "B", "mode": 493, True: True, "at": "12:30"}


# -- numbers as Go's YAML decoder (kubectl) reads them -------------------------------------------

#: What kubectl v1.32.3 made of each plain scalar (``kubectl label --local -f x.yaml a=b -o json``).
KUBECTL_READS = {
    "0o644": 420, "0O17": 15, "+0o17": 15, "-0o17": -15, "0o1_7": 15, "0o": "0o", "0o8": "0o8", "0755": 493,
    "+.5e3": 500, ".5e3": 500, "1e3": 1000, "1E3": 1000, "1.0e3": 1000, "0.1e+3": 100, "+.5E-3": 0.0005,
    "-.5": -0.5, ".5": 0.5, "1.": 1, "08": 8, "00": 0, "0_7": 7, "1__0": 10, "0x1F": 31, "0x_1F": 31,
    "0b101": 5, "1_000": 1000, "1_0.5": 10.5, "._5": "._5", "12:30": "12:30", "web:1": "web:1",
}


def test_plain_numbers_are_read_as_kubectl_reads_them() -> None:
    text = "".join(f"k{i}: {t}\n" for i, t in enumerate(KUBECTL_READS))
    read = parse_documents(text, "n.yaml")[0]
    for i, (t, want) in enumerate(KUBECTL_READS.items()):
        got = read[f"k{i}"]
        assert got == want and isinstance(got, str) == isinstance(want, str), t


def test_plain_numbers_agree_with_the_real_kubectl(tmp_path: Path) -> None:
    from tests.realapi.tools import require_tool

    kubectl = require_tool("kubectl")
    body = "".join(f"  k{i}: {t}\n" for i, t in enumerate(KUBECTL_READS))
    path = tmp_path / "n.yaml"
    path.write_text(f"apiVersion: v1\nkind: Widget\nmetadata:\n  name: num\nspec:\n{body}")
    done = subprocess.run([kubectl, "label", "--local", "-f", str(path), "a=b", "-o", "json"], capture_output=True,
                          text=True, timeout=60, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    theirs = json.loads(done.stdout)["spec"]
    ours = parse_documents(path.read_text(), "n.yaml")[0]["spec"]
    assert theirs == ours and {k: type(v) is str for k, v in theirs.items()} == {
        k: type(v) is str for k, v in ours.items()}


def test_a_yaml_12_octal_mode_is_no_drift_and_a_change_of_it_is_written(tmp_path: Path) -> None:
    text = DEPLOY.replace("defaultMode: 0755", "defaultMode: 0o644")
    live = _live_deploy()
    live["spec"]["template"]["spec"]["volumes"][0]["configMap"]["defaultMode"] = 420
    bare, work, snap = _repo(tmp_path, {"web.yaml": text}, [live], "  Deployment: writeback\n")
    assert _diff(work, snap) == {}
    live["spec"]["template"]["spec"]["volumes"][0]["configMap"]["defaultMode"] = 384
    applied = parse_documents(text, "web.yaml")[0]  # as kubectl sent it: 420
    live["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": json.dumps(applied)}
    live["metadata"]["managedFields"].append(_mf("kubectl-edit", "2026-08-20T09:00:00Z", {"f:spec": {"f:template": {
        "f:spec": {"f:volumes": {'k:{"name":"conf"}': {"f:configMap": {"f:defaultMode": {}}}}}}}}))
    snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [live]}))
    (path, (cls, action, _)), = _diff(work, snap).items()
    assert (path, cls, action) == (("Deployment", "spec.template.spec.volumes[0].configMap.defaultMode"), "value",
                                   "write")
    out, proposed = _pr(work, snap, bare, tmp_path)
    assert proposed is not None, out
    assert parse_documents(proposed, "web.yaml")[0]["spec"]["template"]["spec"]["volumes"][0]["configMap"] == {
        "name": "web", "defaultMode": 384}


@pytest.mark.parametrize("value", ["0o17", "+.5e3", "08", "1.0e3", "-.5", "0x_1F"])
def test_a_string_kubectl_would_read_as_a_number_is_written_quoted(tmp_path: Path, value: str) -> None:
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: apps\ndata:\n  mode: fast\n"
    live = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "web", "namespace": "apps", "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": json.dumps(parse_documents(cm, "web.yaml")[0])},
                "managedFields": [
                    _mf("kubectl-client-side-apply", "2026-08-01T10:00:00Z", {"f:metadata": {"f:annotations": {
                        "f:kubectl.kubernetes.io/last-applied-configuration": {}}}}),
                    _mf("kubectl-edit", "2026-08-20T09:00:00Z", {"f:data": {"f:mode": {}}})]},
            "data": {"mode": value}}
    bare, work, snap = _repo(tmp_path, {"web.yaml": cm}, [live], "  ConfigMap: writeback\n")
    out, proposed = _pr(work, snap, bare, tmp_path)
    assert proposed is not None, out
    assert parse_documents(proposed, "web.yaml")[0]["data"] == {"mode": value}
    assert f"mode: {value}\n" not in proposed


def test_yaml_keys_that_are_no_strings_compare_as_kubectl_sends_them() -> None:
    # ingress-nginx's custom error pages: `data:` keys 404 and 503 are YAML ints; kubectl sends
    # them as the JSON keys "404" and "503".
    from syncer.detect.diff import compare

    git = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pages"},
           "data": {404: "<html>not found</html>", 503: "<html>busy</html>", True: "yes"}}
    live = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pages"},
            "data": {"404": "<html>not found</html>", "503": "<html>busy</html>", "true": "yes"}}
    assert compare("ConfigMap", git, live) == []
    live["data"]["503"] = "<html>gone</html>"
    [d] = compare("ConfigMap", git, live)
    assert (d.path, d.live, d.live_path) == (("data", 503), "<html>gone</html>", ("data", "503"))


def test_helms_managed_by_label_only_live_is_no_difference() -> None:
    from syncer.detect.diff import compare

    git = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"app": "c"}}, "data": {}}
    live = {"apiVersion": "v1", "kind": "ConfigMap", "data": {},
            "metadata": {"name": "c", "labels": {"app": "c", "app.kubernetes.io/managed-by": "Helm"}}}
    assert compare("ConfigMap", git, live) == []
    live["metadata"]["labels"]["app.kubernetes.io/managed-by"] = "someone"
    [d] = compare("ConfigMap", git, live)
    assert d.path == ("metadata", "labels", "app.kubernetes.io/managed-by")


def test_the_deprecated_service_account_alias_is_the_same_field() -> None:
    """The server keeps a pod spec's ``serviceAccount`` equal to ``serviceAccountName``: a live
    patch of the name shows both moved, a manifest declares one; they compare as one field."""
    def deployment(spec: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                "spec": {"replicas": 1, "template": {"spec": {"containers": [], **spec}}}}

    git_side = deployment({"serviceAccountName": "web"})
    live = deployment({"serviceAccountName": "web-sa", "serviceAccount": "web-sa"})
    changed = [(d.path, d.git, d.live) for d in compare("Deployment", normalize(git_side), normalize(live))]
    assert changed == [(("spec", "template", "spec", "serviceAccountName"), "web", "web-sa")]
    old_style = deployment({"serviceAccount": "web"})  # a manifest with only the alias
    assert compare("Deployment", normalize(old_style),
                   normalize(deployment({"serviceAccountName": "web", "serviceAccount": "web"}))) == []
    both = deployment({"serviceAccountName": "a", "serviceAccount": "b"})  # apart: compared as they are
    assert normalize(both) == both
    assert live["spec"]["template"]["spec"]["serviceAccount"] == "web-sa"  # the input is not changed
    cron = {"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": {"spec": {"serviceAccount": "x"}}}}}}
    assert normalize(cron)["spec"]["jobTemplate"]["spec"]["template"]["spec"] == {"serviceAccountName": "x"}
