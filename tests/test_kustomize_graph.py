"""Tracing through the whole kustomize graph, on real public layouts (tests/data/kustomize-corpus)
and on small trees for what they lack: components (and components of components), two overlays
with patch files of the same name, generator sources (``envs:``, ``files:``, ``behavior: merge``),
a patch of a generated ConfigMap; each edit verified on its own. The real kustomize (the one
kubectl embeds) renders every tree; no API server (the real-API corpus run is
``bench/kustomizecorpus.py``).
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from syncer.cache import Caches
from syncer.config import Config
from syncer.model import Action, Direction, Drift, DriftClass, Edit
from syncer.sources.dispatch import source_for
from syncer.sources.manifests import GitObject, Manifests
from syncer.sources.source import Source
from syncer.writeback.placement import proved
from tests.conftest import ROOT

from tests.test_kustomize import KUBECTL, _real_kubectl  # noqa: F401  (the fixture: the real kubectl)

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl (kustomize) not installed")
CORPUS = ROOT / "tests" / "data" / "kustomize-corpus"
C0 = ("spec", "template", "spec", "containers", 0)


def layout(tmp_path: Path, tree: str, top: str) -> Path:
    """``tmp_path/repo`` with the corpus tree as ``hosts/t/`` and the installation's own top kustomization."""
    repo = tmp_path / "repo"
    shutil.copytree(CORPUS / tree, repo / "hosts" / "t")
    (repo / "hosts" / "t" / "kustomization.yaml").write_text(top)
    return repo


