"""The fault-injected soak of ``syncer run``: schedule, faults, invariants, figures.

``run_soak`` drives the world of ``tests/soak/world.py``. ``tests/soak/test_soak.py`` runs it
in its short CI mode (``CI_SECONDS``); ``python -m bench.soak`` runs it long and appends the
figures to ``bench/RESULTS-soak.md`` (bench imports this, never the other way round).

Two replicas of ``syncer run --leader-elect --mode pr`` (real subprocesses) watch a fake
Kubernetes API and keep one pull request on a fake GitHub whose branches live in a real bare
repository, which is also their ``--remote`` (over smart HTTP, with a git token). For the
given seconds a seeded random schedule mixes

* what people do: live edits in bursts (ConfigMap keys patched as ``kubectl-edit``, every value
  new), Secret edits, commits to ``main`` (unrelated files, and values under ``hosts/asgard/``
  that nobody edits live), one push onto syncer's branch, merging the open PR;
* what the endpoint manager does: Endpoints cleared and restored (the same address);
* what goes wrong: watch drops, 410 Gone, API 500/503/403, API hangs, forge 500/502/429 (with
  and without Retry-After), forge hangs, SIGTERM of a replica (also in the middle of a pass)
  and its restart;

and, a few times, a *flap-only window*: once everything has settled, only Endpoints flap, and
syncer must write nothing at all. At the end the faults stop, the world settles, the last PR
is merged, and the invariants are checked (see ``Soak.check``).
"""

from __future__ import annotations

import itertools
import json
import random
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.soak.world import (
    BRANCH, CHANGELOG, CM_FILE, EP_FILE, SECRET_FILE, SYNCER_EMAIL, ZERO, Replica, Settings, Tally, World,
)

WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})

#: ConfigMap keys edited live. INTERVAL_SECONDS exists in git (quoted number); LIVE_A and
#: LIVE_B are added live, LIVE_B with float-looking values that must stay strings in git.
LIVE_KEYS = ("INTERVAL_SECONDS", "LIVE_A", "LIVE_B")
#: Where the Endpoints point when not cleared. mac-ollama moves once, at the start, to its
#: second declared candidate (a pick, written after stableFor); m1-ollama keeps git's value.
PICKS = {"mac-ollama": "100.115.97.90", "m1-ollama": "100.127.6.20"}
CI_SECONDS = 150
BRANCH_COMMITS = "human commits to syncer's branch"


def _live_value(key: str, n: int) -> str:
    return {"INTERVAL_SECONDS": str(100 + n), "LIVE_A": f"probe-{n}", "LIVE_B": f"1.{n}"}[key]


@dataclass
class Window:
    """A flap-only window: after settling, nothing happens but Endpoints flapping."""

    index: int
    settled: bool
    settle_seconds: float
    seconds: float = 0.0
    flaps: int = 0
    forge_writes: list[str] = field(default_factory=list)
    ref_updates: list[str] = field(default_factory=list)


@dataclass
class Figure:
    name: str
    value: str
    must: str = ""  # the requirement, when there is one
    ok: bool | None = None


@dataclass
class Report:
    seconds: float
    seed: int
    ci: bool
    figures: list[Figure]
    failures: list[str]
    wall: float
    workdir: Path
    details: dict[str, Any]

    def table(self) -> str:
        lines = ["| figure | value | must be | |", "|---|---|---|---|"]
        for f in self.figures:
            mark = "" if f.ok is None else ("ok" if f.ok else "**FAIL**")
            lines.append(f"| {f.name} | {f.value} | {f.must} | {mark} |")
        return "\n".join(lines)


