"""The world a soak runs in: loopback fakes, a real bare git repository, two ``syncer run``
processes, and the humans around them.

* **Cluster**: ``FakeKubeAPI`` (in this process, on 127.0.0.1) holding every object of
  ``hosts/asgard/`` as ``kubectl apply`` left it, plus a Secret.
* **Git**: one bare repository. syncer reaches it over smart HTTP (``GitHTTPServer``, so the
  git token is really sent); the fake GitHub checks branches in it; humans push to it by path.
  A ``reference-transaction`` hook in it logs every ref update (time, old, new, ref), whoever
  made it, so nothing that happened to ``main`` or ``syncer/asgard`` escapes the checks.
* **Forge**: ``FakeGitHub`` on that repository.
* **Replicas**: two ``python -m syncer.cli run --leader-elect --mode pr`` subprocesses with
  their own clone directories; stdout/stderr appended to files across restarts. A watchdog
  thread restarts a replica that exits without being asked to and notes it.
* **Humans**: commit to ``main`` (unrelated files, or values under ``hosts/asgard/`` that are
  not edited live), push once to syncer's branch, and merge the open pull request the way a
  reviewer does (fast-forward ``main`` to the branch, or a merge commit, then mark it merged).

Nothing here decides *when* things happen: that is the driver's job (``driver.py``).
"""

from __future__ import annotations

import base64
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.fakes.forges import FakeGitHub
from tests.fakes.git_http import GitHTTPServer
from tests.fakes.kube_api import FakeKubeAPI

ROOT = Path(__file__).resolve().parents[2]

NS = "ai"
INSTALLATION = "asgard"
BRANCH = f"syncer/{INSTALLATION}"
HOSTS = f"hosts/{INSTALLATION}"
CM_FILE = f"{HOSTS}/ollama-endpoint-manager.yaml"
EP_FILE = f"{HOSTS}/ollama-backends.yaml"
SECRET_FILE = f"{HOSTS}/ollama-api-key.yaml"
CHANGELOG = "docs/changelog.txt"
CM_NAME = "ollama-endpoint-manager"
SECRET_NAME = "ollama-api-key"
FORGE_REPO = "acme/infra"
SYNCER_EMAIL = "syncer@users.noreply.local"
ZERO = "0" * 40

SECRET_YAML = """\
# API key the endpoint manager sends to the backends. syncer must never copy it back.
apiVersion: v1
kind: Secret
metadata:
  name: ollama-api-key
  namespace: ai
type: Opaque
data:
  API_KEY: c2VlZC1rZXktZnJvbS1naXQ=
"""

HOOK = """\
#!{python}
import sys, time
state = sys.argv[1] if len(sys.argv) > 1 else ""
data = sys.stdin.read()
if state == "committed":
    with open({log!r}, "a") as f:
        for line in data.splitlines():
            if line.strip():
                f.write("%.3f %s\\n" % (time.time(), line.strip()))
"""


def human_env(home: Path) -> dict[str, str]:
    return {"GIT_AUTHOR_NAME": "Ops Person", "GIT_AUTHOR_EMAIL": "ops@example.invalid",
            "GIT_COMMITTER_NAME": "Ops Person", "GIT_COMMITTER_EMAIL": "ops@example.invalid",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
            "LC_ALL": "C"}


class GitFailed(Exception):
    pass