def tree(tmp_path: Path, files: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    for name, text in files.items():
        path = repo / "hosts" / "t" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return repo


class Loaded:
    """The installation's source and what it loaded, as ``sync`` has them."""

    def __init__(self, repo: Path, namespace: str) -> None:
        self.source: Source = source_for(repo, "t", Config("t", namespace=namespace))
        self.manifests: Manifests = self.source.load(Caches())
        self.objects = self.manifests.objects


def load(repo: Path, namespace: str) -> Loaded:
    return Loaded(repo, namespace)


def obj(m: Loaded, kind: str, name: str) -> GitObject:
    found = [o for r, o in m.objects.items() if r.kind == kind and (r.name == name or r.name.startswith(name + "-"))]
    assert len(found) == 1, sorted(str(r) for r in m.objects)
    return found[0]


def placed(m: Loaded, o: GitObject, path: tuple[str | int, ...], live: Any) -> Drift:
    drift = Drift(o.ref, o.file, path, None, live, Direction.CLUSTER, DriftClass.VALUE, Action.WRITE,
                  edits=(Edit(path, live),))
    [out] = m.source.place(o, [drift], Caches())
    return out


def written(repo: Path, m: Loaded, drifts: list[Drift]) -> tuple[dict[str, list[str]], list[tuple[str, str]]]:
    """What ``sync`` writes: the changed lines per file, and the refused drifts (path, reason)."""
    refused: list[tuple[Drift, str]] = []
    aborted: list[Any] = []
    _, changes = proved(m.source, repo, "t", drifts, m.objects, aborted, Caches(), refused)
    assert aborted == []
    lines = {c.file: [ln for ln in c.unified_diff().splitlines() if ln[:1] in "+-" and ln[:3] not in ("+++", "---")]
             for c in changes}
    return lines, [(d.path_text, why) for d, why in refused]


def test_components_set_replicas_strategy_and_image_of_a_base_object(tmp_path: Path) -> None:
    """metrics-server's release-ha overlay: a component's patch sets replicas and the rollout
    strategy, another component's ``images:`` the image; the base's own values are overridden."""
    repo = layout(tmp_path, "metrics-server", "resources:\n  - overlays/release-ha\n")
    m = load(repo, "kube-system")
    dep = obj(m, "Deployment", "metrics-server")
    drifts = [placed(m, dep, ("spec", "replicas"), 3),
              placed(m, dep, C0 + ("image",), "registry.k8s.io/metrics-server/metrics-server:v0.8.2"),
              placed(m, dep, ("spec", "strategy", "rollingUpdate", "maxUnavailable"), 0),
              placed(m, dep, C0 + ("args", 4), "--metric-resolution=30s")]
    assert [(d.file, d.action) for d in drifts] == [
        ("hosts/t/components/high-availability/patch.yaml", Action.WRITE),
        ("hosts/t/components/release/kustomization.yaml", Action.WRITE),
        ("hosts/t/components/high-availability/patch.yaml", Action.WRITE),
        ("hosts/t/base/deployment.yaml", Action.WRITE)]
    lines, refused = written(repo, m, drifts)
    assert refused == []
    assert lines == {
        "hosts/t/base/deployment.yaml": ["-          - --metric-resolution=15s", "+          - --metric-resolution=30s"],
        "hosts/t/components/high-availability/patch.yaml": ["-  replicas: 2", "+  replicas: 3",
                                                            "-      maxUnavailable: 1", "+      maxUnavailable: 0"],
        "hosts/t/components/release/kustomization.yaml": ["-  newTag: v0.8.1", "+  newTag: v0.8.2"]}


def test_two_overlays_with_a_patch_file_of_the_same_name_are_never_confused(tmp_path: Path) -> None:
    """kustomize's helloWorld with both overlays applied: each variant's ConfigMap value is in
    its own overlay's map.yaml; the base's replicas, shared by both, is no single line."""
    repo = layout(tmp_path, "kustomize-helloworld", "resources:\n  - overlays/dev\n  - overlays/stg-secondary\n")
    m = load(repo, "default")
    dev, stg = obj(m, "ConfigMap", "dev-the-map"), obj(m, "ConfigMap", "stg-secondary-the-map")
    a = placed(m, dev, ("data", "altGreeting"), "Welcome back to dev!")
    b = placed(m, stg, ("data", "enableRisky"), "false")
    assert (a.file, b.file) == ("hosts/t/overlays/dev/map.yaml", "hosts/t/overlays/stg-secondary/map.yaml")
    shared = placed(m, obj(m, "Deployment", "dev-the-deployment"), ("spec", "replicas"), 2)
    lines, refused = written(repo, m, [a, b, shared])
    assert lines == {"hosts/t/overlays/dev/map.yaml": ['-  altGreeting: "Welcome to dev!"',
                                                       '+  altGreeting: "Welcome back to dev!"'],
                     "hosts/t/overlays/stg-secondary/map.yaml": ['-  enableRisky: "true"', '+  enableRisky: "false"']}
    # refused on its own, with its reason; the two overlay edits are written all the same
    [(path, why)] = refused
    assert path == "spec.replicas" and why.startswith("not written: the edit would also change "
                                                      "Deployment/default/stg-secondary-the-deployment spec.replicas")


def test_an_overlay_patch_that_repeats_the_base_is_the_place_kustomize_applied_last(tmp_path: Path) -> None:
    """kubeflow's centraldashboard kserve overlay patches the base's ConfigMap with a copy of its
    text: the live edit goes into the overlay's copy, not the base's; the env file line, the
    base's images: and a component's label patch on the way."""
    repo = layout(tmp_path, "kubeflow-centraldashboard", "resources:\n  - overlays/kserve\n")
    m = load(repo, "kubeflow")
    config = obj(m, "ConfigMap", "dashboard-config")
    settings = placed(m, config, ("data", "settings"), '{\n  "DASHBOARD_FORCE_IFRAME": false\n}')
    params = placed(m, obj(m, "ConfigMap", "dashboard-parameters"), ("data", "COLLECT_METRICS"), "false")
    dep = obj(m, "Deployment", "dashboard")
    image = placed(m, dep, C0 + ("image",), "ghcr.io/kubeflow/dashboard/dashboard:v2.0.1")
    label = placed(m, dep, ("spec", "template", "metadata", "labels", "sidecar.istio.io/inject"), "false")
    assert [d.file for d in (settings, params, image, label)] == [
        "hosts/t/overlays/kserve/patches/configmap.yaml", "hosts/t/base/params.env", "hosts/t/base/kustomization.yaml",
        "hosts/t/components/istio/deployment.yaml"]
    lines, refused = written(repo, m, [settings, params, image, label])
    assert refused == []
    assert lines["hosts/t/overlays/kserve/patches/configmap.yaml"] == ['-      "DASHBOARD_FORCE_IFRAME": true',
                                                                       '+      "DASHBOARD_FORCE_IFRAME": false']
    assert lines["hosts/t/base/params.env"] == ["-COLLECT_METRICS=true", "+COLLECT_METRICS=false"]
    assert lines["hosts/t/components/istio/deployment.yaml"] == ['-        sidecar.istio.io/inject: "true"',
                                                                 '+        sidecar.istio.io/inject: "false"']


def test_inline_json6902_of_a_component_two_edits_of_one_patch_and_a_shell_variable(tmp_path: Path) -> None:
    """microservices-demo: a component's inline JSON 6902 ``add`` (an env item appended) and
    ``replace`` (a probe path; two identical ``value:`` lines in the patch), both written into the
    one inline patch; a component's patch file computes an env value; the init container's
    script holds ``${FRONTEND_ADDR}`` (text, not a template): its env value is written."""
    top = ("resources:\n- base/frontend.yaml\n- base/loadgenerator.yaml\ncomponents:\n- components/custom-base-url\n"
           "- components/blackfriday-week1-loadtest\n")
    repo = layout(tmp_path, "microservices-demo", top)
    m = load(repo, "default")
    front, loadgen = obj(m, "Deployment", "frontend"), obj(m, "Deployment", "loadgenerator")
    drifts = [placed(m, front, C0 + ("env", 10, "value"), "/shop"),
              placed(m, front, C0 + ("readinessProbe", "httpGet", "path"), "/shop/_healthz"),
              placed(m, loadgen, C0 + ("env", 0, "value"), "500"),
              placed(m, loadgen, ("spec", "template", "spec", "initContainers", 0, "env", 0, "value"), "frontend:8080")]
    lines, refused = written(repo, m, drifts)
    assert refused == []
    assert lines == {
        "hosts/t/components/custom-base-url/kustomization.yaml": [
            "-        value: /online-boutique", "+        value: /shop",
            "-      value: /online-boutique/_healthz", "+      value: /shop/_healthz"],
        "hosts/t/components/blackfriday-week1-loadtest/set-loadgenerator-1k.patch.yaml": [
            '-          value: "1000"', '+          value: "500"'],
        "hosts/t/base/loadgenerator.yaml": ['-          value: "frontend:80"', '+          value: "frontend:8080"']}



#: microservices-demo with the google-cloud-operations component; the five Deployments whose grpc probes v1.20
#: refuses are deleted by the installation's top (as in bench/kustomizecorpus.py)
GCO_TOP = ("resources:\n"
           + "".join(f"- base/{s}.yaml\n" for s in ("frontend", "checkoutservice", "currencyservice", "emailservice",
                                                    "paymentservice", "productcatalogservice", "recommendationservice",
                                                    "shippingservice"))
           + "components:\n- components/google-cloud-operations\npatches:\n"
           + "".join(f"- patch: |-\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata:\n      name: {n}\n"
                     "    $patch: delete\n" for n in ("checkoutservice", "currencyservice", "emailservice",
                                                      "paymentservice", "productcatalogservice")))


def test_several_values_of_one_inline_strategic_merge_patch_each_its_own_line(tmp_path: Path) -> None:
    """microservices-demo's google-cloud-operations component: eight inline strategic-merge patches
    (``patches: - patch: |-``) in one kustomization.yaml; four values of the frontend's patch, one of
    the recommendationservice's, each written into its own line (lines equal to others' in the other
    patches are left alone); the base file's image of the same object; the base's ENABLE_PROFILER "0"
    is overridden by the component's "1"."""
    repo = layout(tmp_path, "microservices-demo", GCO_TOP)
    m = load(repo, "default")
    front, recs = obj(m, "Deployment", "frontend"), obj(m, "Deployment", "recommendationservice")
    drifts = [placed(m, front, C0 + ("env", 0, "value"), "0"),
              placed(m, front, C0 + ("env", 1, "value"), "otel-gateway:4317"),
              placed(m, front, C0 + ("env", 2, "value"), "boutique-frontend"),
              placed(m, front, C0 + ("env", 3, "value"), "0"),
              placed(m, recs, C0 + ("env", 1, "value"), "recs"),
              placed(m, recs, C0 + ("image",), "gcr.io/google-samples/microservices-demo/recommendationservice:v0.4.1")]
    gco = "hosts/t/components/google-cloud-operations/kustomization.yaml"
    assert [(d.file, d.action) for d in drifts] == [(gco, Action.WRITE)] * 5 + [
        ("hosts/t/base/recommendationservice.yaml", Action.WRITE)]
    lines, refused = written(repo, m, drifts)
    assert refused == []
    assert lines == {
        gco: ['-                value: "1"', '+                value: "0"',
              '-                value: "opentelemetrycollector:4317"', '+                value: "otel-gateway:4317"',
              '-                value: "frontend"', '+                value: "boutique-frontend"',
              '-                value: "1"', '+                value: "0"',
              '-                value: "recommendationservice"', '+                value: "recs"'],
        "hosts/t/base/recommendationservice.yaml": [
            "-        image: gcr.io/google-samples/microservices-demo/recommendationservice:v0.4.0",
            "+        image: gcr.io/google-samples/microservices-demo/recommendationservice:v0.4.1"]}
    # each in its own patch: the lines changed are the frontend's 94, 96, 98, 100 and the recommendationservice's 156
    refused2: list[tuple[Drift, str]] = []
    _, changes = proved(m.source, repo, "t", drifts, m.objects, [], Caches(), refused2)
    [change] = [c for c in changes if c.file == gco]
    old, new = change.old.split("\n"), change.new.split("\n")
    assert [i + 1 for i, (a, b) in enumerate(zip(old, new)) if a != b] == [94, 96, 98, 100, 156]



def test_behavior_replace_of_a_generated_map_in_an_overlay_writes_the_overlays_literal(tmp_path: Path) -> None:
    """kubeflow's models web app: the overlay's configMapGenerator replaces the base's map (``behavior:
    replace``, no hash): each literal is the overlay's line, never the base's (which sets GRAFANA_PREFIX
    too, quoted); the overlay's JSON 6902 patch replaces ``/spec/gateways`` twice with the same text:
    the second, applied last, is written."""
    repo = layout(tmp_path, "kubeflow-models-web-app", "resources:\n  - overlays/kubeflow\n")
    m = load(repo, "kubeflow")
    cm = obj(m, "ConfigMap", "kserve-models-web-application-config")
    vs = obj(m, "VirtualService", "kserve-models-web-application")
    drifts = [placed(m, cm, ("data", "APP_PREFIX"), "/models"),
              placed(m, cm, ("data", "GRAFANA_PREFIX"), "/dashboards"),
              placed(m, vs, ("spec", "gateways", 0), "kubeflow/models-gateway")]
    overlay = "hosts/t/overlays/kubeflow/kustomization.yaml"
    patch = "hosts/t/overlays/kubeflow/patches/web-application-vsvc.yaml"
    assert [(d.file, d.action) for d in drifts] == [(overlay, Action.WRITE), (overlay, Action.WRITE),
                                                    (patch, Action.WRITE)]
    lines, refused = written(repo, m, drifts)
    assert refused == []
    assert lines == {
        overlay: ["-  - APP_PREFIX=/kserve-endpoints", "-  - GRAFANA_PREFIX=/grafana",
                  "+  - APP_PREFIX=/models", "+  - GRAFANA_PREFIX=/dashboards"],
        patch: ["-    - kubeflow/kubeflow-gateway", "+    - kubeflow/models-gateway"]}
    _, changes = proved(m.source, repo, "t", drifts, m.objects, [], Caches(), [])
    [change] = [c for c in changes if c.file == patch]
    old, new = change.old.split("\n"), change.new.split("\n")
    assert [i + 1 for i, (a, b) in enumerate(zip(old, new)) if a != b] == [14]



SURESHDSK_TOP = ("resources:\n  - overlays/production\n  - overlays/staging\npatches:\n"
                 + "".join(f"  - patch: |-\n      apiVersion: v1\n      kind: Secret\n      metadata:\n        name: {n}\n"
                           "      $patch: delete\n" for n in ("production-django-secret", "staging-django-secret")))


def test_sibling_overlays_whose_same_named_patch_files_both_set_replicas(tmp_path: Path) -> None:
    """sureshdsk's kustomize example: overlays/production and overlays/staging each patch the base's
    Deployment with a deployment-patch.yaml (replicas 3 and 2) and its ConfigMap with a
    configmap-patch.yaml holding the same URI line; each variant's value goes into its own overlay's
    file; the base's DEBUG line, overridden by production only, is staging's; the base's image, shared
    by both, is refused."""
    repo = layout(tmp_path, "sureshdsk-django", SURESHDSK_TOP)
    m = load(repo, "default")
    prod, stg = obj(m, "Deployment", "production-django-app"), obj(m, "Deployment", "staging-django-app")
    stg_cm = obj(m, "ConfigMap", "staging-django-configmap")
    drifts = [placed(m, prod, ("spec", "replicas"), 4), placed(m, stg, ("spec", "replicas"), 1),
              placed(m, stg_cm, ("data", "DJANGO_AUTH_PUBLIC_URI"), "http://stage.192.168.0.139.sslip.io"),
              placed(m, stg_cm, ("data", "DEBUG"), "False"),
              placed(m, stg, C0 + ("image",), "kubernetes-django:v2")]
    assert [d.file for d in drifts[:4]] == [
        "hosts/t/overlays/production/deployment-patch.yaml", "hosts/t/overlays/staging/deployment-patch.yaml",
        "hosts/t/overlays/staging/configmap-patch.yaml", "hosts/t/base/configmap.yaml"]
    lines, refused = written(repo, m, drifts)
    assert lines == {
        "hosts/t/overlays/production/deployment-patch.yaml": ["-  replicas: 3", "+  replicas: 4"],
        "hosts/t/overlays/staging/deployment-patch.yaml": ["-  replicas: 2", "+  replicas: 1"],
        "hosts/t/overlays/staging/configmap-patch.yaml": [
            '-  DJANGO_AUTH_PUBLIC_URI: "http://staging.192.168.0.139.sslip.io"',
            '+  DJANGO_AUTH_PUBLIC_URI: "http://stage.192.168.0.139.sslip.io"'],
        "hosts/t/base/configmap.yaml": ['-  DEBUG: "True"', '+  DEBUG: "False"']}
    assert [path for path, _ in refused] == ["spec.template.spec.containers[0].image"]


SMALL = {
    "base/kustomization.yaml": """\
        resources: [web.yaml]
        configMapGenerator:
          - name: web-conf
            files:
              - nginx.conf
              - start.sh=scripts/start.sh
            envs: [web.env]
        """,
    "base/web.yaml": """\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web}
        spec:
          replicas: 1
          selector: {matchLabels: {app: web}}
          template:
            metadata: {labels: {app: web}}
            spec:
              containers:
                - {name: web, image: nginx:1.27}
        """,
    "base/nginx.conf": "server {\n    listen 80;\n    proxy_pass http://backend:8080;\n}\n",
    "base/scripts/start.sh": "#!/bin/sh\nexec nginx -g 'daemon off;' # ${NGINX_OPTS}\n",
    "base/web.env": "MODE=fast\nLEVEL=1\n",
    "components/ha/kustomization.yaml": """\
        apiVersion: kustomize.config.k8s.io/v1alpha1
        kind: Component
        components: [../more]
        replicas:
          - name: web
            count: 2
        """,
    "components/more/kustomization.yaml": """\
        apiVersion: kustomize.config.k8s.io/v1alpha1
        kind: Component
        images:
          - name: nginx
            newTag: "1.28"
        """,
    "kustomization.yaml": """\
        resources: [base]
        components: [components/ha]
        configMapGenerator:
          - name: web-conf
            behavior: merge
            literals: [LEVEL=2]
        patches:
          - patch: |-
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: web-conf}
              data:
                EXTRA: "on"
        """,
}


def test_generator_sources_merge_a_patch_of_the_generated_map_and_components_of_components(tmp_path: Path) -> None:
    repo = tree(tmp_path, SMALL)
    m = load(repo, "default")
    conf, web = obj(m, "ConfigMap", "web-conf"), obj(m, "Deployment", "web")
    cases = {
        "file": placed(m, conf, ("data", "nginx.conf"), "server {\n    listen 8080;\n    proxy_pass http://backend:8080;\n}\n"),
        "keyed file": placed(m, conf, ("data", "start.sh"), "#!/bin/sh\nexec nginx -g 'daemon off;' -q # ${NGINX_OPTS}\n"),
        "env line": placed(m, conf, ("data", "MODE"), "slow"),
        "merge": placed(m, conf, ("data", "LEVEL"), "3"),
        "patch": placed(m, conf, ("data", "EXTRA"), "off"),
        "component": placed(m, web, ("spec", "replicas"), 4),
        "nested component": placed(m, web, C0 + ("image",), "nginx:1.29"),
    }
    assert {k: d.file for k, d in cases.items()} == {
        "file": "hosts/t/base/nginx.conf", "keyed file": "hosts/t/base/scripts/start.sh", "env line": "hosts/t/base/web.env",
        "merge": "hosts/t/kustomization.yaml", "patch": "hosts/t/kustomization.yaml",
        "component": "hosts/t/components/ha/kustomization.yaml", "nested component": "hosts/t/components/more/kustomization.yaml"}
    lines, refused = written(repo, m, list(cases.values()))
    assert refused == []
    assert lines == {
        "hosts/t/base/nginx.conf": ["-    listen 80;", "+    listen 8080;"],
        "hosts/t/base/scripts/start.sh": ["-exec nginx -g 'daemon off;' # ${NGINX_OPTS}",
                                          "+exec nginx -g 'daemon off;' -q # ${NGINX_OPTS}"],
        "hosts/t/base/web.env": ["-MODE=fast", "+MODE=slow"],
        "hosts/t/kustomization.yaml": ["-    literals: [LEVEL=2]", "+    literals: [LEVEL=3]",
                                       '-        EXTRA: "on"', '+        EXTRA: "off"'],
        "hosts/t/components/ha/kustomization.yaml": ["-    count: 2", "+    count: 4"],
        "hosts/t/components/more/kustomization.yaml": ['-    newTag: "1.28"', '+    newTag: "1.29"']}


def test_a_failed_edit_is_refused_with_its_reason_and_the_others_in_its_file_are_written(tmp_path: Path) -> None:
    """One kustomization file, three edits: the label a ``labels:`` transformer overrides fails
    its render; the image and the replicas of the same file are written."""
    files = dict(SMALL)
    files["kustomization.yaml"] = files["kustomization.yaml"].rstrip(" ") + "        labels:\n          - pairs: {tier: web}\n"
    files["base/web.yaml"] = files["base/web.yaml"].replace("metadata: {name: web}", "metadata: {name: web, labels: {tier: web}}")
    repo = tree(tmp_path, files)
    m = load(repo, "default")
    web = obj(m, "Deployment", "web")
    label = placed(m, web, ("metadata", "labels", "tier"), "shop")
    replicas = placed(m, web, ("spec", "replicas"), 4)
    image = placed(m, web, C0 + ("image",), "nginx:1.29")
    lines, refused = written(repo, m, [label, replicas, image])
    assert sorted(lines) == ["hosts/t/components/ha/kustomization.yaml", "hosts/t/components/more/kustomization.yaml"]
    assert refused == [("metadata.labels.tier", "not written: Deployment/default/web metadata.labels.tier: the edited "
                                                "kustomization renders 'web', live is 'shop'")]


def test_a_diamond_of_bases_is_read_once_per_directory(tmp_path: Path) -> None:
    """30 levels, each listing the next twice: kustomize refuses the duplicate ids at once;
    syncer's own walk reads 31 kustomizations, not 2^30 (it used to hang)."""
    import time

    from syncer.errors import ConfigError
    from syncer.sources.kustomize.layers import read_tree, walk

    files = {f"l{i}/kustomization.yaml": f"resources:\n  - ../l{i + 1}\n  - ../l{i + 1}\n" for i in range(30)}
    files["l30/kustomization.yaml"] = "resources: [cm.yaml]\n"
    files["l30/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
    files["kustomization.yaml"] = "resources: [l0]\n"
    repo = tree(tmp_path, files)
    t0 = time.monotonic()
    root = read_tree(repo / "hosts" / "t", repo)
    assert len(walk(root)) == 32
    with pytest.raises(ConfigError, match="kustomize build failed"):
        load(repo, "default")
    assert time.monotonic() - t0 < 30


def test_an_alias_bomb_in_a_kustomization_is_one_line_not_a_hang(tmp_path: Path) -> None:
    from syncer.errors import ConfigError

    bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]\n"
        for i in range(1, 12))
    repo = tree(tmp_path, {"kustomization.yaml": "resources: [cm.yaml]\ncommonAnnotations:\n  x: y\n" + "labels:\n"
                           "  - pairs: {a: b}\n" + bomb,
                           "cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"})
    with pytest.raises(ConfigError, match=r"^hosts/t/kustomization.yaml: line 7: a YAML alias \(\*a0\) in a "
                                          r"kustomization: not read"):
        load(repo, "default")


