"""Git's own history as a base: when did git last change a drifted value?

The value at the drifted path is read from the working tree and from every version of the
file on the base branch's first-parent history, newest first; the newest version in which it
differs from the one before is the change (an edit, an addition or a removal: a deleted key
is a change too, which no line-based ``git blame`` can see). The working tree counts as a
change made now. Compared with when the cluster last applied the object (managedFields), it
tells whether git moved since:

* changed after the last apply (or after the field's live write, when no applier ever wrote
  the object): git moved -- its change is pending apply;
* last changed by syncer's own write-back commit: git holds a value it copied from the
  cluster, so git did not move since and a different live value means the cluster did;
* otherwise: no answer.

The object's first version in the repository is no change of its values (a repository made
or reorganised after the cluster was applied says nothing about who moved). The walk stops at
the first version older than the last apply (older changes cannot say git moved since), so it
reads only the versions made since plus one. In syncer's own clone
(blob-less, ``--filter=blob:none``) those old versions are fetched on demand through the
clone's credentials (``git`` given by the caller), within ``BUDGET_S`` for a whole detection;
in a person's checkout nothing is fetched. Failures (not a git repository, a file git does
not track, a timeout, the budget spent) mean "no answer", never an error: the other bases
still decide.
"""

from __future__ import annotations

import enum
import os
import subprocess
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path as FsPath
from typing import Any, Generic, TypeVar

from syncer.errors import SyncerError
from syncer.model import ObjectRef, Path

#: One git command of the walk (a local ``log``, a ``show`` that may fetch one blob).
CALL_TIMEOUT_S = 15.0
#: All of git's history for one detection: a hung remote must not hang a pass.
BUDGET_S = 30.0
#: Versions of one file read at most: older changes are "no answer".
MAX_VERSIONS = 50
_NOT_COMMITTED = "0" * 40
_MISSING = object()

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

#: How history runs git in the repository: (args, timeout) -> stdout, None when git failed.
GitRunner = Callable[[list[str], float], "str | None"]


class GitSays(str, enum.Enum):
    MOVED = "moved"  # git changed this value after the cluster last applied it
    COPIED = "copied"  # the value was last written by syncer, copying the cluster


@dataclass(frozen=True)
class LineChange:
    """The newest change to a value."""

    commit: str  # 40 hex; all zeros for an uncommitted edit
    time: datetime
    by_syncer: bool


def local_git(repo: FsPath) -> GitRunner:
    """Git in a person's checkout: local objects only (a partial clone's missing versions are
    not fetched: that would ask for credentials or stall on a remote), no prompts."""
    env = {**os.environ, "GIT_NO_LAZY_FETCH": "1", "GIT_TERMINAL_PROMPT": "0"}

    def run(args: list[str], timeout: float) -> str | None:
        try:
            proc = subprocess.run(["git", "-c", "core.hooksPath=/dev/null", *args], cwd=repo, env=env,
                                  capture_output=True, text=True, encoding="utf-8", errors="replace",
                                  timeout=timeout, check=False, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError):
            return None
        return proc.stdout if proc.returncode == 0 else None
    return run


def _find(docs: list[Any], ref: ObjectRef) -> Any:
    """The object ``ref`` among parsed documents (List items included), or ``_MISSING``.
    Matched by kind, namespace and name: an apiVersion bump is no change of its values."""
    for doc in docs:
        items = doc.get("items") if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") else None
        for obj in items if isinstance(items, list) else [doc]:
            if not isinstance(obj, dict) or obj.get("kind") != ref.kind:
                continue
            meta = obj.get("metadata")
            if not isinstance(meta, dict) or meta.get("name") != ref.name:
                continue
            if str(meta.get("namespace") or ref.namespace) == ref.namespace:
                return obj
    return _MISSING


def _at(data: Any, path: Path) -> Any:
    for part in path:
        if isinstance(part, int):
            if not isinstance(data, list) or not 0 <= part < len(data):
                return _MISSING
        elif not isinstance(data, dict) or part not in data:
            return _MISSING
        data = data[part]
    return data


Commit = tuple[str, datetime, bool]  # sha, committer time, written by syncer


class _Lru(Generic[K, V]):
    """A small least-recently-used map, shared by the passes of one process."""

    def __init__(self, size: int) -> None:
        self.size, self._data, self._lock = size, OrderedDict[K, V](), threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
        return None

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)


#: What a commit holds never changes: versions of objects by commit, and a file's log by the
#: commit it starts from, are kept across passes (a sidecar pass asks again and again about the
#: same drifted values; a new commit is a new key).
_VERSIONS: _Lru[tuple[str, str, str, ObjectRef], Any] = _Lru(4096)
_LOGS: _Lru[tuple[str, str, str], list[Commit]] = _Lru(1024)


