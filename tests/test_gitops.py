"""Objects a GitOps controller reconciles: said per object, with its interval when readable."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

from syncer.cli import main
from syncer.detect import gitops
from syncer.errors import Forbidden
from syncer.model import ObjectRef, Reconciler


def live(labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
         managers: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"metadata": {"labels": labels or {}, "annotations": annotations or {},
                         "managedFields": [{"manager": m, "operation": "Apply"} for m in managers]}}


def test_who_reconciles_as_the_cluster_shows_it() -> None:
    assert gitops.reconciler(live({"kustomize.toolkit.fluxcd.io/name": "apps",
                                   "kustomize.toolkit.fluxcd.io/namespace": "flux-system"})) == Reconciler(
        gitops.FLUX_KUSTOMIZATION, "apps", "flux-system")
    assert gitops.reconciler(live({"helm.toolkit.fluxcd.io/name": "web", "helm.toolkit.fluxcd.io/namespace": "shop",
                                   "kustomize.toolkit.fluxcd.io/name": "apps"})) == Reconciler(
        gitops.FLUX_HELMRELEASE, "web", "shop")
    assert gitops.reconciler(live(annotations={"argocd.argoproj.io/tracking-id": "guestbook:apps/Deployment:ns/web"})
                             ) == Reconciler(gitops.ARGO_APPLICATION, "guestbook", "argocd")
    assert gitops.reconciler(live(annotations={"argocd.argoproj.io/tracking-id": "team-a_shop:/ConfigMap:ns/x"})
                             ) == Reconciler(gitops.ARGO_APPLICATION, "shop", "team-a")
    assert gitops.reconciler(live({"argocd.argoproj.io/instance": "guestbook"})) == Reconciler(
        gitops.ARGO_APPLICATION, "guestbook", "argocd")
    assert gitops.reconciler(live(managers=("kubectl-edit", "kustomize-controller"))) == Reconciler(
        "Flux's kustomize-controller")
    assert gitops.reconciler(live({"app": "x"}, managers=("kubectl-client-side-apply",))) is None


def test_the_interval_from_the_controllers_object_else_periodically() -> None:
    r = Reconciler(gitops.FLUX_KUSTOMIZATION, "apps", "flux-system")
    seen: list[ObjectRef] = []

    def read(ref: ObjectRef) -> dict[str, Any] | None:
        seen.append(ref)
        if ref.api_version.endswith("/v1"):
            raise Forbidden("forbidden")
        return {"spec": {"interval": "10m"}}

    assert gitops.note(gitops.with_interval(r, read)) == (
        "Flux Kustomization `apps` reconciles this object every 10m: the live value will be reverted unless this PR "
        "merges first")
    assert [x.api_version for x in seen] == ["kustomize.toolkit.fluxcd.io/v1", "kustomize.toolkit.fluxcd.io/v1beta2"]
    assert "periodically" in gitops.note(gitops.with_interval(r, lambda ref: None))
    suspended = gitops.with_interval(r, lambda ref: {"spec": {"interval": "5m", "suspend": True}})
    assert "suspended" in gitops.note(suspended)
    argo = Reconciler(gitops.ARGO_APPLICATION, "guestbook", "argocd")
    healed = gitops.with_interval(argo, lambda ref: {"spec": {"syncPolicy": {"automated": {"selfHeal": True}}}})
    assert "within seconds" in gitops.note(healed)
    manual = gitops.with_interval(argo, lambda ref: {"spec": {"syncPolicy": {}}})
    assert "OutOfSync" in gitops.note(manual)


CM = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: apps
data:
  LOG_LEVEL: info
"""


def test_a_flux_applied_object_is_compared_and_its_drift_says_it_will_be_reverted(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "hosts" / "demo").mkdir(parents=True)
    (repo / "hosts" / "demo" / "settings.yaml").write_text(CM)
    (repo / "hosts" / "demo" / "syncer.conf").write_text("namespace: apps\ntrack:\n  ConfigMap: writeback\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    stamped = {"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "apps",
                                                                 "labels": stamped},
          "data": {"LOG_LEVEL": "debug"}}
    kustomization = {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
                     "metadata": {"name": "apps", "namespace": "flux-system"}, "spec": {"interval": "10m"}}
    snapshot = tmp_path / "live.json"
    snapshot.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [cm, kustomization]}))
    out = io.StringIO()
    code = main(["sync", "demo", "--repo", str(repo), "--live-file", str(snapshot), "--mode", "dry-run"],
                stdout=out, stderr=io.StringIO())
    text = out.getvalue()
    assert code == 0, text
    note = ("Flux Kustomization `apps` reconciles this object every 10m: the live value will be reverted unless this "
            "PR merges first")
    assert f"  reconciled: {note}" in text  # the diff, once for the object
    assert "### Reconciled by a GitOps controller" in text  # the PR, names made inert as every live string there
    assert f"ConfigMap/apps/settings: {note}".replace("`", "&#96;") in text
    assert "kustomize.toolkit.fluxcd.io" not in text.split("--- pull request ---")[0].split("reconciled:")[0]
    out = io.StringIO()
    main(["diff", "demo", "--repo", str(repo), "--live-file", str(snapshot), "-o", "json"], stdout=out,
         stderr=io.StringIO())
    [drift] = json.loads(out.getvalue())["drifts"]  # the labels Flux stamped are no drift
    assert drift["path"] == "data.LOG_LEVEL"
    assert drift["reconciled_by"] == {"tool": "Flux Kustomization", "name": "apps", "namespace": "flux-system",
                                      "interval": "10m", "self_heal": None, "suspended": False}