def test_a_generator_file_too_large_to_apply_is_refused_before_kustomize_reads_it(tmp_path: Path) -> None:
    from syncer.errors import ConfigError

    repo = tree(tmp_path, {"kustomization.yaml": "configMapGenerator:\n  - name: big\n    files: [big.txt]\n"})
    with open(repo / "hosts" / "t" / "big.txt", "wb") as fh:
        fh.truncate(100 * 1024 * 1024)  # sparse: 100 MB without writing them
    with pytest.raises(ConfigError, match=r"^hosts/t/big.txt: larger than 1 MiB: not rendered \(a configMapGenerator "
                                          r"source; a ConfigMap or Secret holds at most 1 MiB\)$"):
        load(repo, "default")


def test_a_render_larger_than_the_limit_is_one_error_not_read_into_memory(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from syncer.errors import ConfigError
    from syncer.sources.kustomize import render

    monkeypatch.setattr(render, "MAX_OUTPUT_BYTES", 4096)
    cms = "".join(f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\ndata: {{v: '{'x' * 200}'}}\n"
                  for i in range(40))
    repo = tree(tmp_path, {"kustomization.yaml": "resources: [cms.yaml]\n", "cms.yaml": cms})
    with pytest.raises(ConfigError, match=r"^hosts/t: kustomize renders more than 4 KiB of objects: not read"):
        load(repo, "default")


def test_a_file_generated_secret_is_compared_as_bytes_not_as_kustomizes_wrapped_text(tmp_path: Path) -> None:
    """kustomize writes a long base64 value as a block over several lines; the server stores it
    on one: no drift. A changed byte is still a drift (never written: a Secret)."""
    import base64
    import json

    from tests.helpers import run

    cert = "".join(f"line {i:03} of a certificate body ABCDEFGHIJKLMNOPQRSTUVWXYZ\n" for i in range(40))
    repo = tree(tmp_path, {"kustomization.yaml": "secretGenerator:\n  - name: tls\n    files: [cert.pem]\n",
                           "cert.pem": cert,
                           "syncer.conf": "installation: t\nnamespace: web\ntrack:\n  Secret: report\n"})
    m = load(repo, "web")
    secret = obj(m, "Secret", "tls")
    assert "\n" in secret.data["data"]["cert.pem"].strip()  # wrapped, as kustomize renders it
    live = {"apiVersion": "v1", "kind": "List", "items": [{
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": secret.ref.name, "namespace": "web", "uid": "u", "resourceVersion": "1"},
        "data": {"cert.pem": base64.b64encode(cert.encode()).decode()}}]}
    snap = tmp_path / "live.json"
    snap.write_text(json.dumps(live))
    code, out, err = run("diff", "t", "--repo", str(repo), "--live-file", str(snap), "-o", "json")
    assert (code, json.loads(out)["drifts"], err) == (0, [], "")
    live["items"][0]["data"]["cert.pem"] = base64.b64encode(cert.replace("039", "040").encode()).decode()
    snap.write_text(json.dumps(live))
    code, out, _ = run("diff", "t", "--repo", str(repo), "--live-file", str(snap), "-o", "json")
    assert code == 1 and [d["path"] for d in json.loads(out)["drifts"]] == ["data.cert.pem"]


def test_trailing_tabs_are_read_and_kept_as_kubectl_reads_them(tmp_path: Path) -> None:
    """Tabs where YAML takes them as separation (after a value, before a comment, after ``-``):
    kubectl and kustomize accept them; the edit changes the value and keeps every tab."""
    files = {"kustomization.yaml": "resources: [cm.yaml]\n",
             "cm.yaml": "apiVersion: v1\t\nkind: ConfigMap\nmetadata:\t\n  name: tabs\ndata:\n"
                        "  MODE: \"fast\"\t# tuned\n  LIST: |\n    a\t\n    b\n  LEVEL:\t\"1\" \t\n"}
    repo = tree(tmp_path, files)
    m = load(repo, "default")
    cm = obj(m, "ConfigMap", "tabs")
    assert cm.data["data"] == {"MODE": "fast", "LIST": "a\t\nb\n", "LEVEL": "1"}
    lines, refused = written(repo, m, [placed(m, cm, ("data", "LEVEL"), "2"), placed(m, cm, ("data", "MODE"), "slow")])
    assert refused == []
    assert lines == {"hosts/t/cm.yaml": ['-  MODE: "fast"\t# tuned', '+  MODE: "slow"\t# tuned',
                                         '-  LEVEL:\t"1" \t', '+  LEVEL:\t"2" \t']}


def test_a_generated_map_renamed_by_a_git_change_not_applied_yet_is_compared_with_the_live_one(tmp_path: Path) -> None:
    """git's new literal is a new hash, a new name the cluster does not hold yet: the live
    object of the same generator is compared (no "absent live"), and a note says so."""
    import json

    from tests.helpers import run

    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "hosts" / "midgard", repo / "hosts" / "midgard")
    base = repo / "hosts" / "midgard" / "base" / "kustomization.yaml"
    base.write_text(base.read_text().replace("GREETING=hello", "GREETING=hola"))
    code, out, err = run("diff", "midgard", "--repo", str(repo), "--live-file", str(ROOT / "examples" / "midgard-live.yaml"),
                         "-o", "json")
    doc = json.loads(out)
    cm = [d for d in doc["drifts"] if d["kind"] == "ConfigMap"]
    assert [(d["path"], d["git"], d["live"]) for d in cm] == [("data.GREETING", "hola", "hej")], cm
    assert not any(d["class"] == "removed" for d in doc["drifts"])
    [note] = [n for n in doc.get("notes", []) if "generated by kustomize" in n["message"]]
    assert "held live as web-settings-dg224tmd2h" in note["message"]


