"""Real git, run as a subprocess: clone, commit, push. Never force a base branch.

Every command runs with repository hooks disabled (``core.hooksPath=/dev/null``: no directory
anyone could plant a hook in, unlike a fixed name in the shared temp dir), no terminal prompts, and a time limit; failures become one-line ``GitError``s with
credentials stripped from any URL they mention.
"""

from __future__ import annotations

import base64
import os
import random
import re
import subprocess
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit


from syncer import USER_AGENT
from syncer.backoff import full_jitter
from syncer.secrets import masking
from syncer.errors import GitError
from syncer.gitoutcome import PushOutcome, Pushed, push_outcome, remote_failure
from syncer.secrets.redact import redact_url

#: Network git commands (clone, fetch, push, ls-remote) get this long; a remote that takes
#: longer is treated as down for this round rather than blocking the loop forever.
NETWORK_TIMEOUT = 120.0
LOCAL_TIMEOUT = 30.0
#: Where git looks for hooks: ``/dev/null`` is not a directory, so no hook can exist there.
NO_HOOKS = os.devnull
@dataclass(frozen=True)
class Identity:
    name: str = "syncer"
    email: str = "syncer@users.noreply.local"
    #: HTTPS token for clone/fetch/push, sent as a Basic auth header through git's
    #: environment-only config (never on a command line, never in the remote URL).
    token: str = field(default="", repr=False)
    token_user: str = "x-access-token"
    #: A token that changes over time (a GitHub App's installation token): asked for on every
    #: git command, in place of ``token``.
    token_source: Callable[[], str] | None = field(default=None, repr=False, compare=False)


def token_scope(remote: str | None) -> str | None:
    """The URL git's config may send the HTTPS token to: the remote's own ``scheme://host[:port]/path``
    (user name and password dropped), or None when the remote is not HTTP(S) (ssh, a path, ``file://``)
    or cannot be a config key (a newline in it)."""
    if not remote:
        return None
    try:
        parts = urlsplit(remote)
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:  # a port that is no number: git will refuse the URL itself
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname or "\n" in remote or "\0" in remote:
        return None
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    return urlunsplit((parts.scheme.lower(), host + port, parts.path, "", ""))