class GitHistory:
    """Value histories in one repository, for one detection."""

    def __init__(self, repo: FsPath, installation: str, git: GitRunner | None = None,
                 clock: Callable[[], float] = time.monotonic, head: str | None = None) -> None:
        """``head``: HEAD's commit when the caller knows it (saves asking git each pass)."""
        self.repo = repo
        self.syncer_subject = f"syncer({installation}): copy "
        self._git = git or local_git(repo)
        self._clock = clock
        self._deadline = clock() + BUDGET_S
        self._head: str | None = head
        self._logs: dict[str, list[Commit] | None] = {}
        self._objects: dict[tuple[str, str, ObjectRef], Any] = {}

    def _run(self, args: list[str]) -> str | None:
        left = self._deadline - self._clock()
        if left <= 0:
            return None
        return self._git(args, min(CALL_TIMEOUT_S, left))

    def _log(self, file: str) -> list[Commit] | None:
        """The commits that touched ``file`` on HEAD's first-parent line, newest first."""
        if file not in self._logs:
            if self._head is None:
                self._head = (self._run(["rev-parse", "--verify", "-q", "HEAD"]) or "").strip()
            key = (str(self.repo), self._head, file)
            commits = _LOGS.get(key) if self._head else None
            if commits is None:
                out = self._run(["log", "--first-parent", f"-n{MAX_VERSIONS}", "--format=%H%x09%ct%x09%s", "HEAD",
                                 "--", file]) if self._head else None
                if out is not None:
                    commits = []
                    for line in out.splitlines():
                        sha, _, rest = line.partition("\t")
                        stamp, _, subject = rest.partition("\t")
                        if len(sha) == 40 and stamp.isdigit():
                            commits.append((sha, datetime.fromtimestamp(int(stamp), timezone.utc),
                                            subject.startswith(self.syncer_subject)))
                    _LOGS.put(key, commits)
            self._logs[file] = commits
        return self._logs[file]

    def _object(self, file: str, rev: str, ref: ObjectRef) -> Any:
        """``ref`` as ``file`` declares it at ``rev`` ("" for the working tree), normalized as
        detection compares it; ``_MISSING`` when absent; None when it cannot be read."""
        key = (file, rev, ref)
        shared = (str(self.repo), rev, file, ref)
        if key not in self._objects and rev:
            known = _VERSIONS.get(shared)
            if known is not None:
                self._objects[key] = known
        if key not in self._objects:
            from syncer.manifests import parse_documents
            from syncer.normalize import normalize

            if rev:
                text = self._run(["show", f"{rev}:{file}"])
            else:
                try:
                    text = (self.repo / file).read_bytes().decode("utf-8")
                except (OSError, UnicodeDecodeError):
                    text = None
            found: Any = None
            if text is not None:
                try:
                    obj = _find(parse_documents(text, file), ref)
                    found = obj if obj is _MISSING else normalize(obj)
                except (SyncerError, RecursionError, ValueError):
                    found = None
            elif rev:
                found = _MISSING if self._known_absent(file, rev) else None
            self._objects[key] = found
            if rev and found is not None:
                _VERSIONS.put(shared, found)
        return self._objects[key]

    def _known_absent(self, file: str, rev: str) -> bool:
        """Did ``rev`` delete ``file`` (``git show`` fails for that reason, not for a fetch)?"""
        out = self._run(["ls-tree", "--name-only", rev, "--", file])
        return out is not None and not out.strip()

    def last_change(self, file: str, ref: ObjectRef, path: Path, since: datetime | None = None,
                    current: Any = None) -> LineChange | None:
        """The newest change to the value at ``path`` (in the normalized object ``ref`` that
        ``file`` declares), looking no further back than the first version older than
        ``since``; None when unknown or not changed since. ``current``: the object as the
        working tree declares it, when the caller has it parsed already."""
        if current is not None and (file, "", ref) not in self._objects:
            from syncer.normalize import normalize

            self._objects[(file, "", ref)] = normalize(current)
        commits = self._log(file)
        if commits is None:
            return None
        now = datetime.now(timezone.utc)
        versions: list[tuple[str, datetime, bool]] = [("", now, False), *commits]
        for i, (rev, when, by_syncer) in enumerate(versions):
            newer = self._object(file, rev, ref)
            if newer is None:
                return None
            if i + 1 >= len(versions):
                return None  # the file's first version (or older than the versions read)
            older = self._object(file, versions[i + 1][0], ref)
            if older is None or older is _MISSING or newer is _MISSING:
                # Before the object was declared in this repository (its first version: a
                # repository made or moved after the cluster was applied) nothing is known:
                # the object's arrival is no change of its values.
                return None
            a, b = _at(newer, path), _at(older, path)
            if a != b or type(a) is not type(b):
                return LineChange(rev or _NOT_COMMITTED, when, by_syncer)
            if since is not None and when <= since:
                return None  # unchanged since before the apply
        return None


def judge(change: LineChange | None, applied_at: datetime | None) -> tuple[GitSays, str] | None:
    """What the newest change to a value says about git, against when the cluster last
    applied the object; with one line saying why."""
    if change is None:
        return None
    what = "an uncommitted edit" if change.commit == _NOT_COMMITTED else f"commit {change.commit[:12]}"
    when = change.time.strftime("%Y-%m-%dT%H:%M:%SZ")
    if change.by_syncer:
        return GitSays.COPIED, f"git's value was last written by syncer's copy from the cluster ({what} at {when})"
    if applied_at is not None and change.time > applied_at:
        return GitSays.MOVED, (f"git changed this value in {what} at {when}, after the cluster last applied it "
                               f"at {applied_at.strftime('%Y-%m-%dT%H:%M:%SZ')}")
    return None
