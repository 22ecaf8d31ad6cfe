"""Generated installations: manifests in git, the matching live objects, and git repositories.

An installation of ``n`` objects is ``n / 4`` "apps", each a ConfigMap, a selector-less
Service, its Endpoints and a Deployment -- the asgard pattern (a reconciler config whose
address list the Endpoints follow), repeated.  About 20 objects go in one file, ten files
in one folder, with the kinds of comments people write.  Every Endpoints is bound to its
ConfigMap's ``UPSTREAM_ADDRS`` in ``syncer.conf``.

The live side looks like ``kubectl get -o yaml --show-managed-fields``: server metadata,
managedFields, the last-applied annotation, server defaults and status.  ``drifted`` picks
which ConfigMaps were ``kubectl edit``-ed live (``LOG_LEVEL: info -> debug``), so the
expected drift count is known exactly.

Addresses are TEST-NET-style data (10.x); nothing ever connects to them.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml  # PyYAML (a dependency of the kubernetes client): fast C dumper for big snapshots

from bench.common import chunks, git, git_env

KINDS = ("ConfigMap", "Service", "Endpoints", "Deployment")
PER_FILE = 20
FILES_PER_DIR = 10
CREATED = "2026-06-02T18:40:11Z"
EDITED = "2026-08-20T09:14:00Z"
_TEAMS = ("payments", "search", "ingest", "billing", "identity", "media", "notify", "ml")

try:
    _Dumper: Any = yaml.CSafeDumper
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # PyYAML without libyaml
    _Dumper, _Loader = yaml.SafeDumper, yaml.SafeLoader


@dataclass(frozen=True)
class Installation:
    repo: Path  # work tree holding hosts/<name>/
    name: str
    n: int
    files: int
    namespace: str
    drifted: tuple[int, ...]  # app indexes whose ConfigMap drifted live


def _app(i: int) -> dict[str, Any]:
    team = _TEAMS[i % len(_TEAMS)]
    a, b = 16 + (i // 250) % 200, i % 250
    return {
        "name": f"{team}-svc-{i:05d}",
        "team": team,
        "ns": f"team-{team}",
        "addrs": f"10.{a}.{b}.10 10.{a}.{b}.11 10.{a + 1}.{b}.10",
        "ip": f"10.{a}.{b}.10",
        "port": 8000 + i % 1000,
        "image": f"registry.example.invalid/{team}/svc-{i % 40:02d}:1.{i % 17}.{i % 5}",
    }


def _configmap(app: dict[str, Any], i: int) -> str:
    return f"""\
# Settings read by {app['name']} at start-up; the reconciler re-reads UPSTREAM_ADDRS.
# Ops may change LOG_LEVEL live during incidents -- copy it back (syncer does now).
apiVersion: v1
kind: ConfigMap
metadata:
  name: {app['name']}
  namespace: {app['ns']}
  labels:
    app.kubernetes.io/name: {app['name']}
    app.kubernetes.io/part-of: {app['team']}
data:
  LOG_LEVEL: info              # info | debug | warn
  UPSTREAM_ADDRS: "{app['addrs']}"
  TIMEOUT_SECONDS: "{15 + i % 4 * 5}"
  PORT: "{app['port']}"
  FEATURES: |
    cache=on
    retries={1 + i % 3}
    region=eu-{1 + i % 3}
"""


def _service(app: dict[str, Any]) -> str:
    return f"""\
# No selector: {app['name']}'s Endpoints are set by the reconciler (see below).
apiVersion: v1
kind: Service
metadata:
  name: {app['name']}
  namespace: {app['ns']}
spec:
  ports:
    - name: http
      port: 80
      targetPort: {app['port']}
"""


def _endpoints(app: dict[str, Any]) -> str:
    return f"""\
apiVersion: v1
kind: Endpoints
metadata:
  name: {app['name']}
  namespace: {app['ns']}
