"""The Helm corpus (tests/data/helm-corpus): real public charts, vendored byte for byte
(SOURCES.md), and installations built on them in both layouts Argo CD and Flux read.

``build(repo, name)`` lays installation ``name`` into ``repo/hosts/<name>/``: its own files
(values, an umbrella's Chart.yaml, a HelmRelease and its values ConfigMap, syncer.conf) and the
chart it renders, copied where the layout wants it (the directory itself, ``charts/<chart>/``
of an umbrella, or the path a HelmRelease names).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parent / "data" / "helm-corpus"


@dataclass(frozen=True)
class Edit:
    """One live edit, as ``kubectl patch --type=json`` makes it (a ``replace`` at ``pointer``),
    and what syncer must do with it: write ``lines`` (the ``-``/``+`` lines of ``file``, relative
    to the installation) or, with no lines, report it without writing, its reason containing
    ``why``."""

    kind: str
    name: str  # the rendered object's name
    pointer: str  # JSON pointer of the field replaced live
    value: Any
    path: str  # the drift's path as syncer reports it
    file: str = ""
    lines: tuple[str, ...] = ()
    why: str = ""


C0 = "/spec/template/spec/containers/0"
P0 = "spec.template.spec.containers[0]"
J0 = "/spec/jobTemplate/spec/template/spec/containers/0"
Q0 = "spec.jobTemplate.spec.template.spec.containers[0]"


@dataclass(frozen=True)
class Installation:
    name: str
    chart: str  # under CORPUS/charts
    into: str  # where the chart goes, relative to hosts/<name>/ ("": the directory is the chart; "/x": the repo's x)
    layout: str  # "chart", "umbrella" or "flux"
    release: str  # the Helm release name the installation renders as
    namespace: str  # the release's namespace
    edits: tuple[Edit, ...] = field(default=())  # the corpus' live edits of this installation


INSTALLATIONS = (
    Installation("storage-chart", "local-path-provisioner", "", "chart", "storage", "storage"),
    Installation("storage-umbrella", "local-path-provisioner", "charts/local-path-provisioner", "umbrella",
                 "umbrella", "storage"),
    Installation("storage-flux", "local-path-provisioner", "chart", "flux", "local-path", "storage"),
    Installation("storage-flux-beta", "local-path-provisioner", "chart", "flux", "storage-provisioner", "storage"),
    Installation("storage-classes", "local-path-provisioner", "", "chart", "classes", "storage"),
    Installation("storage-flux-root", "local-path-provisioner", "/charts/local-path-provisioner", "flux", "node-storage",
                 "storage"),
    Installation("reloader-chart", "reloader", "", "chart", "reloader", "tools", (
        Edit("Deployment", "reloader-reloader", f"{C0}/image", "ghcr.io/stakater/reloader:v1.0.96", f"{P0}.image",
             "values.yaml", ("-      tag: v1.0.97", "+      tag: v1.0.96")),
        # `replicas: 1` is a literal of the template unless reloader.enableHA
        Edit("Deployment", "reloader-reloader", "/spec/replicas", 2, "spec.replicas", why="not written"),
        # deployment.labels renders the Deployment's labels and its pods' labels: only one moved
        Edit("Deployment", "reloader-reloader", "/spec/template/metadata/labels/version", "v1.0.96",
             "spec.template.metadata.labels.version", why="also renders"),
        # computed by the chart's helper (the release's full name), also the ServiceAccount's name
        Edit("Deployment", "reloader-reloader", "/spec/template/spec/serviceAccountName", "reloader-sa",
             "spec.template.spec.serviceAccountName", why="not written"),
    )),
    Installation("reloader-umbrella", "reloader", "charts/reloader", "umbrella", "platform", "tools", (
        Edit("Deployment", "platform-reloader", "/spec/replicas", 3, "spec.replicas", "values.yaml",
             ("-      replicas: 2", "+      replicas: 3")),
        Edit("Deployment", "platform-reloader", f"{C0}/image", "ghcr.io/stakater/reloader:v1.0.98", f"{P0}.image",
             "values.yaml", ("-        tag: v1.0.97", "+        tag: v1.0.98")),
        Edit("Deployment", "platform-reloader", f"{C0}/env/1/value", "slack", f"{P0}.env[1].value", "values.yaml",
             ("-          ALERT_SINK: webhook   # raw JSON to the ops relay",
              "+          ALERT_SINK: slack   # raw JSON to the ops relay")),
        Edit("Deployment", "platform-reloader", f"{C0}/resources/requests/memory", "256Mi",
             f"{P0}.resources.requests.memory", "values.yaml", ("-          memory: 128Mi", "+          memory: 256Mi")),
        # `--reload-on-create={{ .Values.reloader.reloadOnCreate }}` renders only when it is true
        Edit("Deployment", "platform-reloader", f"{C0}/args/0", "--reload-on-create=false", f"{P0}.args[0]",
             why="not written"),
    )),
    Installation("descheduler-flux", "descheduler", "chart", "flux", "descheduler", "ops", (
        Edit("Deployment", "descheduler", f"{C0}/image", "k8s.gcr.io/descheduler/descheduler:v0.22.1", f"{P0}.image",
             "release.yaml", ("-      tag: v0.22.0", "+      tag: v0.22.1")),
        Edit("Deployment", "descheduler", f"{C0}/args/3", "10m", f"{P0}.args[3]", "release.yaml",
             ("-    deschedulingInterval: 5m", "+    deschedulingInterval: 10m")),
        Edit("Deployment", "descheduler", f"{C0}/resources/requests/cpu", "250m", f"{P0}.resources.requests.cpu",
             "release.yaml", ("-        cpu: 500m", "+        cpu: 250m")),
        Edit("Deployment", "descheduler", "/spec/replicas", 2, "spec.replicas", why="not written"),
        # the policy's one values line also renders the pods' checksum/config annotation
        Edit("ConfigMap", "descheduler", "/data/policy.yaml", None, "data.policy.yaml", why="checksum"),
    )),
    Installation("descheduler-flux-beta", "descheduler", "chart", "flux", "ops-descheduler", "ops", (
        Edit("CronJob", "ops-descheduler", "/spec/schedule", "*/15 * * * *", "spec.schedule", "release.yaml",
             ('-    schedule: "*/30 * * * *"', '+    schedule: "*/15 * * * *"')),
        Edit("CronJob", "ops-descheduler", f"{J0}/image", "k8s.gcr.io/descheduler/descheduler:v0.22.1", f"{Q0}.image",
             "release.yaml", ("-      tag: v0.22.0", "+      tag: v0.22.1")),
        Edit("CronJob", "ops-descheduler", f"{J0}/args/3", "4", f"{Q0}.args[3]", "release.yaml",
             ("-      v: 2", "+      v: 4")),
        Edit("CronJob", "ops-descheduler", "/spec/concurrencyPolicy", "Allow", "spec.concurrencyPolicy",
             why="not written"),
    )),
    Installation("metrics-chart", "metrics-server", "", "chart", "metrics", "ops", (
        Edit("Deployment", "metrics-metrics-server", "/spec/replicas", 2, "spec.replicas", "values.yaml",
             ("-replicas: 1", "+replicas: 2")),
        Edit("Deployment", "metrics-metrics-server", f"{C0}/image", "registry.k8s.io/metrics-server/metrics-server:v0.6.3",
             f"{P0}.image", "values.yaml", ("-  tag: v0.6.4", "+  tag: v0.6.3")),
        Edit("Deployment", "metrics-metrics-server", f"{C0}/resources/requests/memory", "300Mi",
             f"{P0}.resources.requests.memory", "values.yaml", ("-    memory: 200Mi", "+    memory: 300Mi")),
        Edit("Deployment", "metrics-metrics-server", f"{C0}/args/4", "--metric-resolution=30s", f"{P0}.args[4]",
             "values.yaml", ("-  - --metric-resolution=15s", "+  - --metric-resolution=30s")),
        # containerPort renders the flag and the container's port: only the flag moved
        Edit("Deployment", "metrics-metrics-server", f"{C0}/args/0", "--secure-port=4443", f"{P0}.args[0]",
             why="also renders"),
    )),
)
BY_NAME = {i.name: i for i in INSTALLATIONS}


def policy_edit(text: str) -> str:
    """The descheduler policy as ``kubectl edit configmap`` leaves it: one threshold changed."""
    return text.replace("cpu: 20", "cpu: 30", 1)


def apply(objects: list[dict[str, Any]], edit: Edit) -> None:
    """``edit`` made on the snapshot ``objects`` (what kubectl patch does to the live object)."""
    [obj] = [o for o in objects if o["kind"] == edit.kind and o["metadata"]["name"] == edit.name]
    *parents, last = [int(p) if p.isdigit() else p.replace("~1", "/").replace("~0", "~")
                      for p in edit.pointer.lstrip("/").split("/")]
    node: Any = obj
    for part in parents:
        node = node[part]
    node[last] = policy_edit(node[last]) if edit.value is None else edit.value


def build(repo: Path, name: str) -> Path:
    """``repo/hosts/<name>/`` laid out from the corpus (its own files over the chart's, so an
    installation's values.yaml replaces the chart's); returns that directory."""
    inst = BY_NAME[name]
    host = repo / "hosts" / name
    into = repo / inst.into[1:] if inst.into.startswith("/") else host / inst.into
    shutil.copytree(CORPUS / "charts" / inst.chart, into, dirs_exist_ok=True)
    shutil.copytree(CORPUS / "hosts" / name, host, dirs_exist_ok=True)
    return host


def chart_dir(repo: Path, name: str) -> Path:
    """Where the installation's chart is, as ``build`` laid it."""
    inst = BY_NAME[name]
    host = repo / "hosts" / name
    return repo / inst.into[1:] if inst.into.startswith("/") else host / inst.into
