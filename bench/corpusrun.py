"""Apply-then-diff over the shared real-world corpus on the REAL kube-apiserver (issue 20).

For each of four ways a person puts manifests in a cluster -- ``kubectl apply -f``, ``kubectl
apply --server-side``, ``kubectl create -f``, ``helm install`` (a chart whose templates are the
file's documents) -- on a fresh kube-apiserver v1.20.2 + etcd (tests/realapi/cluster.py):

1. every corpus file is one installation ``hosts/fNNN/`` (every served kind tracked
   ``writeback``, kinds the server does not serve ``ignore``), committed to a bare remote;
2. each file is applied that way (CRDs and Namespaces first); objects the server refuses
   (an API removed or not yet there on v1.20, a custom resource without its CRD) are counted apart;
3. ``syncer diff``: any drift is **false drift**, any error an **error exit**;
4. one live edit per file on its first applied object, rotating through ``kubectl label``,
   ``annotate``, ``patch``, ``edit``, ``scale``, ``set env`` and a server-side apply by another
   field manager (``--field-manager=hotfix-team``); ``syncer diff`` must show it (else **missed**)
   with direction ``cluster`` (else **wrong direction**), and nothing else (else false drift);
5. ``syncer sync --mode commit``; the commit may change only the edited value (else **wrong
   write**); ``syncer diff`` again on the new commit must be clean.

    python -m bench.corpusrun [--modes apply,ssa,create,helm] [--limit N] [--corpus DIR]

Writes nothing to bench/RESULTS.md itself: it prints the table (paste it with the command).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench.common import CORPUS
from bench.kubediff import apiserver_binary
from syncer.cli import main as syncer
from syncer.sources.manifests import parse_documents
from tests.realapi.cluster import ClusterError, RealCluster

KUBECTL = os.environ.get("SYNCER_KUBECTL", "/usr/local/bin/kubectl")
HELM = os.environ.get("SYNCER_HELM", "/usr/local/bin/helm")
NS = "corpus"
EDITS = ("label", "annotate", "patch", "edit", "scale", "set", "ssa")
FIRST = ("CustomResourceDefinition", "Namespace")


def sh(*args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=180, input=stdin, check=False,
                          env={**os.environ, **(env or {})})


def git(cwd: Path, *args: str) -> str:
    out = sh("git", "-C", str(cwd), "-c", "user.name=Bench", "-c", "user.email=bench@example.invalid", *args)
    assert out.returncode == 0, out.stderr
    return out.stdout


class Run:
    def __init__(self, mode: str, files: list[Path], tmp: Path) -> None:
        self.mode, self.files, self.tmp = mode, files, tmp
        for attempt in range(3):  # a loaded machine can keep kube-apiserver from being ready in 60 s
            try:
                self.cluster = RealCluster(kube_apiserver=apiserver_binary()).start()
                break
            except ClusterError:
                if attempt == 2:
                    raise
        self.kc = str(self.cluster.kubeconfig(tmp / "admin.kubeconfig", namespace=NS))
        self.cluster.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                             "metadata": {"name": NS}})
        self.counts = {k: 0 for k in ("files", "objects", "applied", "not applicable", "duplicate", "false drift",
                                      "missed", "wrong direction", "wrong writes", "error exits", "edits",
                                      "known limit", "errors where the tool failed too", "files the tool refused",
                                      "unknown direction")}
        self.notes: list[str] = []
        self.served: dict[tuple[str, str], tuple[str, bool]] = {}

    def kubectl(self, *args: str, stdin: str | None = None, editor: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {"KUBE_EDITOR": editor} if editor else None
        return sh(KUBECTL, "--kubeconfig", self.kc, *args, stdin=stdin, env=env)

    def discover(self) -> None:
        """(apiVersion, kind) -> (plural, namespaced) for every version the server serves."""
        self.served.clear()
        versions = ["v1"]
        for group in self.cluster.request("GET", "/apis")["groups"]:
            versions += [v["groupVersion"] for v in group["versions"]]
        for gv in versions:
            try:
                doc = self.cluster.request("GET", "/api/v1" if gv == "v1" else f"/apis/{gv}")
            except Exception:  # noqa: BLE001 -- an APIService from the corpus whose backend is absent: 503
                continue
            for r in doc["resources"]:
                if "/" not in r["name"]:
                    self.served[(gv, r["kind"])] = (r["name"], r["namespaced"])

    def exists(self, obj: dict[str, Any]) -> bool:
        plural, namespaced = self.served[(obj["apiVersion"], obj["kind"])]
        gv = obj["apiVersion"]
        meta = obj.get("metadata") or {}
        base = "/api/v1" if gv == "v1" else f"/apis/{gv}"
        path = (f"{base}/namespaces/{meta.get('namespace') or NS}/{plural}/{meta['name']}" if namespaced
                else f"{base}/{plural}/{meta['name']}")
        try:
            self.cluster.request("GET", path)
            return True
        except Exception:  # noqa: BLE001 -- 404: not created
            return False

    def put(self, work: Path, idx: int, path: Path) -> bool:
        """Apply one file this run's way; did the tool take all of it?"""
        if self.mode == "apply":
            return self.kubectl("apply", "-n", NS, "-f", str(path)).returncode == 0
        if self.mode == "ssa":
            return self.kubectl("apply", "--server-side", "-n", NS, "-f", str(path)).returncode == 0
        if self.mode == "create":
            return self.kubectl("create", "-n", NS, "-f", str(path)).returncode == 0
        if True:
            chart = self.tmp / "charts" / f"f{idx:03}"
            (chart / "templates").mkdir(parents=True, exist_ok=True)
            (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: f{idx:03}\nversion: 0.1.0\n")
            shutil.copy(path, chart / "templates" / path.name)
            return sh(HELM, "install", f"f{idx:03}", str(chart), "-n", NS, "--kubeconfig", self.kc).returncode == 0
        return False

    def diff(self, work: Path, inst: str) -> tuple[int, dict[str, Any]]:
        out, err = io.StringIO(), io.StringIO()
        code = syncer(["diff", inst, "--repo", str(work), "--kubeconfig", self.kc, "-o", "json"],
                      now=datetime.now(timezone.utc), stdout=out, stderr=err)
        try:
            return code, dict(json.loads(out.getvalue()))
        except ValueError:
            return 2, {"drifts": [], "errors": [{"message": err.getvalue().strip()}]}


def _objects(path: Path) -> list[dict[str, Any]]:
    try:
        docs = parse_documents(path.read_text(encoding="utf-8"), str(path))
    except Exception:  # noqa: BLE001
        return []
    out = []
    for d in docs:
        if isinstance(d, dict) and str(d.get("kind", "")).endswith("List") and isinstance(d.get("items"), list):
            out += [i for i in d["items"] if isinstance(i, dict)]
        elif isinstance(d, dict) and d.get("kind") and isinstance(d.get("metadata"), dict) and d["metadata"].get("name"):
            out.append(d)
    return out


def _ref(obj: dict[str, Any], namespaced: bool) -> tuple[str, str, str, str]:
    meta = obj["metadata"]
    return (str(obj["apiVersion"]).split("/")[0] if "/" in str(obj["apiVersion"]) else "",
            str(obj["kind"]), str(meta.get("namespace") or NS) if namespaced else "", str(meta["name"]))


def _edit(run: Run, obj: dict[str, Any], namespaced: bool, n: int) -> tuple[str, str] | None:
    """One live edit of ``obj``; (what, the drift path syncer must report) or None."""
    kind, meta = obj["kind"], obj["metadata"]
    plural = run.served[(obj["apiVersion"], kind)][0]
    group = obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else ""
    version = obj["apiVersion"].split("/")[-1]
    what = f"{plural}.{version}.{group}" if group else plural
    ns = ["-n", str(meta.get("namespace") or NS)] if namespaced else []
    target = [f"{what}/{meta['name']}", *ns]
    how = EDITS[n % len(EDITS)]
    data = obj.get("data") if kind == "ConfigMap" and isinstance(obj.get("data"), dict) and obj["data"] else None
    replicas = kind in ("Deployment", "StatefulSet", "ReplicaSet", "ReplicationController") and \
        isinstance((obj.get("spec") or {}).get("replicas"), int)
    pod = kind in ("Deployment", "StatefulSet", "DaemonSet")
    if how == "scale" and not replicas or how == "set" and not pod:
        how = "label"
    if how == "label":
        done, path = run.kubectl("label", *target, f"corpus-edit=l{n}"), "metadata.labels.corpus-edit"
    elif how == "annotate":
        done, path = run.kubectl("annotate", *target, f"corpus-note=a{n}"), "metadata.annotations.corpus-note"
    elif how == "patch" and data:
        key = sorted(data)[0]
        done = run.kubectl("patch", *target, "--type=merge", "-p", json.dumps({"data": {key: f"patched-{n}"}}))
        path = f"data.{key}" if key.replace("-", "").replace("_", "").isalnum() else ""
    elif how == "patch":
        done = run.kubectl("patch", *target, "--type=merge", "-p",
                           json.dumps({"metadata": {"labels": {"corpus-patch": f"p{n}"}}}))
        path = "metadata.labels.corpus-patch"
    elif how == "edit":
        script = run.tmp / "editor.py"
        script.write_text("import json, sys\np = sys.argv[1]\nd = json.load(open(p))\n"
                          "d['metadata'].setdefault('annotations', {})['corpus-edited'] = 'yes'\n"
                          "json.dump(d, open(p, 'w'))\n")
        done = run.kubectl("edit", "-o", "json", *target, editor=f"{sys.executable} {script}")
        path = "metadata.annotations.corpus-edited"
    elif how == "scale":
        done = run.kubectl("scale", *target, f"--replicas={obj['spec']['replicas'] + 1}")
        path = "spec.replicas"
    elif how == "set":
        # every container, init containers too: one env item added to each
        done, path = run.kubectl("set", "env", *target, "CORPUS_SET=1"), "spec.template.spec"
    else:  # the whole manifest again, one label value changed, by another manager
        labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
        if not labels:
            return _edit(run, obj, namespaced, n + 1)
        key = sorted(labels)[0]
        changed = json.loads(json.dumps(obj))
        changed["metadata"]["labels"][key] = f"hotfix-{n}"
        if namespaced:
            changed["metadata"].setdefault("namespace", NS)
        done = run.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=hotfix-team", "-f", "-",
                           stdin=json.dumps(changed))
        path = f"metadata.labels.{key}" if "." not in key and "/" not in key else f"metadata.labels[{key}]"
    if done.returncode != 0:
        run.notes.append(f"{how} {target[0]}: {done.stderr.strip()[:120]}")
        return None
    return how, path


