"""Keys added live at scale (issue #17): ``python -m bench.hostile [N ...]``.

For each N: N keys added live to asgard's ConfigMap; times ``detect``, ``plan_changes`` (the
file edit) and ``pr_body`` + ``commit_message``. Before #17 the edit was quadratic (2,000 keys
5.5 s, 8,000 keys 127 s).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from ruamel.yaml import YAML

from syncer.gather.collect import detect_live
from syncer.gather.live import SnapshotSource
from syncer.writeback.report import commit_message, pr_body
from syncer.writeback.deliver import load_installation
from syncer.writeback.plan import plan_changes

ROOT = Path(__file__).resolve().parents[1]
NOW = datetime(2026, 9, 1, 12, 0, tzinfo=timezone.utc)


def run(n: int, tmp: Path) -> dict[str, float]:
    repo = tmp / f"repo-{n}"
    shutil.copytree(ROOT / "hosts", repo / "hosts")
    items = YAML(typ="safe").load((ROOT / "examples" / "asgard-live.yaml").read_text())["items"]
    cm = next(o for o in items if o["kind"] == "ConfigMap")
    cm["data"].update({f"ADDED_{i}": f"value {i}" for i in range(n)})
    live = tmp / f"live-{n}.json"
    live.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    loaded = load_installation(repo, "asgard")
    source = SnapshotSource([live], "ai")
    t0 = time.perf_counter()
    result = detect_live(loaded.config, loaded.manifests, source, NOW)
    t1 = time.perf_counter()
    written = list(result.writable())
    plan_changes(repo, "asgard", written, loaded.manifests.objects)
    t2 = time.perf_counter()
    pr_body(result, written, "syncer diff asgard")
    commit_message("asgard", written)
    t3 = time.perf_counter()
    return {"detect": t1 - t0, "edit": t2 - t1, "pr+commit text": t3 - t2}


def main(argv: list[str]) -> None:
    sizes = [int(a) for a in argv] or [2_000, 10_000]
    with tempfile.TemporaryDirectory() as tmp:
        print("| added keys | detect s | file edit s | PR body + commit message s |")
        print("|---|---|---|---|")
        for n in sizes:
            r = run(n, Path(tmp))
            print(f"| {n:,} | {r['detect']:.2f} | {r['edit']:.2f} | {r['pr+commit text']:.2f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
