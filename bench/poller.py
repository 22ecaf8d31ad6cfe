"""The polling baseline: what a kubediff-style loop does, built from syncer's own one-shot engine.

Every ``--interval`` seconds: a fresh ``KubeSource`` (so API discovery is redone, as a
one-shot ``syncer sync`` run from cron would), read every declared object by name, diff,
and commit + push what moved (``sync_commit`` in a reused clone).  One JSON line per poll
on stdout: when it started, wall and CPU seconds it took, the commit it pushed (or null).

Run as its own process by the bench so its memory and CPU are measured from /proc exactly
like the sidecar's:

    python -m bench.poller --kubeconfig KC --remote BARE --clone-dir DIR --interval 10 bench
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from datetime import datetime, timezone
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.poller")
    ap.add_argument("installation")
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--remote", required=True)
    ap.add_argument("--clone-dir", required=True)
    ap.add_argument("--interval", type=float, default=10.0)
    args = ap.parse_args(argv)

    from syncer.cache import Caches
    from syncer.errors import SyncerError
    from syncer.gitrepo import Workspace
    from syncer.gather.live import KubeSource, kube_api_client
    from syncer.writeback.deliver import sync_commit

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    api = kube_api_client(args.kubeconfig, None)
    due = time.monotonic()
    caches = Caches()  # one process polling: what it remembers lasts across polls
    while True:
        started, w0, c0 = time.time(), time.perf_counter(), time.process_time()
        commit, error = None, None
        try:
            ws = Workspace.open_or_clone(args.remote, "main", Path(args.clone_dir))
            out = sync_commit(ws, args.installation, KubeSource(api), datetime.now(timezone.utc), caches=caches)
            commit = out.commit
        except SyncerError as exc:
            error = exc.message
        print(json.dumps({"t": started, "wall": time.perf_counter() - w0, "cpu": time.process_time() - c0,
                          "commit": commit, "error": error}), flush=True)
        due += args.interval
        time.sleep(max(0.0, due - time.monotonic()))


if __name__ == "__main__":
    raise SystemExit(main())
