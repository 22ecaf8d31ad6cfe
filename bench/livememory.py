"""Memory per tracked object, in process: where the sidecar's bytes go at N objects.

The installation of bench/kubediff.py (4 ConfigMaps per Endpoints, 25 objects per file) in a
real git clone; its live objects as ``kubectl apply`` leaves them (bench/gen.py's
``live_object``: the last-applied annotation, the applier's managedFields entry), each encoded
to JSON and decoded again a page of 500 at a time, read by the watch's own list
(``KindWatcher``: one per kind, as with a Role that may list the kind) into the real
``LiveCache``; then the sidecar's real ``Loop`` runs two passes (a follower: detect, no commit).
Measured in a fresh interpreter per run: RSS (VmRSS) after the passes, and, with ``--trace``,
tracemalloc's live bytes grouped by syncer module (which part holds what).

    python -m bench.livememory [--n 5000] [--trace] [--top 25] [--code DIR] [--edits N]

This is the cheap, repeatable view; bench/sidecarprocess.py measures the process itself
against the real API server.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _vm(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


class _Pages:
    """An API server's paged LIST of the bench's ConfigMaps or Endpoints as ``kubectl apply``
    left them, each page made when asked and decoded from its JSON text (what the watch's list
    reads); nothing is held between pages."""

    PAGE = 500

    def __init__(self, kind: str, count: int) -> None:
        self.kind, self.count = kind, count

    def call(self, method: str, path: str, *, query: Any = (), what: str = "", **_: Any) -> dict[str, Any]:
        from bench.gen import live_object
        from bench.kubediff import _configmap, _endpoints
        from syncer.yamlread import parse_documents

        start = int(dict(query).get("continue") or 0)
        end = min(start + self.PAGE, self.count)
        items = []
        for i in range(start, end):
            text = _configmap("scale", i) if self.kind == "ConfigMap" else _endpoints("scale", i)
            live = live_object(parse_documents(text, path)[0], 1000 + i, drifted=False)
            del live["apiVersion"], live["kind"]  # a LIST's items carry neither
            items.append(live)
        rest = str(end) if end < self.count else ""
        text = json.dumps({"kind": "List", "metadata": {"resourceVersion": "999", "continue": rest}, "items": items})
        return json.loads(text)


def child(n: int, trace: bool, top: int, code: str | None = None, edits: int = 0) -> dict[str, Any]:
    import tracemalloc

    if code:  # another checkout's syncer (``--code``): this bench's own modules are imported already
        sys.path.insert(0, code)

    if trace:
        tracemalloc.start(1)
    from bench.common import git, git_env
    from bench.kubediff import write_installation
    from syncer.cache import Caches
    from syncer.gitrepo import Workspace
    from syncer.sidecar.kindwatch import Collection, KindWatcher
    from syncer.sidecar.livecache import LiveCache
    from syncer.sidecar.loop import Loop, LoopSettings
    from syncer.sidecar.metrics import Metrics
    from syncer.sidecar.schedule import Timing
    from syncer.sidecar.server import Health
    from syncer.model import ObjectRef
    from syncer.sources.manifests import parse_documents
    from syncer.writeback.deliver import Mode, load_installation

    with tempfile.TemporaryDirectory(prefix="syncer-livemem-") as tmp:
        root = Path(tmp)
        repo, bare = root / "work", root / "origin.git"
        env = git_env(root)
        counts = write_installation(repo, "scale", "scale", n)
        git(repo, "init", "-q", "-b", "main", env=env)
        git(repo, "add", ".", env=env)
        git(repo, "commit", "-q", "-m", "scale", env=env)
        git(root, "init", "-q", "--bare", "-b", "main", str(bare), env=env)
        git(repo, "push", "-q", str(bare), "HEAD:main", env=env)
        ws = Workspace.open_or_clone(str(bare), "main", root / "clone", installation="scale")
        files, n_cm, n_ep = counts
        declared = {"ConfigMap": [f"app-{i:05}" for i in range(n_cm)], "Endpoints": [f"backend-{i:05}" for i in range(n_ep)]}
        caches = Caches()  # one for the start-up load and the loop, as the sidecar has (sidecar/app.py)
        loaded = load_installation(ws.path, "scale", caches=caches)
        base_rss = _vm("VmRSS")
        cache = LiveCache("bench")
        if hasattr(cache, "declare"):  # what the watch cache may share of git's objects
            cache.declare(loaded.manifests.objects)
        del loaded
        t0 = time.perf_counter()
        for kind, names in declared.items():
            refs = [ObjectRef("v1", kind, "scale", name) for name in names]
            target = Collection("v1", kind, "scale", f"/api/v1/namespaces/scale/{kind.lower()}s")
            KindWatcher(_Pages(kind, len(names)), target, refs, cache)._listed()  # the watch's own list path
        del declared, refs
        filled = time.perf_counter() - t0
        store, fake = None, None
        if edits:  # the leader, committing, with its state record on a fake API server over loopback
            from syncer.kube import kube_client
            from syncer.sidecar.state import ConfigMapStore
            from tests.fakes.kube_api import FakeKubeAPI

            fake = FakeKubeAPI().start()
            api = kube_client(str(fake.kubeconfig(root / "kubeconfig", namespace="scale")), None,
                              read_yaml=parse_documents, pool_size=4)
            store = ConfigMapStore(api, "scale", "scale")
        mode = Mode.COMMIT if edits else Mode.DRY_RUN
        loop = Loop(LoopSettings("scale", mode, "scale", timing=Timing(debounce=0.0)), ws, cache,
                    metrics=Metrics("scale"), health=Health(cache, tick=5.0, resync=600.0),
                    is_leader=lambda: store is not None, caches=caches, store=store)
        t1 = time.perf_counter()
        for _ in range(2):
            report = loop.run_pass("bench")
            assert report.error is None, report.error
        passes = (time.perf_counter() - t1) / 2
        after_edits = []
        for k in range(edits):  # a live edit of one ConfigMap, then its pass (a commit)
            ref = ObjectRef("v1", "ConfigMap", "scale", f"app-{(7 + 97 * k) % counts[1]:05}")
            held = cache.get(ref)
            assert held is not None
            cache.put(ref, {**held, "data": {**held["data"], "LOG_LEVEL": f"debug-{k}"}})
            report = loop.run_pass("bench")
            assert report.error is None, report.error
            after_edits.append(round(_vm("VmRSS") / 1024, 1))
        if fake is not None:
            fake.stop()
        result = loop.last.outcome.result if loop.last and loop.last.outcome else None
        checked = len(result.checked) if result else -1
        drifts = len(result.drifts) if result else -1
        out: dict[str, Any] = {"n": n, "objects": len(cache.refs()), "rss_mib": _vm("VmRSS") / 1024,
                               "hwm_mib": _vm("VmHWM") / 1024, "rss_before_mib": base_rss / 1024,
                               "fill_s": filled, "pass_s": passes,
                               "checked": checked, "drifts": drifts, "after_edits": after_edits}
        if trace:
            snap = tracemalloc.take_snapshot()
            total = sum(s.size for s in snap.statistics("filename"))
            out["traced_mib"] = total / 2 ** 20
            groups: dict[str, int] = {}
            for s in snap.statistics("lineno"):
                frame = s.traceback[0]
                name = frame.filename
                cut = name.rfind("/syncer/")
                key = f"{name[cut + 1:]}:{frame.lineno}" if cut >= 0 else name.rsplit("/", 2)[-1]
                groups[key] = groups.get(key, 0) + s.size
            out["top"] = [(k, round(v / 2 ** 20, 2)) for k, v in sorted(groups.items(), key=lambda kv: -kv[1])[:top]]
        return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.livememory", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--trace", action="store_true", help="also tracemalloc's view (slower; RSS then includes it)")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--code", metavar="DIR", help="measure the syncer of another checkout (e.g. a `git worktree` of main)")
    ap.add_argument("--edits", type=int, default=0,
                    help="then run as the committing leader (state record on a fake API server) and edit live N times")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.n, args.trace, args.top, args.code, args.edits)))
        return 0
    cmd = [sys.executable, "-m", "bench.livememory", "--child", "--n", str(args.n), "--top", str(args.top)]
    cmd += ["--code", args.code] if args.code else []
    cmd += ["--edits", str(args.edits)]
    done = subprocess.run(cmd + (["--trace"] if args.trace else []), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
        return done.returncode
    out = json.loads(done.stdout.strip().splitlines()[-1])
    per = (out["rss_mib"] - out["rss_before_mib"]) * 1024 / max(out["objects"], 1)
    print(f"{out['objects']:,} objects: RSS {out['rss_mib']:.0f} MiB (VmHWM {out['hwm_mib']:.0f}; "
          f"{out['rss_before_mib']:.0f} before filling the cache: {per:.1f} KiB an object); "
          f"fill {out['fill_s']:.1f} s, a pass {out['pass_s']:.2f} s; {out['checked']:,} checked, "
          f"{out['drifts']} drifts")
    if out.get("after_edits"):
        print(f"RSS after each live edit and its commit: {out['after_edits']} MiB")
    if "traced_mib" in out:
        print(f"traced {out['traced_mib']:.1f} MiB; the largest allocation sites:")
        for where, mib in out["top"]:
            print(f"  {mib:8.2f} MiB  {where}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
