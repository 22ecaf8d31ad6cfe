"""Zero values the API server keeps (pointer fields) and keys a person added live (issue 15).

The server drops the zero value of a plain ``omitempty`` field (``readOnly: false`` of a
VolumeMount, ``value: ""`` of an env var) but keeps it for a pointer field
(``automountServiceAccountToken: false``, ``runAsUser: 0``, ``emptyDir: {}``): there git's
zero and a live absence differ.  A key only live is a default unless a kubectl verb that
changes objects (``kubectl-edit``, ``kubectl-patch``) owns it in managedFields.
The same, end to end on the real kube-apiserver with the real kubectl:
tests/realapi/test_realapi_kept_zero.py.
"""

from __future__ import annotations

import copy
import re
import sys
from datetime import datetime, timedelta, timezone
import tarfile
from pathlib import Path
from typing import Any

import pytest
from tests.test_compare_rules import _diff, _mf, _pr, _repo

from syncer import apifields
from syncer.detect import ownership
from syncer.detect.diff import compare
from syncer.detect.ownership import added_by_person
from syncer.sources.manifests import parse_documents
from syncer.model import DriftClass
from syncer.detect.normalize import normalize

GIT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: apps
spec:
  replicas: 0
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      automountServiceAccountToken: false
      securityContext:
        runAsUser: 0
      containers:
        - name: app
          image: web:1  # pinned
          securityContext:
            allowPrivilegeEscalation: false
          volumeMounts:
            - name: data
              mountPath: /data
              readOnly: false
      volumes:
        - name: data
          emptyDir: {}