def run_git(cwd: Path, *args: str, env: dict[str, str], input: str | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=env, input=input, capture_output=True, text=True,
                          timeout=60, check=False)
    if done.returncode != 0:
        raise GitFailed(f"git {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout.strip()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def loopback_env() -> dict[str, str]:
    """This process's environment without proxies: nothing may leave 127.0.0.1."""
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    env.update(NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    return env


@dataclass(frozen=True)
class RefUpdate:
    at: float
    old: str
    new: str
    ref: str


@dataclass
class Exit:
    replica: str
    holder: str
    code: int | None
    asked: bool  # we sent SIGTERM
    seconds: float  # SIGTERM -> exit (asked), else lifetime
    tail: str = ""
    up: bool = True  # it had logged "sidecar started" (before that, SIGTERM's default action applies)


@dataclass
class Settings:
    debounce: str = "1s"
    resync: str = "4s"
    stable_for: str = "2s"
    lease: str = "3s"
    grace: str = "2s"

    def seconds(self, name: str) -> float:
        return float(getattr(self, name).rstrip("s"))


class Replica:
    """One ``syncer run`` process slot (``a`` or ``b``); each start is a new incarnation."""

    def __init__(self, world: "World", name: str) -> None:
        self.world, self.name = world, name
        self.proc: subprocess.Popen[bytes] | None = None
        self.incarnation = 0
        self.holder = ""
        self.port = 0
        self.started_at = 0.0
        self.stopping = False
        self.clone = world.dir / "clones" / name
        self.stdout = world.dir / "logs" / f"replica-{name}.out"
        self.stderr = world.dir / "logs" / f"replica-{name}.err"
        #: Held while starting or stopping, so the driver and the watchdog never both restart it.
        self.lock = threading.RLock()

    def command(self) -> list[str]:
        w, s = self.world, self.world.settings
        return [sys.executable, "-m", "syncer.cli", "run", INSTALLATION,
                "--remote", w.remote_url, "--kubeconfig", str(w.kubeconfig),
                "--listen", f"127.0.0.1:{self.port}", "--clone-dir", str(self.clone),
                "--mode", "pr", "--forge", "github", "--forge-url", w.forge.url, "--forge-repo", FORGE_REPO,
                "--token-file", str(w.forge_token_file), "--git-token-file", str(w.git_token_file),
                "--debounce", s.debounce, "--resync", s.resync, "--leader-elect", "--lease-duration", s.lease,
                "--shutdown-grace", s.grace, "--log-format", "json"]

    def start(self) -> None:
        self.incarnation += 1
        self.holder = f"soak-{self.name}-{self.incarnation}"
        self.port = free_port()
        env = {**loopback_env(), "POD_NAME": self.holder, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
        with open(self.stdout, "ab") as out, open(self.stderr, "ab") as err:
            marker = f"--- soak: start {self.holder} at {time.time():.3f}\n".encode()
            out.write(marker)
            err.write(marker)
            out.flush()
            err.flush()
            self.proc = subprocess.Popen(self.command(), cwd=self.world.dir, env=env, stdout=out, stderr=err,
                                         stdin=subprocess.DEVNULL)
        self.started_at = time.monotonic()
        self.stopping = False

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def is_up(self) -> bool:
        """This incarnation has logged that the sidecar started."""
        text = self.stderr.read_text(errors="replace")
        at = text.rfind(f"--- soak: start {self.holder} ")
        return at >= 0 and '"msg": "sidecar started"' in text[at:]

    def terminate(self, timeout: float = 20.0) -> Exit:
        """SIGTERM, wait; SIGKILL if it does not exit within ``timeout`` (noted as code None)."""
        assert self.proc is not None
        self.stopping = True
        up = self.is_up()
        sent = time.monotonic()
        code: int | None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            code = None
        done = Exit(self.name, self.holder, code, True, time.monotonic() - sent, up=up)
        self.world.exits.append(done)
        return done


class World:
    def __init__(self, workdir: Path, settings: Settings | None = None) -> None:
        self.dir = workdir
        self.settings = settings or Settings()
        self.forge_token = "ghp_" + secrets.token_hex(18)
        self.git_token = "gtk_" + secrets.token_hex(18)
        self.kube_token = "kube-" + secrets.token_hex(16)
        self.repos = self.dir / "repos"
        self.bare = self.repos / "origin.git"
        self.human = self.dir / "human"
        self.hook_log = self.dir / "logs" / "ref-updates.log"
        self.kubeconfig = self.dir / "kubeconfig"
        self.forge_token_file = self.dir / "secrets" / "forge-token"
        self.git_token_file = self.dir / "secrets" / "git-token"
        self.env = human_env(self.dir)
        self.kube = FakeKubeAPI(self.kube_token, bookmark_interval=1.0)
        self.forge: FakeGitHub
        self.git_http: GitHTTPServer
        self.remote_url = ""
        self.replicas: dict[str, Replica] = {}
        self.exits: list[Exit] = []
        self.original: dict[str, str] = {}  # file -> text as first committed
        self.n_objects = 0
        self.max_open_prs = 0
        self.open_pr_samples = 0
        self._stop = threading.Event()
        self._watchdog: threading.Thread | None = None
        self._git_lock = threading.Lock()  # one human at a time in the human clone

    # -- setup ------------------------------------------------------------------------

    def start(self) -> "World":
        for sub in ("repos", "logs", "secrets", "clones", "home"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        self.env["HOME"] = str(self.dir / "home")
        self.forge_token_file.write_text(self.forge_token + "\n")
        self.git_token_file.write_text(self.git_token + "\n")
        self._init_repo()
        self.git_http = GitHTTPServer(self.repos, token=self.git_token).__enter__()
        self.remote_url = f"{self.git_http.url}/origin.git"
        self.forge = FakeGitHub(git_dir=self.bare, token=self.forge_token, repo=FORGE_REPO).start()
        self.kube.start()
        self.kube.kubeconfig(self.kubeconfig, namespace=NS)
        self._seed_cluster()
        for name in ("a", "b"):
            self.replicas[name] = Replica(self, name)
            self.replicas[name].start()
        self._watchdog = threading.Thread(target=self._watch, name="soak-watchdog", daemon=True)
        self._watchdog.start()
        return self

    def _init_repo(self) -> None:
        run_git(self.dir, "init", "-q", "--bare", "-b", "main", str(self.bare), env=self.env)
        for key, value in (("core.logAllRefUpdates", "always"), ("gc.auto", "0"), ("receive.autogc", "false")):
            run_git(self.bare, "config", key, value, env=self.env)
        hook = self.bare / "hooks" / "reference-transaction"
        hook.write_text(HOOK.format(python=sys.executable, log=str(self.hook_log)))
        hook.chmod(0o755)
        work = self.human
        work.mkdir()
        run_git(work, "init", "-q", "-b", "main", env=self.env)
        shutil.copytree(ROOT / "hosts" / INSTALLATION, work / HOSTS)
        cfg = work / HOSTS / "syncer.conf"
        cfg.write_text(re.sub(r"(?m)^stableFor: .*$", f"stableFor: {self.settings.stable_for}", cfg.read_text()))
        (work / SECRET_FILE).write_text(SECRET_YAML)
        (work / "docs").mkdir()
        (work / CHANGELOG).write_text("# Changes made by people\n")
        run_git(work, "add", ".", env=self.env)
        run_git(work, "commit", "-q", "-m", "asgard manifests", env=self.env)
        run_git(work, "remote", "add", "origin", str(self.bare), env=self.env)
        run_git(work, "push", "-q", "origin", "main", env=self.env)
        for f in (CM_FILE, EP_FILE, SECRET_FILE, f"{HOSTS}/syncer.conf"):
            self.original[f] = (work / f).read_text()

    def _seed_cluster(self) -> None:
        """Every object git declares, created live as ``kubectl apply`` leaves it."""
        from syncer.writeback.deliver import load_installation

        objects = load_installation(self.human, INSTALLATION).manifests.objects.values()
        for obj in objects:
            self.kube.put(obj.data, applied=True)
        self.n_objects = len(objects)

    def stop(self) -> None:
        self._stop.set()
        if self._watchdog is not None:
            self._watchdog.join(5)
        for r in self.replicas.values():
            if r.alive():
                r.terminate()
        self.forge.stop()
        self.git_http.__exit__(None, None, None)
        self.kube.stop()

    # -- the watchdog ---------------------------------------------------------------

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            with self.forge._lock:
                n = sum(1 for p in self.forge.prs if p.state == "open" and p.head == BRANCH)
            self.max_open_prs = max(self.max_open_prs, n)
            self.open_pr_samples += 1
            for r in list(self.replicas.values()):
                with r.lock:
                    if r.proc is None or r.stopping or r.proc.poll() is None or self._stop.is_set():
                        continue
                    tail = r.stderr.read_text(errors="replace")[-2000:]
                    self.exits.append(Exit(r.name, r.holder, r.proc.returncode, False,
                                           time.monotonic() - r.started_at, tail))
                    r.start()

    # -- the cluster side -------------------------------------------------------------

    def patch_configmap(self, data: dict[str, str]) -> None:
        self.kube.patch("v1", "ConfigMap", NS, CM_NAME, {"data": data}, manager="kubectl-edit")

    def set_endpoints(self, name: str, ip: str | None) -> None:
        subsets = [] if ip is None else [{"addresses": [{"ip": ip}], "ports": [{"name": "http", "port": 11434}]}]
        self.kube.patch("v1", "Endpoints", NS, name, {"subsets": subsets}, manager="ollama-endpoint-manager")

    def patch_secret(self, key: str, plain: str) -> None:
        value = base64.b64encode(plain.encode()).decode()
        self.kube.patch("v1", "Secret", NS, SECRET_NAME, {"data": {key: value}}, manager="kubectl-edit")

    def leader(self) -> str:
        lease = self.kube.get("coordination.k8s.io/v1", "Lease", NS, f"syncer-{INSTALLATION}")
        return str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")

    # -- reading the bare repository ------------------------------------------------

    def bare_git(self, *args: str) -> str:
        return run_git(self.bare, *args, env=self.env)

    def read_ref(self, ref: str) -> str | None:
        try:
            return self.bare_git("rev-parse", "--verify", "--quiet", f"refs/heads/{ref}") or None
        except GitFailed:
            return None

    def show(self, rev: str, path: str) -> str | None:
        try:
            return self.bare_git("show", f"{rev}:{path}")
        except GitFailed:
            return None

    def is_ancestor(self, old: str, new: str) -> bool:
        done = subprocess.run(["git", "merge-base", "--is-ancestor", old, new], cwd=self.bare, env=self.env,
                              capture_output=True, check=False)
        return done.returncode == 0

    def configmap_data(self, rev: str) -> dict[str, str]:
        for doc in yaml.safe_load_all(self.show(rev, CM_FILE) or ""):
            if isinstance(doc, dict) and doc.get("kind") == "ConfigMap":
                return dict(doc.get("data") or {})
        return {}

    def endpoints(self, rev: str) -> dict[str, str]:
        out = {}
        for doc in yaml.safe_load_all(self.show(rev, EP_FILE) or ""):
            if isinstance(doc, dict) and doc.get("kind") == "Endpoints":
                ips = [a.get("ip") for s in doc.get("subsets") or [] for a in s.get("addresses") or []]
                out[doc["metadata"]["name"]] = " ".join(str(i) for i in ips)
        return out

    def ref_updates(self) -> list[RefUpdate]:
        out = []
        try:
            text = self.hook_log.read_text()
        except FileNotFoundError:
            return out
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 4 and parts[1] != parts[2]:
                out.append(RefUpdate(float(parts[0]), parts[1], parts[2], parts[3]))
        return out

    # -- humans ---------------------------------------------------------------------

    def _h(self, *args: str) -> str:
        return run_git(self.human, *args, env=self.env)

    def human_commit(self, edit: Callable[[Path], None], message: str, attempts: int = 10) -> str:
        """Commit ``edit`` on top of the current ``main`` and push it (a plain push: on a race,
        start again from the new ``main``). Returns the commit."""
        with self._git_lock:
            for _ in range(attempts):
                self._h("fetch", "-q", "origin", "+refs/heads/main:refs/remotes/origin/main")
                self._h("checkout", "-q", "-f", "-B", "main", "refs/remotes/origin/main")
                edit(self.human)
                self._h("commit", "-q", "-am", message)
                sha = self._h("rev-parse", "HEAD")
                try:
                    self._h("push", "-q", "origin", "HEAD:refs/heads/main")
                    return sha
                except GitFailed:
                    continue
            raise GitFailed(f"could not push {message!r} to main in {attempts} attempts")

    def human_branch_commit(self, edit: Callable[[Path], None], message: str, attempts: int = 5) -> str | None:
        """A person pushes a commit of their own onto syncer's branch (no force)."""
        with self._git_lock:
            for _ in range(attempts):
                if self.read_ref(BRANCH) is None:
                    return None
                try:
                    self._h("fetch", "-q", "origin", f"+refs/heads/{BRANCH}:refs/remotes/origin/{BRANCH}")
                except GitFailed:
                    continue
                self._h("checkout", "-q", "-f", "-B", "review", f"refs/remotes/origin/{BRANCH}")
                edit(self.human)
                self._h("commit", "-q", "-am", message)
                sha = self._h("rev-parse", "HEAD")
                try:
                    self._h("push", "-q", "origin", f"HEAD:refs/heads/{BRANCH}")
                    return sha
                except GitFailed:
                    continue
            return None

    def open_prs(self) -> list[Any]:
        with self.forge._lock:
            return [p for p in self.forge.prs if p.state == "open" and p.head == BRANCH]

    def merge_open_pr(self, *, merge_commit: bool) -> str:
        """Merge the open pull request as a reviewer would: fast-forward ``main`` to the branch
        (compare-and-swap on ``main``), else -- only when ``merge_commit`` -- a merge commit;
        then mark the pull request merged. Returns what happened."""
        prs = self.open_prs()
        if not prs:
            return "no-pr"
        pr = prs[-1]
        head, main = self.read_ref(BRANCH), self.read_ref("main")
        if head is None or main is None:
            return "no-branch"
        if self.is_ancestor(head, main):
            how = "already-in-main"
        elif self.is_ancestor(main, head):
            try:
                self.bare_git("update-ref", "-m", f"merge pull request #{pr.number}", "refs/heads/main", head, main)
            except GitFailed:
                return "raced"
            how = "fast-forward"
        elif merge_commit:
            with self._git_lock:
                try:
                    self._h("fetch", "-q", "origin", "+refs/heads/main:refs/remotes/origin/main",
                            f"+refs/heads/{BRANCH}:refs/remotes/origin/{BRANCH}")
                    self._h("checkout", "-q", "-f", "-B", "main", "refs/remotes/origin/main")
                    self._h("merge", "-q", "--no-ff", "--no-edit", "-m", f"Merge pull request #{pr.number}",
                            f"refs/remotes/origin/{BRANCH}")
                    self._h("push", "-q", "origin", "HEAD:refs/heads/main")
                except GitFailed:
                    try:
                        self._h("merge", "--abort")
                    except GitFailed:
                        pass
                    return "raced"
            how = "merge-commit"
        else:
            return "not-fast-forward"
        with self.forge._lock:
            if pr.state == "open":
                self.forge.close_pr(pr.number, merged=True)
        return how

    # -- logs -----------------------------------------------------------------------

    def log_text(self) -> str:
        parts = []
        for r in self.replicas.values():
            for f in (r.stdout, r.stderr):
                if f.exists():
                    parts.append(f.read_text(errors="replace"))
        return "\n".join(parts)


@dataclass
class Tally:
    """Counts by name, in insertion order."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    def __getitem__(self, name: str) -> int:
        return self.counts.get(name, 0)