class Soak:
    def __init__(self, world: World, rng: random.Random, seconds: float, *, ci: bool,
                 say: Callable[[str], None] = print) -> None:
        self.w, self.rng, self.seconds, self.ci, self.say = world, rng, seconds, ci, say
        s = world.settings
        self.debounce, self.resync, self.stable = s.seconds("debounce"), s.seconds("resync"), s.seconds("stable_for")
        self.faults = Tally()
        self.people = Tally()
        # The truth: what git must end up holding.
        self.live: dict[str, str] = {}  # key -> last live value
        self.git_keys: dict[str, str] = {}  # keys people changed in git -> their value
        self.changelog: list[str] = []
        self.human_commits: list[tuple[str, str]] = []  # (sha, what)
        self.branch_comment: str | None = None
        self.secret_values: list[str] = []
        self.eps = dict(PICKS)
        self.eps["mac-ollama"] = "192.168.68.58"  # as git and the cluster start
        self.edits = 0
        self.windows: list[Window] = []
        self.merges = Tally()
        self.takeover: dict[str, Any] = {}
        self.timeline: list[tuple[float, str]] = []
        self.t0 = time.monotonic()
        base = world.configmap_data("main")
        self.cm_original = dict(base)

    # -- helpers ----------------------------------------------------------------------

    def note(self, what: str) -> None:
        self.timeline.append((round(time.monotonic() - self.t0, 2), what))

    def sleep(self, lo: float, hi: float) -> None:
        time.sleep(self.rng.uniform(lo, hi))

    def expected_cm(self) -> dict[str, str]:
        return {**self.cm_original, **self.git_keys, **self.live}

    def recently_started(self, seconds: float) -> bool:
        return any(time.monotonic() - r.started_at < seconds for r in self.w.replicas.values())

    def replica_of(self, holder: str) -> Replica | None:
        return next((r for r in self.w.replicas.values() if r.holder == holder and r.alive()), None)

    # -- what people and the manager do ----------------------------------------------------

    def live_burst(self) -> None:
        for _ in range(self.rng.randint(1, 4)):
            key = self.rng.choice(LIVE_KEYS)
            self.edits += 1
            value = _live_value(key, self.edits)
            self.w.patch_configmap({key: value})
            self.live[key] = value
            self.sleep(0.0, 0.4)
        self.people.add("live edit bursts")

    def flap(self, name: str | None = None) -> None:
        name = name or self.rng.choice(sorted(self.eps))
        self.w.set_endpoints(name, None)
        self.sleep(0.1, 2.0)
        self.w.set_endpoints(name, self.eps[name])
        self.people.add("endpoints flaps")

    def secret_edit(self) -> None:
        plain = f"live-secret-{len(self.secret_values)}-{self.rng.randrange(10**9)}"
        self.w.patch_secret("API_KEY", plain)
        self.secret_values.append(plain)
        self.people.add("secret edits (live)")

    def human_unrelated(self) -> None:
        line = f"- entry {len(self.changelog) + 1}: an unrelated change by a person"

        def edit(repo: Path) -> None:
            with open(repo / CHANGELOG, "a") as f:
                f.write(line + "\n")

        sha = self.w.human_commit(edit, f"docs: changelog entry {len(self.changelog) + 1}")
        self.changelog.append(line)
        self.human_commits.append((sha, "changelog"))
        self.people.add("human commits to main (unrelated)")

    def human_hosts(self) -> None:
        n = len([c for c in self.human_commits if c[1].startswith("hosts")]) + 1
        if self.rng.random() < 0.5:
            key, value = "PORT", str(20000 + n)

            def edit(repo: Path) -> None:
                path = repo / CM_FILE
                text, count = _sub_line(path.read_text(), "PORT", f'  PORT: "{value}"')
                assert count == 1, "PORT line not found"
                path.write_text(text)
        else:
            key, value = f"GIT_NOTE_{n}", f"note {n} from ops"

            def edit(repo: Path) -> None:
                path = repo / CM_FILE
                text = path.read_text()
                assert "\ndata:\n" in text
                path.write_text(text.replace("\ndata:\n", f'\ndata:\n  {key}: "{value}"\n', 1))

        sha = self.w.human_commit(edit, f"asgard: set {key} by hand")
        self.git_keys[key] = value
        self.human_commits.append((sha, f"hosts {key}={value}"))
        self.people.add("human commits to hosts/asgard/")

    def merge(self, merge_commit: bool = False) -> str:
        how = self.w.merge_open_pr(merge_commit=merge_commit)
        self.merges.add(how)
        self.note(f"merge: {how}")
        return how

    def human_takeover(self) -> None:
        """Someone pushes onto syncer's branch; syncer must leave it alone and say so; the
        reviewer then merges that PR and syncer carries on."""
        if not self.w.open_prs() or self.w.read_ref(BRANCH) is None:
            return
        comment = f"# Reviewed on the branch by ops (soak seed {self.rng.randrange(1000)})."

        def edit(repo: Path) -> None:
            path = repo / EP_FILE
            path.write_text(comment + "\n" + path.read_text())

        sha = self.w.human_branch_commit(edit, "review: note on the syncer branch")
        if sha is None:
            return
        self.takeover = {"sha": sha, "at": round(time.monotonic() - self.t0, 1)}
        self.branch_comment = comment
        self.human_commits.append((sha, "branch comment"))
        self.people.add(BRANCH_COMMITS)
        self.note("human pushed to the syncer branch")
        marker = "<!-- syncer:human-pushed -->"
        deadline = time.monotonic() + 60
        said = False
        while time.monotonic() < deadline and not said:
            with self.w.forge._lock:
                said = any(marker in c["body"] for p in self.w.forge.prs for c in p.comments)
            time.sleep(0.5)
        self.takeover["syncer said so"] = said
        head_after = self.w.read_ref(BRANCH)
        self.takeover["branch kept"] = head_after is not None and self.w.is_ancestor(sha, head_after)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            how = self.merge(merge_commit=True)
            if how in ("fast-forward", "merge-commit", "already-in-main"):
                self.takeover["merged"] = how
                break
            time.sleep(1.0)

    # -- faults -------------------------------------------------------------------------

    def api_fault(self, kind: str) -> None:
        k = self.w.kube
        if kind == "watch drop":
            k.drop_watches()
        elif kind == "410 Gone (expire_watches)":
            k.expire_watches()
        elif kind == "API 500/503":
            k.fail_next(self.rng.choice([500, 503]), count=self.rng.randint(1, 3))
        elif kind == "API 403":
            if self.recently_started(12.0):  # a 403 during start-up is, rightly, a start-up error
                return
            k.fail_next(403, count=1)
        elif kind == "API hang":
            k.hang_next(self.rng.uniform(2.0, 8.0), count=1)
        self.faults.add(kind)

    def forge_fault(self, kind: str) -> None:
        f = self.w.forge
        if kind == "forge 500/502":
            f.fail_next(self.rng.choice([500, 502]), count=self.rng.randint(1, 3))
        elif kind == "forge 429 with Retry-After":
            f.fail_next(429, count=1, retry_after=self.rng.randint(1, 3))
        elif kind == "forge 429 without Retry-After":
            f.fail_next(429, count=1)
        elif kind == "forge hang":
            f.hang_next(self.rng.uniform(3.0, 12.0))
        self.faults.add(kind)

    def restart(self, mid_pass: bool) -> None:
        target: Replica | None
        if mid_pass:
            target = self.replica_of(self.w.leader())
            if target is None:
                return
            # Make the leader's next pass slow at the forge, give it a change, and stop it
            # while that pass is running.
            self.w.forge.hang_next(8.0)
            self.live_burst()
            time.sleep(self.debounce + self.rng.uniform(0.8, 2.0))
        else:
            target = self.rng.choice(sorted(self.w.replicas.values(), key=lambda r: r.name))
        with target.lock:
            if not target.alive():
                return
            ended = target.terminate()
        self.faults.add("SIGTERM mid-pass (leader, forge hanging)" if mid_pass else "SIGTERM of a replica")
        self.note(f"SIGTERM {ended.holder} -> exit {ended.code} in {ended.seconds:.1f}s")
        self.sleep(0.3, 2.5)
        with target.lock:
            target.start()
        self.faults.add("replica restarts")

    # -- the schedule ------------------------------------------------------------------

    def actions(self) -> list[tuple[float, Callable[[], None]]]:
        return [
            (5.0, self.live_burst), (3.0, self.flap), (1.0, self.secret_edit), (1.0, self.human_unrelated),
            (1.2, self.human_hosts), (2.0, self.merge),
            (1.0, lambda: self.api_fault("watch drop")), (1.0, lambda: self.api_fault("410 Gone (expire_watches)")),
            (1.0, lambda: self.api_fault("API 500/503")), (0.5, lambda: self.api_fault("API 403")),
            (0.7, lambda: self.api_fault("API hang")),
            (1.0, lambda: self.forge_fault("forge 500/502")),
            (0.6, lambda: self.forge_fault("forge 429 with Retry-After")),
            (0.4, lambda: self.forge_fault("forge 429 without Retry-After")),
            (0.6, lambda: self.forge_fault("forge hang")),
            (0.5, lambda: self.restart(False)), (0.4, lambda: self.restart(True)),
        ]

    def wait_for_start(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.replica_of(self.w.leader()) is not None and self.w.kube.open_watches >= 2 * self.w.n_objects:
                return
            time.sleep(0.3)
        raise RuntimeError("the replicas did not start (no leader or watches) within "
                           f"{timeout:.0f}s; see {self.w.dir / 'logs'}")

    def run(self) -> None:
        self.wait_for_start()
        self.note("replicas up")
        # The endpoint manager moves mac-ollama to its tailnet candidate: a pick, to be
        # written once it has held for stableFor.
        self.eps["mac-ollama"] = PICKS["mac-ollama"]
        self.w.set_endpoints("mac-ollama", self.eps["mac-ollama"])
        start = time.monotonic()
        end = start + self.seconds
        n_windows = 2 if self.ci else max(2, int(self.seconds // 150))
        window_at = [start + self.seconds * (i + 1) / (n_windows + 1) for i in range(n_windows)]
        takeover_at = start + self.seconds * self.rng.uniform(0.15, 0.3)
        weights, actions = zip(*self.actions())
        while time.monotonic() < end:
            if window_at and time.monotonic() >= window_at[0]:
                window_at.pop(0)
                self.flap_window(len(self.windows) + 1)
                continue
            if not self.takeover and time.monotonic() >= takeover_at:
                self.human_takeover()
                if not self.takeover:
                    takeover_at = time.monotonic() + 5  # no PR open right now: try again soon
                continue
            self.rng.choices(actions, weights)[0]()
            self.sleep(0.2, 1.8)

    # -- settling and the flap-only windows -------------------------------------------

    def calm(self) -> None:
        """No more faults; both replicas running."""
        self.w.kube.clear_faults()
        self.w.forge.stop_faults()
        for r in self.w.replicas.values():
            with r.lock:
                if not r.alive():
                    r.start()

    def proposal_matches(self) -> bool:
        """The world is what it should be: either ``main`` already holds the expected values
        (then no PR and no branch), or the branch, on top of the current ``main``, holds them
        and exactly one PR is open for it."""
        main, head = self.w.read_ref("main"), self.w.read_ref(BRANCH)
        assert main is not None
        exp_cm = self.expected_cm()
        if self.w.configmap_data(main) == exp_cm and self.w.endpoints(main) == self.eps:
            return not self.w.open_prs() and head is None
        if head is None or not self.w.is_ancestor(main, head):
            return False
        return (self.w.configmap_data(head) == exp_cm and self.w.endpoints(head) == self.eps
                and len(self.w.open_prs()) == 1)

    def leader_caught_up(self) -> bool:
        """The current leader has run a pass as leader and found the PR up to date.

        The branch and PR can look right while a new leader has not looked yet: an old leader
        stopped mid-pass may have pushed the branch and not yet rewritten the PR body. That
        catch-up write is owed to the stop, not to anything that happens afterwards, so a flap
        window must not start before the leader has paid it."""
        for r in self.w.replicas.values():
            if not r.alive() or not r.stderr.exists():
                continue
            text = r.stderr.read_text(errors="replace")
            leader = caught_up = False
            for line in text[text.rfind("--- soak: start"):].splitlines():  # this incarnation only
                try:
                    doc = json.loads(line) if line.startswith("{") else {}
                except ValueError:
                    continue
                msg = doc.get("msg")
                if msg in ("became leader", "lost leadership"):
                    leader, caught_up = msg == "became leader", False
                elif msg == "pass done" and doc.get("leader"):
                    caught_up = doc.get("pr") in ("unchanged", "nothing", "human-pushed")
            if leader:
                return caught_up
        return False

    def settle(self, timeout: float) -> tuple[bool, float]:
        """Wait until the proposal matches the truth and nothing was written for a while
        (long enough for a resync pass to have run and found nothing to do)."""
        quiet = self.resync + self.debounce + 2.5
        start = time.monotonic()
        last_sig: tuple[int, int] | None = None
        last_change = start
        while time.monotonic() - start < timeout:
            sig = (len(self.w.forge.writes), len(self.w.ref_updates()))
            if sig != last_sig:
                last_sig, last_change = sig, time.monotonic()
            if time.monotonic() - last_change >= quiet and self.proposal_matches() and self.leader_caught_up():
                return True, time.monotonic() - start
            time.sleep(0.5)
        return False, time.monotonic() - start

    def flap_window(self, index: int) -> None:
        self.calm()
        settled, took = self.settle(90.0)
        win = Window(index, settled, took)
        self.windows.append(win)
        if not settled:
            self.note(f"flap window {index}: did not settle in {took:.0f}s; skipped")
            return
        self.note(f"flap window {index}: start")
        forge_n, refs_n = len(self.w.forge.requests), len(self.w.ref_updates())
        start = time.monotonic()
        length = 12.0 if self.ci else 25.0
        while time.monotonic() - start < length:
            self.flap()
            win.flaps += 1
            self.sleep(0.2, 1.5)
        # Let every pass those flaps could trigger run: debounce, a resync, stableFor.
        time.sleep(self.debounce + self.resync + self.stable + 3.0)
        win.seconds = time.monotonic() - start
        win.forge_writes = [f"{r.method} {r.path}" for r in self.w.forge.requests[forge_n:]
                            if r.method in WRITE_METHODS]
        win.ref_updates = [f"{u.ref} {u.old[:8]}->{u.new[:8]}" for u in self.w.ref_updates()[refs_n:]]
        self.note(f"flap window {index}: {win.flaps} flaps, {len(win.forge_writes)} forge writes, "
                  f"{len(win.ref_updates)} ref updates")

    def finish(self) -> dict[str, Any]:
        """Stop injecting, settle, merge the last PR, wait until syncer has seen it."""
        out: dict[str, Any] = {}
        self.calm()
        for name, addr in self.eps.items():
            self.w.set_endpoints(name, addr)
        # Bounded above the loop's longest retry backoff (5 min after many failed passes in a row).
        settled, took = self.settle(330.0)
        out["settled"], out["settle_seconds"] = settled, took
        self.note(f"final settle: {settled} after {took:.0f}s")
        start = time.monotonic()
        done = False
        while time.monotonic() - start < 120.0:
            main = self.w.read_ref("main")
            assert main is not None
            if (self.w.configmap_data(main) == self.expected_cm() and self.w.endpoints(main) == self.eps
                    and not self.w.open_prs() and self.w.read_ref(BRANCH) is None):
                done = True
                break
            if self.w.open_prs():
                # Prefer a fast-forward (syncer rebases its branch); a merge commit if that takes long.
                self.merge(merge_commit=time.monotonic() - start > 30.0)
            time.sleep(1.0)
        out["merged_and_seen"], out["merge_seconds"] = done, time.monotonic() - start
        self.note(f"final merge seen: {done}")
        return out

    # -- the invariants ---------------------------------------------------------------

    def check(self, final: dict[str, Any], stops: list[Any]) -> tuple[list[Figure], list[str], dict[str, Any]]:
        w = self.w
        figs: list[Figure] = []
        fails: list[str] = []
        details: dict[str, Any] = {}

        def fig(name: str, value: Any, must: str = "", ok: bool | None = None) -> None:
            figs.append(Figure(name, str(value), must, ok))
            if ok is False:
                fails.append(f"{name}: {value} (must be {must})")

        main = w.read_ref("main")
        assert main is not None
        cm, eps = w.configmap_data(main), w.endpoints(main)
        exp = self.expected_cm()

        # Live edits applied.
        wrong = {k: (cm.get(k), v) for k, v in self.live.items() if cm.get(k) != v}
        fig("live edits (ConfigMap keys patched as kubectl-edit)", f"{self.edits} in {self.people['live edit bursts']} bursts")
        fig("live edits applied: keys at their last live value in main", f"{len(self.live) - len(wrong)}/{len(self.live)}",
            "all", not wrong)
        off = {k: (cm.get(k), exp.get(k)) for k in set(cm) | set(exp) if cm.get(k) != exp.get(k)}
        fig("final main equal to the expected state (ConfigMap data, Endpoints)",
            "yes" if not off and eps == self.eps else f"no: {off} {eps} vs {self.eps}", "yes", not off and eps == self.eps)
        details["configmap_differences"] = off

        # Human edits kept.
        changelog = w.show(main, CHANGELOG) or ""
        lost = [line for line in self.changelog if line not in changelog]
        lost += [f"{k}={v}" for k, v in self.git_keys.items() if cm.get(k) != v]
        if self.branch_comment and self.branch_comment not in (w.show(main, EP_FILE) or ""):
            lost.append("branch comment")
        not_in_history = [sha[:12] for sha, _ in self.human_commits if not w.is_ancestor(sha, main)]
        kept_n = len(self.changelog) + len(self.git_keys) + (1 if self.branch_comment else 0)
        fig("human commits (main unrelated / hosts/asgard / syncer branch)",
            f"{self.people['human commits to main (unrelated)']} / {self.people['human commits to hosts/asgard/']} / "
            f"{self.people[BRANCH_COMMITS]}")
        fig("human git edits kept in main", f"{kept_n - len(lost)}/{kept_n}", "all", not lost)
        fig("human commits in main's history", f"{len(self.human_commits) - len(not_in_history)}/{len(self.human_commits)}",
            "all", not not_in_history)
        details["lost_human_edits"] = lost

        # Pull requests.
        with w.forge._lock:
            prs = [(p.number, p.created, p.closed, p.merged) for p in w.forge.prs if p.head == BRANCH]
        overlaps = 0
        for i, (_, c1, e1, _) in enumerate(prs):
            for _, c2, e2, _ in prs[i + 1:]:
                if c2 < (e1 if e1 is not None else 10**12) and c1 < (e2 if e2 is not None else 10**12):
                    overlaps += 1
        fig("pull requests opened (merged by the reviewer)", f"{len(prs)} ({sum(1 for p in prs if p[3])})")
        fig("duplicate PRs: overlapping open PRs for the branch", overlaps, "0", overlaps == 0)
        fig("most PRs open at once (sampled every 0.2 s)", w.max_open_prs, "≤ 1", w.max_open_prs <= 1)

        # Commits on main.
        syncer_commits = w.bare_git("log", "--no-merges", f"--author={SYNCER_EMAIL}", "--format=%H", main).split()
        ids: dict[str, list[str]] = {}
        for sha in syncer_commits:
            patch = w.bare_git("show", "--format=", sha)
            pid = subprocess.run(["git", "patch-id", "--stable"], input=patch + "\n", capture_output=True,
                                 text=True, cwd=w.bare, env=w.env, check=False).stdout.split()
            ids.setdefault(pid[0] if pid else sha, []).append(sha[:12])
        dups = sum(len(v) - 1 for v in ids.values())
        fig("syncer commits on main", len(syncer_commits))
        fig("duplicate commits (same content change twice on main)", dups, "0", dups == 0)
        merges = ", ".join(f"{k} {v}" for k, v in self.merges.counts.items())
        fig("merge attempts by the reviewer", merges or "none")

        # Flapping.
        done = [x for x in self.windows if x.settled]
        flap_writes = sum(len(x.forge_writes) + len(x.ref_updates) for x in done)
        fig("flap-only windows run (settled first)", f"{len(done)}/{len(self.windows)}", "≥ 1", len(done) >= 1)
        fig("flaps inside flap-only windows / elsewhere",
            f"{sum(x.flaps for x in done)} / {self.people['endpoints flaps'] - sum(x.flaps for x in self.windows)}")
        fig("commits, branch pushes and PR writes caused by flapping", flap_writes, "0", flap_writes == 0)
        details["windows"] = [x.__dict__ for x in self.windows]

        # Secrets.
        updates = w.ref_updates()
        original_secret = w.original[SECRET_FILE].strip()  # ``show`` strips the final newline
        secret_written = sorted({u.new[:12] for u in updates if u.new != ZERO
                                 and w.show(u.new, SECRET_FILE) != original_secret})
        fig("Secret edits live", len(self.secret_values))
        fig("Secret written to git (ref states with a changed Secret)", len(secret_written), "0", not secret_written)
        bodies = json.dumps([r.body for r in w.forge.requests], default=str)
        logs = w.log_text()
        leaked = sum(bodies.count(v) + logs.count(v) for v in self.secret_values)
        leaked += sum(bodies.count(b) + logs.count(b) for b in map(_b64, self.secret_values))
        fig("Secret values in PR text or logs", leaked, "0", leaked == 0)

        # Tokens.
        forge_n, git_n = logs.count(w.forge_token), logs.count(w.git_token)
        basic = _b64(f"x-access-token:{w.git_token}")
        fig("forge token occurrences in replica stdout/stderr", forge_n, "0", forge_n == 0)
        fig("git token occurrences in replica stdout/stderr (plain or Basic)", git_n + logs.count(basic), "0",
            git_n + logs.count(basic) == 0)
        kube_n = logs.count(w.kube.token)
        fig("API server token occurrences in replica stdout/stderr", kube_n, "0", kube_n == 0)

        # main only ever fast-forwarded.
        main_updates = [u for u in updates if u.ref == "refs/heads/main"]
        forced = [f"{u.old[:8]}->{u.new[:8]}" for u in main_updates
                  if u.old == ZERO or u.new == ZERO or not w.is_ancestor(u.old, u.new)]
        forced = forced[1:] if forced and main_updates[0].old == ZERO else forced  # the first push creates it
        reflog = w.bare_git("reflog", "show", "--format=%H", "refs/heads/main").split()
        reflog_forced = sum(1 for new, old in itertools.pairwise(reflog) if not w.is_ancestor(old, new))
        fig("updates of main (hook log) / reflog entries", f"{len(main_updates)} / {len(reflog)}")
        fig("force-pushes of main (a state not an ancestor of the next)", len(forced) + reflog_forced, "0",
            not forced and reflog_forced == 0)
        branch_updates = [u for u in updates if u.ref == f"refs/heads/{BRANCH}"]
        fig(f"updates of {BRANCH} (pushes, deletions)", len(branch_updates))

        # Faults and processes.
        for name, n in self.faults.counts.items():
            fig(f"injected: {name}", n)
        answered = Tally()
        for r in list(w.forge.requests):
            if r.status in (429, 500, 502):
                answered.add(f"{r.status}")
        fig("forge answers 429 / 5xx (as served)", f"{answered['429']} / {answered['500'] + answered['502']}")
        events = _log_events(w)
        for key in ("watch history expired; re-listing", "watch failed; reconnecting", "became leader",
                    "sidecar stopped; abandoned a running pass"):
            fig(f"replica log: {key}", events[key])
        fig("replica log: passes done (leader / follower)", f"{events['pass leader']} / {events['pass follower']}")
        fig("replica log: failed passes by stage",
            ", ".join(f"{k[7:]} {v}" for k, v in events.counts.items() if k.startswith("failed ")) or "none")
        # An injected 403 that happens to meet a restarting replica's permission probe is,
        # rightly, a start-up error (exit 2, "missing permission"); the watchdog restarts it.
        refused = [e for e in w.exits if not e.asked and e.code == 2 and "missing permission" in e.tail
                   and self.faults["API 403"] > 0]
        unexpected = [e for e in w.exits if not e.asked and e not in refused]
        fig("start-up refused by an injected 403 (exit 2, restarted)", len(refused))
        fig("unexpected replica exits", len(unexpected), "0", not unexpected)
        details["unexpected_exits"] = [e.__dict__ for e in w.exits if not e.asked]
        # A SIGTERM before ``syncer run`` has set up its handlers (still cloning, importing)
        # ends the process by the signal's default action: nothing had started, nothing to clean.
        early = [e for e in w.exits if e.asked and not e.up]
        sigterms = [e for e in w.exits if e.asked and e.up]
        slow = [e for e in sigterms if e.code != 0 or e.seconds >= 10.0]
        slow += [e for e in early if e.code not in (0, -15) or e.seconds >= 10.0]
        fig("SIGTERM -> exit 0 within 10 s (running sidecars)", f"{len(sigterms) - len(slow)}/{len(sigterms)} "
            f"(slowest {max((e.seconds for e in sigterms), default=0):.1f}s)", "all", not slow)
        fig("SIGTERM while still starting (ended by the signal)", len(early))
        details["sigterms"] = [e.__dict__ for e in w.exits if e.asked]
        fig("takeover of the syncer branch", json.dumps(self.takeover) if self.takeover else "not done",
            "syncer said so, branch kept, merged",
            bool(self.takeover) and bool(self.takeover.get("syncer said so")) and bool(self.takeover.get("branch kept"))
            and "merged" in self.takeover)
        fig("final settle / merge seen (s)", f"{final['settled']} {final['settle_seconds']:.0f} / "
            f"{final['merged_and_seen']} {final['merge_seconds']:.0f}", "both True",
            bool(final["settled"] and final["merged_and_seen"]))
        hook_ok = len(updates) > 0
        fig("reference-transaction hook entries", len(updates), "> 0", hook_ok)
        fig("chaos phase / whole run (s)", f"{self.seconds:.0f} / {time.monotonic() - self.t0:.0f}")
        return figs, fails, details


def _sub_line(text: str, key: str, line: str) -> tuple[str, int]:
    import re

    return re.subn(rf'(?m)^  {key}: "[^"\n]*"$', line, text)


def _b64(text: str) -> str:
    import base64

    return base64.b64encode(text.encode()).decode()


def _log_events(w: World) -> Tally:
    t = Tally()
    for r in w.replicas.values():
        if not r.stderr.exists():
            continue
        for line in r.stderr.read_text(errors="replace").splitlines():
            if not line.startswith("{"):
                continue
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            msg = str(doc.get("msg", ""))
            if msg == "pass done":
                t.add("pass leader" if doc.get("leader") else "pass follower")
            elif " failed; " in msg and doc.get("stage"):
                t.add(f"failed {doc['stage']}")
            else:
                t.add(msg)
    return t


def run_soak(seconds: float, seed: int, workdir: Path, *, ci: bool = False,
             say: Callable[[str], None] = print) -> Report:
    started = time.monotonic()
    world = World(workdir, Settings())
    rng = random.Random(seed)
    soak: Soak | None = None
    try:
        world.start()
        soak = Soak(world, rng, seconds, ci=ci, say=say)
        say(f"soak: {seconds:.0f}s, seed {seed}, work directory {workdir}")
        soak.run()
        say("soak: chaos over; settling")
        final = soak.finish()
        stops = []
        for r in world.replicas.values():
            with r.lock:
                if r.alive():
                    stops.append(r.terminate())
        figs, fails, details = soak.check(final, stops)
        details["timeline"] = soak.timeline
    finally:
        world.stop()
    return Report(seconds, seed, ci, figs, fails, time.monotonic() - started, workdir, details)
