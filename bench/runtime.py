"""Sections 1-3: the sidecar (``syncer run``) against the fake API server, and a polling baseline.

Two worlds, each an in-process ``FakeKubeAPI`` (tests/fakes/kube_api/, bookmarks every
60 s like a real API server) holding a generated 10-object installation, and a bare git
repository holding its manifests:

* world A is watched by ``syncer run --mode commit --debounce 0`` (ConfigMaps tracked as
  ``writeback``: no stability dwell), a subprocess;
* world B is polled every 10 s by ``python -m bench.poller`` (syncer's one-shot engine:
  fresh ``KubeSource``, get every object, diff, ``sync_commit``), also a subprocess.

Timeline: start both -> **latency** rounds (k live edits in A, each timed from the API write
to the commit landing in A's bare repo; then one edit in B, timed the same way: interleaved)
-> **idle** window (nothing changes; /proc CPU and RSS of both processes, requests each
fake served) -> **load** (10 ConfigMap edits/s in A) -> SIGTERM.

A "live change" is a merge patch of a ConfigMap's ``data`` by manager ``kubectl-edit``,
exactly what ``kubectl edit`` sends.  The bench never writes to git itself.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import Row, Section, median, mib, percentile, proc_sample, read_ref, secs, spread
from bench.world import (KEYS, N_OBJECTS, POLL_N, Window, classify_requests, commit_sizes, http_get,
                         live_values_in_git, make_world, metric_total, sidecar_available, start_procs, stop_procs,
                         stuck_passes, watch_process)


# ---------------------------------------------------------------- the run


def run(quick: bool, workdir: Path, parts: set[str], on_idle: Callable[[], None] = lambda: None) -> list[Section]:
    lat = Section("latency", "1. Detection latency (live edit -> commit pushed)")
    foot = Section("footprint", "2. Footprint of `syncer run` (10 objects watched)")
    api = Section("api", "3. API load (requests to the API server)")
    missing = sidecar_available()
    if missing:
        for sec in (lat, foot, api):
            sec.row(sec.title, f"not measured: sidecar missing ({missing})")
        on_idle()
        return [s for s in (lat, foot, api) if s.key in parts]

    n_changes, rounds = (10, 2) if quick else (54, 6)
    idle_s, load_s, rate = (60.0, 15.0, 10.0) if quick else (600.0, 60.0, 10.0)
    want_latency = "latency" in parts
    root = workdir / "runtime"
    a = make_world(root / "a")
    b = make_world(root / "b") if want_latency or "footprint" in parts or "api" in parts else None
    procs = start_procs(a, b, root)
    ready_mark = time.time()
    startup_reqs = a.requests_between(0, ready_mark)
    try:
        # ---------------------------------------------------------------- 1. latency, interleaved
        side_lat: list[float] = []
        base_lat: list[float] = []
        per_round: list[tuple[float, float]] = []
        lat_t0 = time.time()
        if want_latency:
            rng = random.Random(3)
            head_a, head_b = read_ref(a.bare), read_ref(b.bare) if b else None
            k = n_changes // rounds
            pairs = [(cm, key) for key in KEYS for cm in range(len(b.configmaps))] if b else []
            for r in range(rounds):
                mine = []
                for i in range(k):
                    j = r * k + i
                    t0 = a.edit(j, {"LOG_LEVEL": f"debug-{j}"})
                    sha, t1 = a.wait_commit(head_a, 30.0)
                    if sha is None:
                        raise RuntimeError(f"sidecar: no commit 30 s after live change {j}; see {procs.side_log}")
                    head_a = sha
                    mine.append(t1 - t0)
                    time.sleep(rng.uniform(0.3, 0.8))  # let the pass record the agreed state, then idle
                side_lat += mine
                if b is not None:
                    # A random phase against the poller's period: without it the round length
                    # (about 10 s) would lock onto the poll period and bias the measurement.
                    time.sleep(rng.uniform(0.0, POLL_N))
                    cm, key = pairs[r % len(pairs)] if r < len(pairs) else (r % 3, f"BENCH_{r}")
                    t0 = b.edit(cm, {key: f"{key.lower()}-changed-{r}"})
                    sha, t1 = b.wait_commit(head_b, POLL_N + 60.0)
                    if sha is None:
                        raise RuntimeError(f"poller: no commit after change {r}; see {procs.poll_log}")
                    head_b = sha
                    base_lat.append(t1 - t0)
                    per_round.append((t1 - t0, median(mine)))
        lat_t1 = time.time()

        # ---------------------------------------------------------------- 2+3. idle window
        on_idle()
        idle_t0 = time.time()
        pw = None
        if procs.poller is not None:
            p_start = proc_sample(procs.poller.pid)
        sw = watch_process(procs.sidecar.pid, idle_s)
        if procs.poller is not None:
            p_end = proc_sample(procs.poller.pid)
            pw = Window(p_start, p_end, p_end.rss_kib)
        idle_t1 = time.time()
        idle_reqs = a.requests_between(idle_t0, idle_t1)
        base_idle_reqs = b.requests_between(idle_t0, idle_t1) if b else []
        hwm_idle = proc_sample(procs.sidecar.pid).hwm_kib
        metrics_idle = http_get(f"http://127.0.0.1:{procs.port}/metrics")[1]

        # ---------------------------------------------------------------- 2. under load
        commits_before = len(commit_sizes(a))
        passes_before = metric_total(metrics_idle, "syncer_passes_total")
        made = [0]
        t_load0 = time.monotonic()
        load_t0 = time.time()

        def change(elapsed: float) -> None:
            target = int(elapsed * rate)
            while made[0] <= target and made[0] < int(load_s * rate):
                a.edit(made[0], {"LOG_LEVEL": f"load-{made[0]}"})
                made[0] += 1
            time.sleep(max(0.0, (made[0] / rate) - (time.monotonic() - t_load0)))

        lw = watch_process(procs.sidecar.pid, load_s, during=change)
        load_t1 = time.time()
        last_change = time.perf_counter()
        head, t_last = read_ref(a.bare), None
        for _ in range(24):  # settle: commits keep coming until the last value is in git (2 min at most)
            sha, t = a.wait_commit(head, 5.0)
            if sha is None:
                break
            head, t_last = sha, t
        settled = t_last - last_change if t_last is not None else 0.0
        load_reqs = a.requests_between(load_t0, load_t1)
        metrics_end = http_get(f"http://127.0.0.1:{procs.port}/metrics")[1]
        passes_load = metric_total(metrics_end, "syncer_passes_total") - passes_before
        commits = commit_sizes(a)
        load_commits = len(commits) - commits_before
        hwm_end = proc_sample(procs.sidecar.pid).hwm_kib
        in_git = live_values_in_git(a)
    finally:
        shutdown = stop_procs(procs)
        a.fake.stop()
        if b is not None:
            b.fake.stop()

    errors = [ln for ln in procs.side_log.read_text().splitlines() if '"level": "error"' in ln.lower()
              or '"level":"error"' in ln.lower()]
    polls = procs.polls()
    idle_polls = [p for p in polls if p["commit"] is None and p["error"] is None]
    commit_polls = [p for p in polls if p["commit"]]
    pass_wall = median([p["wall"] for p in commit_polls]) if commit_polls else float("nan")
    idle_pass_wall = median([p["wall"] for p in idle_polls]) if idle_polls else float("nan")

    # ---------------------------------------------------------------- report: latency
    if want_latency:
        p50, p95 = percentile(side_lat, 50), percentile(side_lat, 95)
        one_line = commits[:len(side_lat)]
        lat.row(f"sidecar p50 / p95 over {len(side_lat)} changes", f"{secs(p50)} / {secs(p95)}", "p50 ≤ 1 s",
                p50 <= 1.0, f"polling N=10 s, measured: {spread(base_lat, '{:.1f}')} s over {len(base_lat)} changes",
                note=f"min {secs(min(side_lat))}, max {secs(max(side_lat))}")
        lat.row("commits for those changes", f"{len(one_line)} commits, "
                f"{'all' if all(c == 2 for c in one_line) else 'NOT all'} one-line (1 removed + 1 added)")
        lat.row("polling N=10 s: expected (N/2 + pass)", f"{POLL_N / 2 + pass_wall:.1f} s",
                baseline=f"pass with a commit {secs(pass_wall)}, without {secs(idle_pass_wall)}")
        lat.row("polling N=60 s: expected (N/2 + pass)", f"{60 / 2 + pass_wall:.1f} s",
                note="computed from the pass time measured at N=10 s, not run")
        ratios = [b_ / s_ for b_, s_ in per_round]
        lat.headline.append(Row("latency: polling N=10 s / sidecar (median per round)", spread(ratios, "{:.1f}x"),
                                note=f"{len(ratios)} interleaved rounds of {n_changes // rounds} sidecar changes + "
                                     "1 polled change"))
        lat.notes.append(
            f"{len(side_lat)} live edits (merge patch of `data.LOG_LEVEL`, manager kubectl-edit, as `kubectl edit` "
            "sends) timed from the API write to the new commit in the bare repo (read from the ref file every 2 ms); "
            "the sidecar runs `--mode commit --debounce 0`, ConfigMap tracked as writeback (no dwell), state in "
            "ConfigMap syncer-state (its record of the last agreement is what makes the second edit of a value "
            "count as 'cluster moved'). Polled world: a different ConfigMap key per change, since a one-shot run's "
            "only base is last-applied; each polled edit comes after a random 0-10 s wait, so its phase against the "
            "poll period is uniform. Between sidecar edits the bench waits 0.3-0.8 s."
        )
        lat.data = {"sidecar": side_lat, "polling": base_lat, "pass_wall": pass_wall, "idle_pass_wall": idle_pass_wall,
                    "rounds": per_round}

    # ---------------------------------------------------------------- report: footprint
    foot.row("start-up: process start -> /readyz 200", f"{procs.ready_after:.2f} s")
    foot.row(f"idle {idle_s:.0f} s: CPU", f"{sw.cpu_pct:.3f} % of a core (+ git children {sw.child_pct:.3f} %)",
             "< 0.5 %", sw.cpu_pct + sw.child_pct < 0.5,
             f"poller N=10 s: {pw.cpu_pct:.2f} % (+ git {pw.child_pct:.2f} %)" if pw else "")
    foot.row(f"idle {idle_s:.0f} s: RSS", f"{mib(sw.rss_max)} (VmHWM {mib(hwm_idle)})", "≤ 64 MiB",
             hwm_idle <= 64 * 1024, f"poller: {mib(pw.end.rss_kib)} (VmHWM {mib(pw.end.hwm_kib)})" if pw else "")
    foot.row(f"{rate:.0f} changes/s for {load_s:.0f} s: CPU",
             f"{lw.cpu_pct:.1f} % of a core (+ git children {lw.child_pct:.1f} %)",
             note=f"{made[0]} edits -> {load_commits} commits, {passes_load:.0f} passes")
    foot.row(f"{rate:.0f} changes/s: RSS", f"{mib(lw.rss_max)} (VmHWM {mib(hwm_end)})", "≤ 64 MiB",
             hwm_end <= 64 * 1024)
    stuck = stuck_passes(procs.side_log, load_t0, load_t1 + 130)
    foot.row("after the burst: every ConfigMap's last live value in git", "yes" if in_git else "NO",
             note=(f"last commit {secs(settled)} after the last edit" if in_git else
                   f"{stuck} pass(es) during/after the burst found drift and wrote nothing"))
    foot.row("shutdown on SIGTERM", secs(shutdown), "≤ 10 s", shutdown <= 10.0)
    if errors:
        foot.notes.append(f"{len(errors)} error log line(s) from the sidecar, e.g. {errors[0][:300]}")
    if pw and sw.cpu_pct + sw.child_pct > 0:
        foot.headline.append(Row("idle CPU: polling N=10 s / sidecar",
                                 f"{(pw.cpu_pct + pw.child_pct) / (sw.cpu_pct + sw.child_pct):.0f}x",
                                 note="process + git children, same window"))
    foot.notes.append(
        "CPU is utime+stime from /proc/PID/stat over the window (git subprocesses counted separately from "
        "cutime+cstime once reaped); RSS is VmRSS sampled every second and VmHWM (peak since start) from "
        f"/proc/PID/status. The fake API server sends a BOOKMARK every 60 s on each watch. The idle window "
        f"covers {idle_s:.0f} s with nothing changing"
        + (" (the sidecar's 10-min resync pass falls inside it)." if idle_s >= 600 else "; no resync pass falls in it.")
    )
    foot.data = {"idle_cpu_pct": sw.cpu_pct, "idle_child_pct": sw.child_pct, "idle_rss": sw.rss_max,
                 "hwm_idle": hwm_idle, "load_cpu_pct": lw.cpu_pct, "load_child_pct": lw.child_pct,
                 "hwm_end": hwm_end, "ready": procs.ready_after, "shutdown": shutdown}

    # ---------------------------------------------------------------- report: API load
    per_hour = len(idle_reqs) * 3600.0 / idle_s
    api.row(f"sidecar, idle: requests in {idle_s:.0f} s window", f"{len(idle_reqs)} ({classify_requests(idle_reqs)})",
            note=f"x {3600 / idle_s:g} = {per_hour:.0f}/hour")
    api.row("sidecar, idle: requests per hour (extrapolated)", f"{per_hour:.0f}", "≤ 30", per_hour <= 30)
    api.row("sidecar, by design: watch renewals per hour",
            f"{N_OBJECTS} (one watch per object, timeoutSeconds=3600)",
            note="a window shorter than an hour cannot see them; add them to the line above")
    api.row("sidecar start-up requests", f"{len(startup_reqs)} ({classify_requests(startup_reqs)})")
    if want_latency and side_lat:
        lat_reqs = a.requests_between(lat_t0, lat_t1)
        api.row("sidecar per live change (besides the watch event)",
                f"{len(lat_reqs) / len(side_lat):.1f} ({classify_requests(lat_reqs)})")
    api.row(f"sidecar under {rate:.0f} changes/s", f"{len(load_reqs)} in {load_s:.0f} s ({classify_requests(load_reqs)})")
    if b is not None:
        n_polls = max(1, len([p for p in polls if idle_t0 <= p["t"] < idle_t1]))
        per_poll = len(base_idle_reqs) / n_polls
        api.row("polling baseline: requests per poll (measured)", f"{per_poll:.1f} ({classify_requests(base_idle_reqs)})",
                note=f"{n_polls} polls in the idle window")
        for n in (10, 60):
            api.row(f"polling N={n} s: per hour", f"{per_poll * 3600 / n:.0f} measured way",
                    baseline=f"{N_OBJECTS} objects x 3600/N gets = {N_OBJECTS * 3600 // n}; "
                             f"1 list per kind (4 kinds) = {4 * 3600 // n}")
        side_h = max(per_hour, float(N_OBJECTS))
        api.headline.append(Row("API requests/hour: polling N=10 s / sidecar", f"{per_poll * 360 / side_h:.0f}x",
                                note=f"sidecar counted as max(measured, {N_OBJECTS} watch renewals)"))
        api.headline.append(Row("API requests/hour: polling N=60 s / sidecar", f"{per_poll * 60 / side_h:.0f}x"))
    api.notes.append(
        f"Requests counted from the fake API server's request log by arrival time. Idle window {idle_s:.0f} s, "
        "extrapolated to an hour. The sidecar holds one watch per object (list + watch with fieldSelector "
        "metadata.name, so a resourceNames-limited Role suffices); a watch is one request however long it stays "
        "open, so in a quiet hour each object costs one watch renewal."
    )
    api.data = {"idle_requests": len(idle_reqs), "idle_seconds": idle_s, "per_hour": per_hour,
                "startup_requests": len(startup_reqs), "load_requests": len(load_reqs)}
    return [s for s in (lat, foot, api) if s.key in parts]