subsets:
  - addresses:
      - ip: {app['ip']}   # first reachable candidate
    ports:
      - name: http
        port: {app['port']}
"""


def _deployment(app: dict[str, Any], i: int) -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {app['name']}
  namespace: {app['ns']}
  labels:
    app.kubernetes.io/name: {app['name']}
spec:
  replicas: {1 + i % 3}   # HPA owns this live; ignored by syncer.conf
  selector:
    matchLabels:
      app.kubernetes.io/name: {app['name']}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {app['name']}
    spec:
      containers:
        - name: app
          image: {app['image']}
          args: ["--listen=:{app['port']}", "--config=/etc/app"]
          ports:
            - name: http
              containerPort: {app['port']}
          envFrom:
            - configMapRef:
                name: {app['name']}
          resources:
            requests: {{cpu: 50m, memory: 64Mi}}
            limits:
              memory: 256Mi
"""


def objects_text(n: int) -> list[str]:
    """The ``n`` documents, in kind order within each app."""
    out = []
    for k in range(n):
        i, kind = divmod(k, 4)
        app = _app(i)
        if KINDS[kind] == "ConfigMap":
            out.append(_configmap(app, i))
        elif KINDS[kind] == "Service":
            out.append(_service(app))
        elif KINDS[kind] == "Endpoints":
            out.append(_endpoints(app))
        else:
            out.append(_deployment(app, i))
    return out


def config_text(name: str, n: int) -> str:
    apps = (n + 3) // 4
    lines = [
        f"# syncer settings for {name} (generated by bench/gen.py; not a manifest).",
        f"installation: {name}",
        "namespace: default",
        "track:",
        "  ConfigMap: writeback",
        "  Endpoints: stable",
        "  Service: report",
        "  Deployment: report",
        "stableFor: 10m",
        "ignore:",
        "  - kind: Deployment",
        "    pointers: [/spec/replicas]",
    ]
    bound = [i for i in range(apps) if 4 * i + 2 < n]  # apps that have an Endpoints
    if bound:
        lines.append("candidates:")
        for i in bound:
            app = _app(i)
            lines += [f"  - endpoints: {app['name']}", f"    namespace: {app['ns']}",
                      f"    configMap: {app['name']}", "    key: UPSTREAM_ADDRS"]
    return "\n".join(lines) + "\n"


