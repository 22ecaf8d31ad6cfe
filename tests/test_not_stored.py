"""Fields git declares that the server did not store (``ownership.not_stored``, issue 20), on the
objects kube-apiserver v1.20 returned after ``kubectl apply`` of a Job with
``ttlSecondsAfterFinished`` (TTLAfterFinished off) and then ``kubectl edit`` deleting its
``activeDeadlineSeconds`` (recorded 2026-12-01; the same through the real tools:
tests/realapi/test_realapi_not_stored.py)."""

from __future__ import annotations

from typing import Any

from syncer.detect import ownership
from syncer.detect.diff import compare
from syncer.model import DriftClass, ObjectRef
from syncer.detect.normalize import normalize

REF = ObjectRef("batch/v1", "Job", "default", "j2")
GIT = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j2", "namespace": "default"},
       "spec": {"activeDeadlineSeconds": 600, "ttlSecondsAfterFinished": 100, "template": {"spec": {
           "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}


def _live() -> dict[str, Any]:
    """As the server returned it after the edit: no ``activeDeadlineSeconds`` anywhere, and no
    ``kubectl-edit`` entry (it owned nothing); ``ttlSecondsAfterFinished`` absent but named."""
    fields = {"f:spec": {"f:backoffLimit": {}, "f:completions": {}, "f:parallelism": {}, "f:template": {"f:spec": {
        "f:containers": {'k:{"name":"c"}': {".": {}, "f:image": {}, "f:name": {}}}, "f:restartPolicy": {}}},
        "f:ttlSecondsAfterFinished": {}}}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j2", "namespace": "default", "managedFields": [
                {"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "batch/v1",
                 "time": "2026-12-01T13:50:33Z", "fieldsType": "FieldsV1", "fieldsV1": fields}]},
            "spec": {"backoffLimit": 6, "completions": 1, "parallelism": 1, "template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}


def test_a_field_named_but_absent_is_a_note_a_field_named_by_nobody_stays_removed() -> None:
    live = _live()
    diffs = compare("Job", normalize(GIT), normalize(live))
    assert sorted(".".join(map(str, d.path)) for d in diffs) == ["spec.activeDeadlineSeconds",
                                                                  "spec.ttlSecondsAfterFinished"]
    kept, notes = ownership.not_stored(REF, live, diffs)
    assert [(d.path, d.cls) for d in kept] == [(("spec", "activeDeadlineSeconds"), DriftClass.REMOVED)]
    assert notes == ["Job/default/j2: the server did not store spec.ttlSecondsAfterFinished (a field it does not "
                     "know, or of a feature turned off): kubectl-client-side-apply sent it, the live object lacks "
                     "it; not a difference"]


def test_without_managed_fields_nothing_is_set_aside() -> None:
    live = _live()
    del live["metadata"]["managedFields"]
    diffs = compare("Job", normalize(GIT), normalize(live))
    assert ownership.not_stored(REF, live, diffs) == (diffs, [])