def test_init_chart_values_grant_generated_maps_by_kind_so_a_new_hash_needs_no_new_grant() -> None:
    from tests.helpers import run

    code, out, err = run("init", "midgard", "--repo", str(ROOT), "--chart-values")
    assert code == 0, err
    assert "ConfigMap: [web-settings-dg224tmd2h]" in out
    assert out.endswith("# syncer finds the new name (or, before it is applied, the old one) by its generator.\n"
                        "rbac:\n  watchKinds: true\n")


def test_each_item_a_json6902_patch_appends_is_its_own_line_of_the_patch(tmp_path: Path) -> None:
    """metrics-server's test-ha overlay: the test component's inline JSON 6902 patch appends three
    args (``/args/-``) and adds imagePullPolicy; each appended item is counted back from the end of
    the rendered list past the ones appended after it, so a middle one is its own ``value:`` line;
    the base's args before them are still the base file's lines."""
    repo = layout(tmp_path, "metrics-server", "resources:\n  - overlays/test-ha\n")
    m = load(repo, "kube-system")
    dep = obj(m, "Deployment", "metrics-server")
    drifts = [placed(m, dep, C0 + ("args", 5), "--kubelet-insecure-tls=false"),
              placed(m, dep, C0 + ("args", 6), "--v=2"),
              placed(m, dep, C0 + ("args", 7), "--logtostderr=false"),
              placed(m, dep, C0 + ("imagePullPolicy",), "IfNotPresent"),
              placed(m, dep, C0 + ("args", 4), "--metric-resolution=30s")]
    assert [d.file for d in drifts] == ["hosts/t/components/test/kustomization.yaml"] * 4 + ["hosts/t/base/deployment.yaml"]
    lines, refused = written(repo, m, drifts)
    assert refused == []
    assert lines == {
        "hosts/t/components/test/kustomization.yaml": [
            "-      value: --kubelet-insecure-tls", "+      value: --kubelet-insecure-tls=false",
            "-      value: --v=4", "+      value: --v=2", "-      value: --logtostderr", "+      value: --logtostderr=false",
            "-      value: Never", "+      value: IfNotPresent"],
        "hosts/t/base/deployment.yaml": ["-          - --metric-resolution=15s", "+          - --metric-resolution=30s"]}