def write_installation(repo: Path, name: str, n: int, drift: float = 0.01, seed: int = 7,
                       drifted: Iterable[int] | None = None) -> Installation:
    """Write ``hosts/<name>/`` under ``repo`` (not committed)."""
    base = repo / "hosts" / name
    base.mkdir(parents=True, exist_ok=True)
    (base / "syncer.conf").write_text(config_text(name, n))
    docs = objects_text(n)
    files = chunks(docs, PER_FILE)
    for k, group in enumerate(files):
        folder = base / f"team-{k // FILES_PER_DIR:03d}"
        folder.mkdir(exist_ok=True)
        head = f"# {name}: services batch {k:04d} ({len(group)} objects). Managed in git; see README.\n"
        (folder / f"apps-{k:04d}.yaml").write_text(head + "---\n".join(group))
    apps_with_cm = list(range((n + 3) // 4))
    if drifted is None:
        want = max(1, round(n * drift))
        drifted = sorted(random.Random(seed).sample(apps_with_cm, min(want, len(apps_with_cm))))
    return Installation(repo, name, n, len(files), "default", tuple(drifted))


# ---------------------------------------------------------------- the live side


def _fields_v1(value: Any) -> dict[str, Any]:
    """A FieldsV1 set for ``value``: maps by key, lists atomic (good enough for realism)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {".": {}}
        for k, v in value.items():
            out[f"f:{k}"] = _fields_v1(v) if isinstance(v, dict) else {}
        return out
    return {}


def _uid(text: str) -> str:
    return str(uuid.UUID(hashlib.md5(text.encode()).hexdigest()))


def live_object(obj: dict[str, Any], rv: int, drifted: bool) -> dict[str, Any]:
    """What ``kubectl get -o yaml --show-managed-fields`` shows for ``obj`` after ``kubectl apply``."""
    applied = copy.deepcopy(obj)
    applied["metadata"]["annotations"] = {}
    live = copy.deepcopy(obj)
    meta = live["metadata"]
    declared = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    managed = [{
        "apiVersion": obj["apiVersion"], "fieldsType": "FieldsV1",
        "fieldsV1": {**_fields_v1(declared), "f:metadata": {
            **_fields_v1(obj["metadata"]),
            "f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}}}},
        "manager": "kubectl-client-side-apply", "operation": "Update", "time": CREATED,
    }]
    meta.update({
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration":
                        json.dumps(applied, separators=(",", ":"), sort_keys=True) + "\n"},
        "creationTimestamp": CREATED,
        "resourceVersion": str(rv),
        "uid": _uid(f"{obj['kind']}/{meta['namespace']}/{meta['name']}"),
        "managedFields": managed,
    })
    kind = obj["kind"]
    if kind == "Service":
        live["spec"].update({"clusterIP": f"10.96.{rv % 250}.{rv // 250 % 250}", "type": "ClusterIP",
                             "sessionAffinity": "None", "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
                             "internalTrafficPolicy": "Cluster"})
        live["spec"]["clusterIPs"] = [live["spec"]["clusterIP"]]
        for p in live["spec"]["ports"]:
            p["protocol"] = "TCP"
        live["status"] = {"loadBalancer": {}}
    elif kind == "Endpoints":
        for s in live["subsets"]:
            for p in s["ports"]:
                p["protocol"] = "TCP"
    elif kind == "Deployment":
        meta["generation"] = 1
        meta["annotations"]["deployment.kubernetes.io/revision"] = "1"
        spec = live["spec"]
        spec.update({"progressDeadlineSeconds": 600, "revisionHistoryLimit": 10,
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}})
        spec["template"]["metadata"]["creationTimestamp"] = None
        pod = spec["template"]["spec"]
        pod.update({"dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
                    "securityContext": {}, "terminationGracePeriodSeconds": 30})
        for c in pod["containers"]:
            c.update({"imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log",
                      "terminationMessagePolicy": "File"})
            for p in c.get("ports", []):
                p["protocol"] = "TCP"
        replicas = spec.get("replicas", 1)
        live["status"] = {"availableReplicas": replicas, "observedGeneration": 1, "readyReplicas": replicas,
                          "replicas": replicas, "updatedReplicas": replicas,
                          "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                                          "lastTransitionTime": CREATED, "lastUpdateTime": CREATED}]}
    if drifted:
        live["data"]["LOG_LEVEL"] = "debug"
        managed.append({"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:LOG_LEVEL": {}}},
                        "manager": "kubectl-edit", "operation": "Update", "time": EDITED})
    return live


def declared_objects(n: int) -> list[dict[str, Any]]:
    return [yaml.load(text, Loader=_Loader) for text in objects_text(n)]


def write_snapshot(path: Path, n: int, drifted: Iterable[int]) -> int:
    """A ``kind: List`` snapshot of all ``n`` objects; returns its size in bytes."""
    hit = set(drifted)
    items = []
    for k, obj in enumerate(declared_objects(n)):
        i = k // 4
        items.append(live_object(obj, 4_800_000 + k, obj["kind"] == "ConfigMap" and i in hit))
    doc = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}
    text = "# kubectl get configmap,service,endpoints,deployment -A -o yaml --show-managed-fields\n"
    text += yaml.dump(doc, Dumper=_Dumper, default_flow_style=False, sort_keys=True, width=1 << 16)
    path.write_text(text)
    return len(text)


# ---------------------------------------------------------------- git repositories


def init_repos(root: Path, inst_name: str, n: int, drifted: Iterable[int] | None = None) -> tuple[Installation, Path]:
    """A work repo with ``hosts/<inst_name>`` committed on main, pushed to a bare ``origin.git``."""
    bare, work = root / "origin.git", root / "work"
    root.mkdir(parents=True, exist_ok=True)
    env = git_env(root)
    git(root, "init", "-q", "--bare", "-b", "main", str(bare), env=env)
    work.mkdir()
    git(work, "init", "-q", "-b", "main", env=env)
    inst = write_installation(work, inst_name, n, drifted=drifted)
    git(work, "add", ".", env=env)
    git(work, "commit", "-q", "-m", f"{inst_name}: {n} objects", env=env)
    git(work, "remote", "add", "origin", str(bare), env=env)
    git(work, "push", "-q", "origin", "main", env=env)
    return inst, bare


def fast_import_repo(bare: Path, inst_name: str, n_inst: int, files: int, commits: int) -> dict[str, Any]:
    """A bare repo with ``files`` files and ``commits`` commits, built with ``git fast-import``.

    The first commit adds the installation ``hosts/<inst_name>`` (``n_inst`` objects) and
    enough filler manifests under ``apps/`` to reach ``files`` files; every later commit
    changes one line of one filler file (the history a busy GitOps repo accumulates).
    """
    env = git_env(bare.parent)
    bare.parent.mkdir(parents=True, exist_ok=True)
    git(None, "init", "-q", "--bare", "-b", "main", str(bare), env=env)
    scratch = bare.parent / "fi-scratch"
    inst = write_installation(scratch, inst_name, n_inst)
    inst_files = sorted(p for p in (scratch / "hosts" / inst_name).rglob("*") if p.is_file())
    filler = max(0, files - len(inst_files))
    docs = objects_text(40)

    def filler_text(j: int, rev: int) -> bytes:
        return (f"# filler {j:05d} (rev {rev})\n" + docs[j % 40].replace("info", f"info-{rev}")).encode()

    def data(blob: bytes) -> bytes:
        return b"data %d\n" % len(blob) + blob + b"\n"

    rng = random.Random(11)
    out = bytearray()
    t = 1_700_000_000
    out += b"commit refs/heads/main\nmark :1\n"
    out += b"author Bench Ops <ops@bench.invalid> %d +0000\ncommitter Bench Ops <ops@bench.invalid> %d +0000\n" % (t, t)
    out += data(b"initial import")
    for p in inst_files:
        rel = p.relative_to(scratch).as_posix().encode()
        out += b"M 100644 inline " + rel + b"\n" + data(p.read_bytes())
    for j in range(filler):
        out += b"M 100644 inline apps/%03d/m-%05d.yaml\n" % (j // 100, j) + data(filler_text(j, 0))
    for c in range(1, commits):
        j = rng.randrange(filler) if filler else 0
        t += 60
        out += b"commit refs/heads/main\nmark :%d\n" % (c + 1)
        out += b"author Bench Ops <ops@bench.invalid> %d +0000\ncommitter Bench Ops <ops@bench.invalid> %d +0000\n" % (t, t)
        out += data(b"bump filler %05d" % j) + b"from :%d\n" % c
        out += b"M 100644 inline apps/%03d/m-%05d.yaml\n" % (j // 100, j) + data(filler_text(j, c))
    git(bare, "fast-import", "--quiet", input=bytes(out), env=env)
    git(bare, "repack", "-a", "-d", "-q", env=env)
    git(bare, "config", "uploadpack.allowFilter", "true", env=env)
    git(bare, "config", "uploadpack.allowAnySHA1InWant", "true", env=env)
    size = sum(p.stat().st_size for p in bare.rglob("*") if p.is_file())
    return {"installation": inst, "files": len(inst_files) + filler, "commits": commits, "bytes": size,
            "stream_bytes": len(out)}