def _env(identity: Identity, remote: str | None = None) -> dict[str, str]:
    env = {
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "/bin/false",
        "LC_ALL": "C",
        "GIT_AUTHOR_NAME": identity.name,
        "GIT_AUTHOR_EMAIL": identity.email,
        "GIT_COMMITTER_NAME": identity.name,
        "GIT_COMMITTER_EMAIL": identity.email,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    config: list[tuple[str, str]] = []
    scope = token_scope(remote)
    if scope is not None:
        # The most specific URL match wins in git's config: a user's own
        # ``http.<their host>.followRedirects`` must not turn it back on for this remote.
        config.append((f"http.{scope}.followRedirects", "false"))
    token = identity.token_source() if identity.token_source is not None else identity.token
    if token and scope is not None:
        # git matches ``http.<url>.*`` once, against the URL it was given, and sends the header on
        # every request of that command wherever a redirect took it: the scope keeps the token off
        # other remotes, ``followRedirects=false`` keeps git from being taken anywhere else.
        basic = base64.b64encode(f"{identity.token_user}:{token}".encode()).decode()
        config.append((f"http.{scope}.extraHeader", f"Authorization: Basic {basic}"))
    if config:
        env["GIT_CONFIG_COUNT"] = str(len(config))
        for i, (key, value) in enumerate(config):
            env[f"GIT_CONFIG_KEY_{i}"] = key
            env[f"GIT_CONFIG_VALUE_{i}"] = value
    if "GIT_SSH_COMMAND" not in os.environ:
        env["GIT_SSH_COMMAND"] = "ssh -o BatchMode=yes -o StrictHostKeyChecking=yes"
    return env


def _token_forms(identity: Identity, env: Mapping[str, str]) -> list[str]:
    """The token and its Basic header value as this command's environment holds them: masked out
    of git's output (a user's ``GIT_TRACE_CURL`` or ``GIT_CURL_VERBOSE`` prints headers)."""
    forms = [v.removeprefix("Authorization: Basic ") for k, v in env.items()
             if k.startswith("GIT_CONFIG_VALUE_") and v.startswith("Authorization: Basic ")]
    return forms + [identity.token] if identity.token else forms


#: Commands that talk to a remote: their failures are told apart (credentials, access, no repository).
REMOTE_COMMANDS = frozenset({"clone", "fetch", "push", "ls-remote", "pull"})


def git_process(args: list[str], cwd: Path | None, identity: Identity = Identity(), timeout: float = LOCAL_TIMEOUT,
                env: Mapping[str, str] | None = None, remote: str | None = None
                ) -> "subprocess.CompletedProcess[str]":
    """Run ``git <args>`` with hooks off and a time limit; the finished process, whatever its exit
    code (``run_git`` raises on failure; a push's outcome is read by ``gitoutcome.push_outcome``).
    ``remote``: the URL this command talks to, the only one the HTTPS token is sent to; git
    follows no redirect. Its output comes back with the token masked (``_masked``)."""
    cmd = ["git", "-c", f"core.hooksPath={NO_HOOKS}", "-c", "core.fsmonitor=false", "-c", "protocol.file.allow=always",
           "-c", f"http.userAgent={USER_AGENT}", "-c", "http.followRedirects=false", *args]
    git_env = _env(identity, remote)
    try:
        done = subprocess.run(cmd, cwd=str(cwd) if cwd else None, env={**os.environ, **git_env, **(env or {})},
                              capture_output=True, text=True, encoding="utf-8", errors="replace", timeout=timeout,
                              stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        raise GitError(f"git {args[0]} timed out after {timeout:.0f}s", transient=True) from None
    except OSError as exc:
        raise GitError(f"git {args[0]} cannot run: {exc.strerror or exc}", transient=False) from None
    if done.returncode == 0:
        return done
    known = _token_forms(identity, git_env)
    return subprocess.CompletedProcess(done.args, done.returncode, _masked(done.stdout, known),
                                       _masked(done.stderr, known))


def _masked(text: str, known: list[str]) -> str:
    """git's output of a failed command with the token, its Basic value, credential shapes and
    URL passwords masked, and every line cleared of what is left of a known secret (a server
    that echoes the token split across two ``remote:`` lines shows neither half)."""
    lines = [masking.mask_fragments(ln, known) for ln in masking.mask(text, known).split("\n")]
    return "\n".join(ln + REDIRECT_NOTE if _REDIRECT.search(ln) else ln for ln in lines)


def failure_lines(text: str, known: list[str]) -> list[str]:
    """The non-empty lines of git's output, masked as ``_masked`` does."""
    return [ln.strip() for ln in _masked(text, known).splitlines() if ln.strip()]


def run_git(args: list[str], cwd: Path | None, identity: Identity = Identity(), timeout: float = LOCAL_TIMEOUT,
            raw: bool = False, env: Mapping[str, str] | None = None, remote: str | None = None) -> str:
    """Run ``git <args>`` with hooks off; GitError with the first useful stderr line on failure
    (for a command that talks to ``remote``, told apart: ``gitoutcome.remote_failure``).
    The output without its final newline, or exactly as git wrote it (``raw``: a file's text).
    ``env``: more environment for this one command. ``remote``: the URL it talks to (the only one
    the HTTPS token goes to)."""
    done = git_process(args, cwd, identity, timeout, env, remote)
    if done.returncode != 0:
        stderr = done.stderr + "\n" + done.stdout  # masked by git_process
        if args[0] in REMOTE_COMMANDS:
            told = remote_failure(stderr, redact_url(remote or _remote_arg(args)), args[0])
            if told is not None:
                raise told from None
        lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
        rejected = next((ln for ln in lines if "[rejected]" in ln or "[remote rejected]" in ln), None)
        if rejected:
            lines.insert(0, "! " + rejected.lstrip("!").strip())
        useful = next((ln for ln in lines if ln.startswith(("fatal:", "error:", "!", "remote:"))), lines[0] if lines else "")
        redirected = _REDIRECT.search(useful)
        raise GitError(f"git {args[0]} failed: {useful or 'exit ' + str(done.returncode)}",
                       transient=not redirected and _transient(stderr)) from None
    return done.stdout if raw else done.stdout.removesuffix("\n")


#: How git (with curl) says the server answered a redirect it was told not to follow, and what
#: syncer adds to that line wherever it is quoted (an error, a push's outcome).
_REDIRECT = re.compile(r"returned error: 30[12378]\b")
REDIRECT_NOTE = (" (a redirect: syncer follows none, so the git token goes to no other server; set --remote to the "
                 "repository's current URL)")


def _remote_arg(args: list[str]) -> str:
    """The remote a command names (the word after ``--``, as syncer writes them), else ``origin``."""
    return args[args.index("--") + 1] if "--" in args[:-1] else "origin"


def history_runner(path: Path, identity: Identity = Identity(), fetch: bool = False,
                   remote: str | None = None) -> "Callable[[list[str], float], str | None]":
    """Git as the history base (syncer/gather/history.py) runs it in ``path``: a file's text exactly as
    stored, None on any failure (no answer, never an error). Without ``fetch`` (a person's
    checkout) a partial clone's missing versions are not fetched: that would ask for
    credentials or stall on a remote."""
    extra = None if fetch else {"GIT_NO_LAZY_FETCH": "1"}

    def run(args: list[str], timeout: float) -> str | None:
        try:
            return run_git(args, path, identity, timeout, raw=True, env=extra, remote=remote)
        except GitError:
            return None
    return run


def remote_default_branch(remote: str, identity: Identity = Identity()) -> str:
    """The branch the remote's ``HEAD`` names (``main``, ``master``, ``trunk``): the base branch
    when none is given. One ``git ls-remote --symref``, time-bounded like every network call."""
    out = run_git(["ls-remote", "--symref", "--", remote, "HEAD"], None, identity, NETWORK_TIMEOUT, remote=remote)
    for line in out.splitlines():
        target, _, name = line.partition("\t")
        if name == "HEAD" and target.startswith("ref: refs/heads/"):
            return target.removeprefix("ref: refs/heads/")
    raise GitError(f"{redact_url(remote)} names no default branch (an empty repository, or a server that does not "
                   "say): give --base-branch", transient=False)


#: How many times a read from the remote is tried when its connection dropped (``dropped``).
NETWORK_TRIES = 3
_DROPPED = ("connection reset by peer", "the remote end hung up unexpectedly", "early eof", "broken pipe",
            "protocol error: bad pack header",  # the stream cut before the pack began
            "unexpected disconnect")


def dropped(message: str) -> bool:
    """Whether git's message says the connection was cut mid-way (not refused, not denied)."""
    low = message.lower()
    return any(d in low for d in _DROPPED)


def _transient(stderr: str) -> bool:
    s = stderr.lower()
    permanent = ("authentication failed", "permission denied", "could not read username", "403", "401",
                 "repository not found", "does not appear to be a git repository", "hook declined")
    return not any(p in s for p in permanent)


class Workspace:
    """A clone owned by syncer (never the user's working tree)."""

    def __init__(self, path: Path, remote: str, base: str, identity: Identity = Identity()) -> None:
        self.path = path
        self.remote = remote
        self.base = base
        self.identity = identity
        self.synced: str | None = None  # HEAD as the last sync_to_base left it

    def git(self, *args: str, network: bool = False) -> str:
        """Run git in the clone. A read from the remote (``network``: fetch, ls-remote) whose
        connection dropped -- a server taking a fleet's connections at once resets some -- is
        tried again, up to ``NETWORK_TRIES`` in all after jittered pauses: reading twice is harmless."""
        timeout = NETWORK_TIMEOUT if network else LOCAL_TIMEOUT
        for attempt in range(1, NETWORK_TRIES + 1):
            try:
                return run_git(list(args), self.path, self.identity, timeout, remote=self.remote)
            except GitError as exc:
                if not network or attempt == NETWORK_TRIES or not dropped(exc.message):
                    raise
                time.sleep(full_jitter(attempt, 0.5, 4.0, random.random))
        raise AssertionError("unreachable")  # the last attempt returned or raised

    def push(self, target: str, *options: str, rev: str = "HEAD") -> PushOutcome:
        """Push ``rev`` (HEAD) to branch ``target`` of origin (``options``: a lease), as git told
        it: pushed, a race, or refused (``gitoutcome.push_outcome``)."""
        done = git_process(["push", "--quiet", "--porcelain", *options, "origin", f"{rev}:refs/heads/{target}"],
                           self.path, self.identity, NETWORK_TIMEOUT, remote=self.remote)
        return push_outcome(done.returncode, redact_url(done.stdout), redact_url(done.stderr), redact_url(self.remote),
                            target)

    def history_git(self) -> "Callable[[list[str], float], str | None]":
        """Git for the history base (syncer/gather/history.py) in this clone: it may fetch an old
        version of a file the blob-less clone lacks, with this clone's credentials."""
        return history_runner(self.path, self.identity, fetch=True, remote=self.remote)

    @classmethod
    def open_or_clone(cls, remote: str, base: str, dest: Path, identity: Identity = Identity(),
                      installation: str | None = None) -> "Workspace":
        """Clone ``remote`` into ``dest`` (or reuse an earlier clone there) and check out ``base``.

        A new clone is partial and sparse: only the commits of ``base``, file contents fetched
        when checked out (``--filter=blob:none``), and only ``hosts/<installation>/`` (plus the
        top-level files) checked out: a fleet repository holds many installations, and the
        sidecar needs one. With no ``installation``, the one under ``hosts/`` is it; with
        several (or none), the whole tree is checked out (which one is meant is not known yet).
        """
        if (dest / ".git").is_dir():
            ws = cls(dest, remote, base, identity)
            ws.git("remote", "set-url", "origin", remote)
            if installation and ws.git("config", "--bool", "--default", "false", "core.sparseCheckout") == "true":
                ws.git("sparse-checkout", "set", f"hosts/{installation}")
            ws.sync_to_base()
            return ws
        dest.mkdir(parents=True, exist_ok=True)
        run_git(["clone", "--quiet", "--no-tags", "--single-branch", "--branch", base, "--filter=blob:none",
                 "--sparse", "--", remote, str(dest)], None, identity, NETWORK_TIMEOUT, remote=remote)
        ws = cls(dest, remote, base, identity)
        ws.git("config", "core.hooksPath", NO_HOOKS)
        if not installation:
            names = [n.removeprefix("hosts/") for n in ws.git("ls-tree", "-d", "--name-only", "HEAD", "hosts/").split()]
            installation = names[0] if len(names) == 1 else None
        if installation:
            ws.git("sparse-checkout", "set", f"hosts/{installation}", network=True)  # fetches those blobs
        else:
            ws.git("sparse-checkout", "disable", network=True)
        return ws

    def include(self, paths: list[str]) -> None:
        """Check out ``paths`` too when the clone is sparse (a chart a HelmRelease names outside
        ``hosts/<installation>/``); nothing when they are there already."""
        missing = [p for p in paths if not (self.path / p).exists()]
        if missing and self.git("config", "--bool", "--default", "false", "core.sparseCheckout") == "true":
            self.git("sparse-checkout", "add", "--", *missing, network=True)  # fetches those blobs

    def sync_to_base(self) -> str:
        """Fetch and hard-reset to the remote base branch; drops anything left by an aborted run."""
        self.reset_to(self.fetch_base())
        self.synced = self.head()
        return self.synced

    def fetch_base(self, racing: bool = False) -> str:
        """Fetch the remote base branch (the clone's files stay as they are); the name of the ref
        that holds it now (no ``rev-parse``: commit mode's race window has no room for one).
        ``racing``: between a lost push and the next, so nothing git would do after the fetch
        itself (housekeeping, FETCH_HEAD, the forced-update walk); the next plain fetch does it."""
        ref = f"refs/remotes/origin/{self.base}"
        quick = ("--no-auto-maintenance", "--no-write-fetch-head", "--no-show-forced-updates") if racing else ()
        self.git("fetch", "--quiet", "--no-tags", *quick, "origin", f"+refs/heads/{self.base}:{ref}", network=True)
        return ref

    def reset_to(self, rev: str) -> None:
        """Point the local base branch at ``rev`` and make the files exactly its own."""
        self.git("checkout", "--quiet", "--force", "-B", self.base, rev)
        self.git("clean", "-fdxq")

    def changed_paths(self, old: str, new: str) -> list[str]:
        """The files whose content differs between commits ``old`` and ``new``. Trees only: no
        rename detection, which would read (and in a blob-less clone, fetch) the files."""
        out = self.git("diff", "--no-renames", "--no-ext-diff", "--name-only", "-z", old, new, "--")
        return [p for p in out.split("\0") if p]

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")

    def tree(self, rev: str = "HEAD") -> str:
        return self.git("rev-parse", f"{rev}^{{tree}}")

    def commit(self, files: list[str], message: str) -> str:
        self.git("add", "--", *files)
        msg_file = self.path / ".git" / "SYNCER_COMMIT_MSG"
        msg_file.write_text(message, encoding="utf-8")
        self.git("commit", "--quiet", "--no-verify", "-F", str(msg_file))
        return self.head()

    def push_base(self, rev: str = "HEAD") -> bool:
        """Fast-forward the remote base branch to ``rev`` (HEAD). False when someone pushed first (a
        race); a refusal (a hook, a protected branch) or an unusable remote is raised, never a race."""
        return self._pushed(self.push(self.base, rev=rev))

    @staticmethod
    def _pushed(outcome: PushOutcome) -> bool:
        if outcome.how is Pushed.DONE:
            return True
        if outcome.how is Pushed.RACE:
            return False
        assert outcome.error is not None
        raise outcome.error

    def remote_sha(self, branch: str) -> str | None:
        out = self.git("ls-remote", "--heads", "origin", f"refs/heads/{branch}", network=True)
        return out.split()[0] if out.strip() else None

    def fetch_branch(self, branch: str) -> str | None:
        sha = self.remote_sha(branch)
        if sha:
            self.git("fetch", "--quiet", "--no-tags", "origin", f"+refs/heads/{branch}:refs/remotes/origin/{branch}",
                     network=True)
        return sha

    def foreign_commits(self, branch_sha: str, pushed: Collection[str] | None = None) -> list[str]:
        """Commits on a syncer branch (beyond base) that syncer did not make.

        ``pushed``: the commits syncer recorded pushing (the sidecar's state record); any other
        commit is foreign, whatever its author says. Without that record (``None``: a one-shot
        ``sync``) a commit is syncer's when both its author and committer email are syncer's --
        which anyone who can push can also write (SECURITY.md)."""
        if pushed is not None:
            out = self.git("log", "--format=%H", f"refs/remotes/origin/{self.base}..{branch_sha}")
            return [sha for sha in out.split() if sha not in pushed]
        out = self.git("log", "--format=%H %ae %ce", f"refs/remotes/origin/{self.base}..{branch_sha}")
        mine = [self.identity.email, self.identity.email]
        return [line.split()[0] for line in out.splitlines() if line.split()[1:] != mine]

    def push_branch(self, branch: str, expected: str | None) -> bool:
        """Point ``branch`` at HEAD, only if it still is at ``expected`` (lease). False if it moved;
        a refusal is raised (``push_base``)."""
        return self._pushed(self.push(branch, f"--force-with-lease=refs/heads/{branch}:{expected or ''}"))

    def delete_branch(self, branch: str, expected: str) -> None:
        self.git("push", "--quiet", f"--force-with-lease=refs/heads/{branch}:{expected}", "origin",
                 f":refs/heads/{branch}", network=True)


def repo_root(start: Path) -> Path:
    """The top of the git work tree containing ``start``."""
    try:
        return Path(run_git(["rev-parse", "--show-toplevel"], start))
    except GitError as exc:
        raise GitError(f"{start}: not inside a git repository (pass --repo)") from exc


def origin_url(repo: Path) -> str | None:
    try:
        return run_git(["remote", "get-url", "origin"], repo) or None
    except GitError:
        return None
