"""CPU time of the secret judgement (``compared.judge_secrets``) inside each sidecar pass at 5,000
objects: the share of the pass that secret detection costs, measured in thread CPU time so a
loaded machine (where the wall-clock pass of ``bench.sidecarpass`` is noise) still gives it.

    python -m bench.secretpass [--rounds 8]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.secretpass")
    ap.add_argument("--rounds", type=int, default=8)
    rounds = ap.parse_args(argv).rounds
    from bench import sidecarpass
    from syncer.detect import compared as engine  # where the judgement is called from
    from syncer.sidecar.loop import Loop

    judging = [0.0]
    passes: list[tuple[float, float]] = []
    real_judge, real_pass = engine.judge_secrets, Loop.run_pass

    def timed_judge(*a: Any, **kw: Any) -> Any:
        t0 = time.thread_time()
        try:
            return real_judge(*a, **kw)
        finally:
            judging[0] += time.thread_time() - t0

    def timed_pass(self: Loop, *a: Any, **kw: Any) -> Any:
        judging[0] = 0.0
        t0 = time.thread_time()
        out = real_pass(self, *a, **kw)
        passes.append((time.thread_time() - t0, judging[0]))
        return out

    engine.judge_secrets = timed_judge  # type: ignore[assignment]
    Loop.run_pass = timed_pass  # type: ignore[method-assign]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            sidecarpass.measure(5000, rounds, Path(tmp))
    finally:
        engine.judge_secrets, Loop.run_pass = real_judge, real_pass  # type: ignore[method-assign]
    changed = passes[1::2]  # after the first: a pass after a change, then one without
    print(f"first pass: {passes[0][0] * 1000:.1f} ms CPU, judging secrets {passes[0][1] * 1000:.2f} ms")
    print(f"pass after one live change ({len(changed)}): {statistics.median(p for p, _ in changed) * 1000:.1f} ms CPU "
          f"(median), judging secrets {statistics.median(j for _, j in changed) * 1000:.3f} ms "
          f"(max {max(j for _, j in changed) * 1000:.3f})")


if __name__ == "__main__":
    main()