"""
APPLIED = "2026-08-01T10:00:00Z"
CHANGED = "2026-08-20T09:00:00Z"
_APP = 'k:{"name":"app"}'
_DATA = 'k:{"name":"data"}'


def _live() -> dict[str, Any]:
    """GIT as kube-apiserver v1.20 stores it after ``kubectl apply`` (read from the real server)."""
    fields = {"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {
        "f:automountServiceAccountToken": {}, "f:securityContext": {"f:runAsUser": {}},
        "f:containers": {_APP: {".": {}, "f:image": {}, "f:name": {}, "f:imagePullPolicy": {},
                                "f:securityContext": {".": {}, "f:allowPrivilegeEscalation": {}},
                                "f:volumeMounts": {}}},
        "f:dnsPolicy": {}, "f:restartPolicy": {},
        "f:volumes": {".": {}, _DATA: {".": {}, "f:emptyDir": {}, "f:name": {}}}}}}}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "apps", "managedFields": [
            _mf("kubectl-client-side-apply", APPLIED, fields)]},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"automountServiceAccountToken": False, "securityContext": {"runAsUser": 0},
                     "dnsPolicy": "ClusterFirst", "restartPolicy": "Always",
                     "containers": [{"name": "app", "image": "web:1", "imagePullPolicy": "IfNotPresent",
                                     "securityContext": {"allowPrivilegeEscalation": False},
                                     "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                     "volumes": [{"name": "data", "emptyDir": {}}]}}},
    }


def _pod(live: dict[str, Any]) -> dict[str, Any]:
    return live["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def _compare(live: dict[str, Any], git: str = GIT) -> dict[str, tuple[DriftClass, Any]]:
    obj = parse_documents(git, "web.yaml")[0]
    appliers = ownership.DEFAULT_APPLIERS
    diffs = compare("Deployment", normalize(obj), normalize(live), (),
                    ownership.moved_by(live, appliers, lambda who: added_by_person(who, appliers)))
    return {".".join(map(str, d.path)): (d.cls, d.live) for d in diffs}


def test_as_applied_no_difference_and_plain_omitempty_zeros_still_equal_absence() -> None:
    assert _compare(_live()) == {}


def test_a_pointer_zero_removed_live_is_a_difference() -> None:
    live = _live()
    pod = _pod(live)
    del pod["automountServiceAccountToken"]
    del pod["securityContext"]["runAsUser"]  # runAsUser: 0 is root
    del pod["containers"][0]["securityContext"]["allowPrivilegeEscalation"]
    del live["spec"]["replicas"]
    assert _compare(live) == {
        "spec.replicas": (DriftClass.REMOVED, None),
        "spec.template.spec.automountServiceAccountToken": (DriftClass.REMOVED, None),
        "spec.template.spec.securityContext.runAsUser": (DriftClass.REMOVED, None),
        "spec.template.spec.containers.0.securityContext.allowPrivilegeEscalation": (DriftClass.REMOVED, None),
    }


def test_a_volume_source_replaced_live_is_one_difference_of_the_whole_volume() -> None:
    live = _live()
    _pod(live)["volumes"][0] = {"name": "data", "hostPath": {"path": "/", "type": ""}}
    live["metadata"]["managedFields"].append(_mf("kubectl-patch", CHANGED, {"f:spec": {"f:template": {"f:spec": {
        "f:volumes": {_DATA: {"f:hostPath": {".": {}, "f:path": {}, "f:type": {}}}}}}}}))
    assert _compare(live) == {
        "spec.template.spec.volumes.0": (DriftClass.VALUE, {"name": "data", "hostPath": {"path": "/", "type": ""}})}


def _env_added_live(manager: str, operation: str = "Update") -> dict[str, Any]:
    live = _live()
    _pod(live)["containers"][0]["env"] = [{"name": "LEVEL", "value": "3"}]
    live["metadata"]["managedFields"].append(_mf(manager, CHANGED, {"f:spec": {"f:template": {"f:spec": {
        "f:containers": {_APP: {"f:env": {".": {}, 'k:{"name":"LEVEL"}': {
            ".": {}, "f:name": {}, "f:value": {}}}}}}}}}, operation))
    return live


def test_a_key_a_person_added_live_is_reported_where_git_has_no_such_key() -> None:
    found = _compare(_env_added_live("kubectl-edit"))
    assert found == {"spec.template.spec.containers.0.env": (DriftClass.ADDED, [{"name": "LEVEL", "value": "3"}])}


@pytest.mark.parametrize("manager,operation", [
    ("kubectl-client-side-apply", "Update"),  # an applier: git's pending change, never a live one
    ("janitor", "Apply"),                     # server-side apply
    ("kubectl-create", "Update"),             # a creator owns every default the server filled in
    ("kubectl-replace", "Update"),            # a whole object sent: admission's additions are its own
    ("my-operator", "Update"),                # so may any other writer (a controller that made it)
])
def test_keys_only_live_owned_by_appliers_creators_or_nobody_stay_defaults(manager: str, operation: str) -> None:
    assert _compare(_env_added_live(manager, operation)) == {}
    unowned = _env_added_live("kubectl-edit")
    unowned["metadata"]["managedFields"].pop()
    assert _compare(unowned) == {}


@pytest.fixture
def committed_before_apply(monkeypatch: pytest.MonkeyPatch) -> None:
    """The apply and the change follow git's commit (made now, on the real clock), as in life:
    git's history then says git did not move."""
    later = datetime.now(timezone.utc) + timedelta(minutes=1)
    monkeypatch.setattr(sys.modules[__name__], "APPLIED", later.strftime("%Y-%m-%dT%H:%M:%SZ"))
    monkeypatch.setattr(sys.modules[__name__], "CHANGED", (later + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ"))


@pytest.mark.usefixtures("committed_before_apply")
def test_the_cli_reports_and_proposes_them(tmp_path: Path) -> None:
    """The audit's case through ``syncer diff`` and ``sync --mode pr`` on a snapshot: three
    differences; only the person's change is written, whole; removals are reported."""
    live = _live()
    pod = _pod(live)
    del pod["automountServiceAccountToken"]
    del pod["containers"][0]["securityContext"]["allowPrivilegeEscalation"]
    # ... and, as the server does for a field removed live, no entry names them any more (a field
    # still named but absent is one the server did not store: ownership.not_stored)
    applied = live["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]
    del applied["f:automountServiceAccountToken"]
    del applied["f:containers"][_APP]["f:securityContext"]["f:allowPrivilegeEscalation"]
    pod["volumes"][0] = {"name": "data", "hostPath": {"path": "/", "type": ""}}
    live["metadata"]["managedFields"].append(_mf("kubectl-patch", CHANGED, {"f:spec": {"f:template": {"f:spec": {
        "f:volumes": {_DATA: {"f:hostPath": {".": {}, "f:path": {}, "f:type": {}}}}}}}}))
    bare, work, snap = _repo(tmp_path, {"web.yaml": GIT}, [live], "  Deployment: writeback\n")
    found = {k[1]: v[:2] for k, v in _diff(work, snap).items()}
    assert found == {
        "spec.template.spec.automountServiceAccountToken": ("removed", "report"),
        "spec.template.spec.containers[0].securityContext.allowPrivilegeEscalation": ("removed", "report"),
        "spec.template.spec.volumes[0]": ("value", "write"),
    }
    out, proposed = _pr(work, snap, bare, tmp_path)
    assert proposed is not None, out
    want = parse_documents(GIT, "web.yaml")[0]
    want["spec"]["template"]["spec"]["volumes"][0] = {"name": "data", "hostPath": {"path": "/", "type": ""}}
    assert parse_documents(proposed, "web.yaml")[0] == want
    assert "image: web:1  # pinned" in proposed


@pytest.mark.usefixtures("committed_before_apply")
def test_an_env_key_added_live_by_kubectl_edit_is_proposed(tmp_path: Path) -> None:
    bare, work, snap = _repo(tmp_path, {"web.yaml": GIT}, [_env_added_live("kubectl-edit")],
                             "  Deployment: writeback\n")
    assert {k[1]: v[:2] for k, v in _diff(work, snap).items()} == {
        "spec.template.spec.containers[0].env": ("added", "write")}
    out, proposed = _pr(work, snap, bare, tmp_path)
    assert proposed is not None, out
    want = copy.deepcopy(parse_documents(GIT, "web.yaml")[0])
    want["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "LEVEL", "value": "3"}]
    assert parse_documents(proposed, "web.yaml")[0] == want


def test_the_table_knows_pointer_fields_by_context() -> None:
    assert apifields.keeps_zero("Deployment", ("spec", "replicas"))
    assert not apifields.keeps_zero("Service", ("spec", "replicas"))
    assert apifields.keeps_zero("Pod", ("spec", "containers", 0, "securityContext", "runAsUser"))
    assert apifields.keeps_zero("Pod", ("spec", "volumes", 1, "csi", "readOnly"))
    assert not apifields.keeps_zero("Pod", ("spec", "containers", 0, "volumeMounts", 0, "readOnly"))
    assert not apifields.keeps_zero("Pod", ("spec", "containers", 0, "env", 0, "value"))
    assert apifields.keeps_zero("PersistentVolumeClaim", ("spec", "storageClassName"))
    assert not apifields.keeps_zero("PersistentVolume", ("spec", "storageClassName"))


# -- the table against the Go types it was derived from ------------------------------------------

SOURCE = Path("/var/cache/syncer-realapi/downloads/kubernetes_1.20.5+really1.20.2.orig.tar.gz")
GROUPS = ("core/v1", "apps/v1", "batch/v1", "batch/v1beta1", "networking/v1", "policy/v1beta1", "autoscaling/v1",
          "autoscaling/v2beta2", "rbac/v1", "storage/v1", "scheduling/v1", "admissionregistration/v1", "node/v1",
          "discovery/v1beta1", "coordination/v1", "certificates/v1", "flowcontrol/v1beta1")
_FIELD = re.compile(r'^\s+\w+\s+(\S+)\s+`json:"(\w+)')


def test_the_pointer_table_is_what_the_go_types_of_the_real_server_say() -> None:
    """Every JSON name that is a pointer in every struct of k8s.io/api v1.20.2 declaring it is in
    ``KEPT_ZERO_FIELDS``, and nothing else is (the source is the tarball tests/realapi/build.sh
    fetched to build the real-API tier's kube-apiserver)."""
    if not SOURCE.exists():
        pytest.skip(f"no Kubernetes source at {SOURCE} (tests/realapi/build.sh fetches it)")
    pointer: dict[str, set[bool]] = {}
    with tarfile.open(SOURCE) as tar:
        for group in GROUPS:
            member = tar.extractfile(f"kubernetes-1.20.2/staging/src/k8s.io/api/{group}/types.go")
            assert member is not None
            for struct in re.findall(r"^type \w+ struct \{\n(.*?)^\}", member.read().decode(), re.S | re.M):
                for line in struct.splitlines():
                    m = _FIELD.match(line)
                    if m:
                        pointer.setdefault(m.group(2), set()).add(m.group(1).startswith("*"))
    assert apifields.KEPT_ZERO_FIELDS == {name for name, kinds_of in pointer.items() if kinds_of == {True}}


def test_a_key_inside_an_atomic_list_a_person_patched_is_still_a_default() -> None:
    """kube-apiserver v1.20: after ``kubectl patch`` of one value in a LimitRange, kubectl-patch
    owns the atomic ``limits`` list whole, with ``defaultRequest.memory`` the server filled in."""
    git = parse_documents("apiVersion: v1\nkind: LimitRange\nmetadata: {name: limits}\nspec:\n  limits:\n"
                          "    - type: Container\n      default: {memory: 1Gi}\n      max: {cpu: '2'}\n", "q.yaml")[0]
    live = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "limits", "managedFields": [
        _mf("kubectl-client-side-apply", APPLIED, {"f:metadata": {"f:annotations": {}}}),
        _mf("kubectl-patch", CHANGED, {"f:spec": {"f:limits": {}}})]},
        "spec": {"limits": [{"type": "Container", "default": {"memory": "1Gi"}, "defaultRequest": {"memory": "1Gi"},
                             "max": {"cpu": "3"}}]}}
    appliers = ownership.DEFAULT_APPLIERS
    diffs = compare("LimitRange", normalize(git), normalize(live), (),
                    ownership.moved_by(live, appliers, lambda who: added_by_person(who, appliers)))
    assert [(d.path, d.cls, d.live) for d in diffs] == [
        (("spec", "limits", 0, "max", "cpu"), DriftClass.VALUE, "3")]
