"""Hostile kustomize inputs (issue #33): the whole ``syncer diff`` process on each, timed, with its
peak RSS and that of the largest child (kustomize) -- the chart's memory limit is 128 MiB for
the pod, so both count.

1. a diamond of bases: 30 kustomizations, each listing the next level twice;
2. an alias bomb inside ``kustomization.yaml`` (11 levels of 8 aliases each: 10 * 8^11 nodes expanded);
3. a 100 MB file a ``configMapGenerator`` reads;
4. generator sources past the input budget together (64 files of 300 KiB, ~19 MiB);
5. a render past the output limit: kustomize's output capped at 1 MiB here (SYNCER_BENCH_MAX_OUTPUT),
   one 3 MiB resource file of ConfigMaps.

    python -m bench.kustomizebombs
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = """
import io, json, os, resource, sys
from syncer.cli import main
from syncer.sources.kustomize import render
if os.environ.get("SYNCER_BENCH_MAX_OUTPUT"):
    render.MAX_OUTPUT_BYTES = int(os.environ["SYNCER_BENCH_MAX_OUTPUT"])
err = io.StringIO()
code = main(sys.argv[1:], stdout=io.StringIO(), stderr=err)
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"code": code, "error": err.getvalue().strip(), "rss_mib": me.ru_maxrss / 1024,
                  "child_rss_mib": kids.ru_maxrss / 1024}))
"""
LIVE = '{"apiVersion": "v1", "kind": "List", "items": []}'


def _write(host: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = host / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def bombs(root: Path) -> dict[str, Path]:
    out = {}
    host = root / "diamond" / "hosts" / "x"
    files = {f"l{i}/kustomization.yaml": f"resources:\n  - ../l{i + 1}\n  - ../l{i + 1}\n" for i in range(30)}
    files.update({"l30/kustomization.yaml": "resources: [cm.yaml]\n",
                  "l30/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
                  "kustomization.yaml": "resources: [l0]\n"})
    _write(host, files)
    out["diamond of bases (30 levels, each listing the next twice)"] = host
    host = root / "aliases" / "hosts" / "x"
    levels = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 8)}]\n" for i in range(1, 12))
    _write(host, {"kustomization.yaml": "resources: [cm.yaml]\n" + levels,
                  "cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"})
    out["alias bomb in kustomization.yaml (10 * 8^11 nodes)"] = host
    host = root / "bigfile" / "hosts" / "x"
    _write(host, {"kustomization.yaml": "configMapGenerator:\n  - name: big\n    files: [big.txt]\n"})
    with open(host / "big.txt", "wb") as fh:
        chunk = b"x" * 1023 + b"\n"
        for _ in range(100 * 1024):
            fh.write(chunk)
    out["100 MB configMapGenerator file"] = host
    host = root / "render" / "hosts" / "x"
    value = "y" * (300 * 1024)
    _write(host, {"kustomization.yaml": "configMapGenerator:\n" + "".join(
        f"  - name: c{i}\n    files: [v{i}.txt]\n" for i in range(64)), **{f"v{i}.txt": value for i in range(64)}})
    out["generator sources past the 8 MiB input budget (64 x 300 KiB)"] = host
    host = root / "output" / "hosts" / "x"
    cms = "".join(f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\ndata: {{v: {'z' * 1000}}}\n"
                  for i in range(3000))
    _write(host, {"kustomization.yaml": "resources: [cms.yaml]\n", "cms.yaml": cms})
    out["render past the output limit (1 MiB here; 3 MiB of ConfigMaps)"] = host
    return out


def measure(host: Path) -> dict[str, object]:
    repo = host.parent.parent
    (host / "syncer.conf").write_text("installation: x\nnamespace: default\ntrack:\n  ConfigMap: report\n")
    live = repo / "live.json"
    live.write_text(LIVE)
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-c", CHILD, "diff", "x", "--repo", str(repo), "--live-file", str(live)],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, **({"SYNCER_BENCH_MAX_OUTPUT": str(1024 * 1024)} if "output" in str(host) else {})})
    took = time.monotonic() - t0
    result = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else {"error": done.stderr[-300:]}
    result["seconds"] = round(took, 2)
    return result


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="kustomizebombs-") as tmp:
        print("| input | exit | seconds | syncer peak RSS | kustomize peak RSS | message |")
        print("|---|---|---|---|---|---|")
        for name, host in bombs(Path(tmp)).items():
            r = measure(host)
            print(f"| {name} | {r.get('code')} | {r['seconds']} | {r.get('rss_mib', 0):.0f} MiB | "
                  f"{r.get('child_rss_mib', 0):.0f} MiB | {str(r.get('error'))[:160]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