def _found(drifts: list[dict[str, Any]], path: str) -> list[dict[str, Any]]:
    return [d for d in drifts if path and (d["path"] == path or d["path"].startswith(path + ".")
                                           or d["path"].startswith(path + "[") or path.endswith("]")
                                           and path.split("[")[1].rstrip("]") in d["path"])]


def run_mode(mode: str, files: list[Path], tmp: Path) -> Run:
    run = Run(mode, files, tmp)
    try:
        return _run(run)
    finally:
        run.cluster.stop()


def _run(run: Run) -> Run:
    tmp, c = run.tmp, run.counts
    work, bare = tmp / "work", tmp / "origin.git"
    git(tmp, "init", "-q", "--bare", "-b", "main", str(bare))
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    run.discover()
    # Namespaces the files name but do not declare: made up front, as a cluster would have them.
    declared_ns = {o["metadata"]["name"] for f in run.files for o in _objects(f) if o["kind"] == "Namespace"}
    named = {str(o["metadata"].get("namespace")) for f in run.files for o in _objects(f) if o["metadata"].get("namespace")}
    order = sorted(range(len(run.files)), key=lambda i: not any(o["kind"] in FIRST for o in _objects(run.files[i])))
    seen: dict[tuple[str, str, str, str], int] = {}
    insts: dict[int, Path] = {}
    for idx in order:
        path = run.files[idx]
        objs = _objects(path)
        refs = [_ref(o, (run.served.get((o["apiVersion"], o["kind"])) or ("", True))[1]) for o in objs]
        if any(r in seen for r in refs):
            c["duplicate"] += 1
            continue
        for r in refs:
            seen[r] = idx
        inst = work / "hosts" / f"f{idx:03}"
        inst.mkdir(parents=True)
        shutil.copy(path, inst / path.name)
        if run.mode == "helm" and not path.read_bytes().endswith(b"\n"):
            # Helm ends every rendered document with a line break, so a block scalar at the end of a
            # file without one (a PrometheusRule's last ``expr: |``) gains a trailing newline live. A
            # Helm user's git holds what Helm rendered: the copy gets the final line break too.
            with open(inst / path.name, "ab") as f:
                f.write(b"\n")
        insts[idx] = inst
    for ns in sorted(named - declared_ns - {NS}):
        try:
            run.cluster.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                               "metadata": {"name": ns}})
        except Exception:  # noqa: BLE001 -- there already (kube-system) or no valid name
            pass
    applied: dict[int, list[dict[str, Any]]] = {}
    refused: set[int] = set()
    first = [i for i in order if i in insts and any(o["kind"] in FIRST for o in _objects(run.files[i]))]
    rest = [i for i in order if i in insts and i not in first]

    def put(idx: int) -> None:
        if not run.put(work, idx, insts[idx] / run.files[idx].name):
            refused.add(idx)

    with ThreadPoolExecutor(4) as pool:  # CRDs and Namespaces before what lives in them
        list(pool.map(put, first))
    time.sleep(2)  # a CRD is served a moment after it is created
    run.discover()
    # A file none of whose kinds the server serves is refused whole: no need to run the tool.
    hopeless = [i for i in rest if not any((o["apiVersion"], o["kind"]) in run.served for o in _objects(run.files[i]))]
    refused.update(hopeless)
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(put, [i for i in rest if i not in hopeless]))
    run.discover()
    c["files the tool refused"] = len(refused)
    for idx, inst in insts.items():
        f = inst / run.files[idx].name
        objs = _objects(f)
        kinds = sorted({o["kind"] for o in objs})
        served = {o["kind"] for o in objs if (o["apiVersion"], o["kind"]) in run.served}
        track = "".join(f"  {k}: {'writeback' if k in served else 'ignore'}\n" for k in kinds)
        (inst / "syncer.conf").write_text(f"installation: {inst.name}\nnamespace: {NS}\ntrack:\n{track}")
        c["files"] += 1
        c["objects"] += len(objs)
        ok = [o for o in objs if (o["apiVersion"], o["kind"]) in run.served and run.exists(o)]
        c["applied"] += len(ok)
        c["not applicable"] += len(objs) - len(ok)
        applied[idx] = ok
    git(work, "add", ".")
    git(work, "commit", "-qm", "corpus")
    git(work, "remote", "add", "origin", str(bare))
    git(work, "push", "-q", "origin", "main")
    absent = {(o["kind"], o["metadata"]["name"]) for idx, inst in insts.items() for o in _objects(inst / run.files[idx].name)
              if o not in applied.get(idx, [])}

    def real(drifts: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [d for d in drifts if not (d["detail"] == "declared in git, absent live" and (d["kind"], d["name"]) in absent)]

    edits: dict[int, tuple[str, str, dict[str, Any]]] = {}
    for n, (idx, inst) in enumerate(sorted(insts.items())):
        code, doc = run.diff(work, inst.name)
        if doc["errors"]:
            c["error exits" if idx not in refused else "errors where the tool failed too"] += 1
            run.notes.append(f"{inst.name} ({run.files[idx].name}): {doc['errors'][0]['message'][:160]}")
        extra = real(doc["drifts"])
        c["false drift"] += len(extra)
        for d in extra[:3]:
            run.notes.append(f"false drift {inst.name} {d['kind']}/{d['name']} {d['path']}: {d['detail'][:100]}")
        targets = [o for o in applied.get(idx, []) if o["kind"] not in ("Secret", "CustomResourceDefinition", "Namespace")]
        if not targets:
            continue
        obj = targets[0]
        made = _edit(run, obj, run.served[(obj["apiVersion"], obj["kind"])][1], n)
        if made is not None:
            edits[idx] = (made[0], made[1], obj)
    for idx, (how, path, obj) in sorted(edits.items()):
        inst = insts[idx]
        c["edits"] += 1
        code, doc = run.diff(work, inst.name)
        drifts = real(doc["drifts"])
        hit = _found(drifts, path)
        extra = [d for d in drifts if d not in hit]
        c["false drift"] += len(extra)
        for d in extra:
            run.notes.append(f"beside {how} {inst.name} {d['kind']}/{d['name']} {d['path']}: {d['detail'][:100]}")
        if not hit:
            c["missed"] += 1
            run.notes.append(f"missed {how} {obj['kind']}/{obj['metadata']['name']} {path} ({inst.name}): "
                             f"{[d['path'] for d in drifts]}")
            continue
        wrong = [d for d in hit if d["direction"] != "cluster"]
        if wrong and all(d["direction"] == "unknown" for d in wrong):
            c["unknown direction"] += 1  # no base at all (no managedFields entry, no annotation): PR only
            run.notes.append(f"unknown direction {how} {obj['kind']}/{obj['metadata']['name']} {path}: "
                             f"{wrong[0]['base_why']}")
        elif wrong and how == "scale" and run.mode != "apply":
            c["known limit"] += 1  # v1.20 does not record /scale writes in managedFields
        elif wrong:
            c["wrong direction"] += 1
            run.notes.append(f"wrong direction {how} {obj['kind']}/{obj['metadata']['name']} {path}: "
                             f"{wrong[0]['direction']} ({wrong[0]['base_why']})")
        # sync: commit what the cluster moved; only the edited value may change
        before = {p: p.read_text() for p in inst.rglob("*.y*ml")}
        out, err = io.StringIO(), io.StringIO()
        code = syncer(["sync", inst.name, "--repo", str(work), "--kubeconfig", run.kc, "--mode", "commit",
                       "--forge", "none", "--remote", str(bare)], now=datetime.now(timezone.utc), stdout=out, stderr=err)
        if code != 0:
            c["error exits"] += 1
            run.notes.append(f"sync {inst.name}: exit {code}: {err.getvalue().strip()[:160]}")
        git(work, "pull", "-q", "--ff-only", "origin", "main")
        for p, old in before.items():
            new = p.read_text()
            if new == old:
                continue
            changed = [ln for ln in _changed_lines(old, new)]
            if len(changed) > 12 or not any(seg in "".join(changed) for seg in _markers(how, path)):
                c["wrong writes"] += 1
                run.notes.append(f"wrong write {how} {p.name}: {changed[:4]}")
        code, doc = run.diff(work, inst.name)
        left = [d for d in real(doc["drifts"]) if not (how == "scale" and run.mode != "apply")]
        if wrong or not hit:
            continue
        still = [d for d in left if d["action"] == "write"]
        if still:
            c["wrong writes"] += 1
            run.notes.append(f"after sync {inst.name}: still {[d['path'] for d in still]}")
    return run


def _changed_lines(old: str, new: str) -> list[str]:
    import difflib

    return [ln for ln in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
            if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]


def _markers(how: str, path: str) -> list[str]:
    return {"label": ["corpus-edit"], "annotate": ["corpus-note"], "edit": ["corpus-edited"], "set": ["CORPUS_SET"],
            "scale": ["replicas"], "patch": ["patched-", "corpus-patch"], "ssa": ["hotfix-"]}[how]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.corpusrun")
    ap.add_argument("--modes", default="apply,ssa,create,helm")
    ap.add_argument("--limit", type=int, default=0, help="only the first N corpus files")
    ap.add_argument("--corpus", default=os.environ.get("SYNCER_CORPUS", str(CORPUS)),
                    help="the corpus directory (default tests/data/corpus, a copy of the shared corpus)")
    args = ap.parse_args(argv)
    corpus = Path(args.corpus)
    files = sorted(corpus.glob("*/*.y*ml"))
    if args.limit:
        files = files[: args.limit]
    print(f"corpus: {len(files)} files from {corpus}")
    rows = []
    for mode in args.modes.split(","):
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix=f"corpusrun-{mode}-") as tmp:
            run = run_mode(mode, files, Path(tmp))
        rows.append((mode, run.counts, time.monotonic() - t0))
        print(f"\n## {mode}: {json.dumps(run.counts)} ({time.monotonic() - t0:.0f} s)")
        for note in run.notes:
            print(f"  {note}")
        sys.stdout.flush()
    keys = ["files", "duplicate", "objects", "applied", "not applicable", "edits", "false drift", "missed",
            "wrong direction", "unknown direction", "wrong writes", "error exits", "known limit", "files the tool refused",
            "errors where the tool failed too"]
    print("\n| way | " + " | ".join(keys) + " | time |")
    print("|---|" + "---|" * (len(keys) + 1))
    for mode, counts, took in rows:
        print(f"| {mode} | " + " | ".join(str(counts[k]) for k in keys) + f" | {took:.0f} s |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
