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

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path as FsPath
from typing import Any

from syncer.cache import Caches, Lru
from syncer.errors import SyncerError
from syncer.kinds import list_items
from syncer.model import GitSays, ObjectRef, Path

#: One git command of the walk (a local ``log``, a ``show`` that may fetch one blob).
CALL_TIMEOUT_S = 15.0
#: All of git's history for one detection: a hung remote must not hang a pass.
BUDGET_S = 30.0
#: Commits of an installation's history read at most: older changes are "no answer".
MAX_COMMITS = 500
_NOT_COMMITTED = "0" * 40
_MISSING = object()


#: How history runs git in the repository: (args, timeout) -> stdout, None when git failed.
GitRunner = Callable[[list[str], float], "str | None"]


@dataclass(frozen=True)
class LineChange:
    """The newest change to a value."""

    commit: str  # 40 hex; all zeros for an uncommitted edit
    time: datetime
    by_syncer: bool


def local_git(repo: FsPath) -> GitRunner:
    """Git in a person's checkout: local objects only, no prompts (``gitrepo.history_runner``)."""
    from syncer.gitrepo import history_runner

    return history_runner(repo)


def _find(docs: list[Any], ref: ObjectRef) -> Any:
    """The object ``ref`` among parsed documents (List items included), or ``_MISSING``.
    Matched by kind, namespace and name: an apiVersion bump is no change of its values."""
    for doc in docs:
        items = list_items(doc)
        for obj in items if items is not None else [doc]:
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


@dataclass(frozen=True)
class Version:
    """One version of a file on the first-parent line: the commit that made it, and its blob."""

    commit: str
    time: datetime
    by_syncer: bool
    blob: str  # all zeros when the commit deleted the file
    created: bool  # the commit added the file
    merged: str = ""  # a merge commit: its second parent (the branch it brought in)


_ZERO = "0" * 40


def blob_id(data: bytes) -> str:
    """The id git gives a file's content (``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class GitHistory:
    """Value histories in one repository, for one detection."""

    def __init__(self, repo: FsPath, installation: str, git: GitRunner | None = None,
                 clock: Callable[[], float] = time.monotonic, head: str | None = None, *,
                 caches: Caches | None = None) -> None:
        """``head``: HEAD's commit when the caller knows it (saves asking git each pass).

        What a commit holds never changes: a scope's versions by the commit they start from
        (``caches.logs``), and objects by the blob they were read from (``caches.versions``,
        content-addressed), are kept across passes in ``caches`` (a sidecar pass asks again and
        again about the same drifted values; a new commit is a new key). None: nothing kept."""
        self.repo = repo
        self.syncer_subject = f"syncer({installation}): copy "
        self._git = git or local_git(repo)
        self._clock = clock
        self._deadline: float | None = None  # BUDGET_S from the first git call (not from reading the cluster)
        self._head: str | None = head
        #: Why the last ``last_change`` could not read the history it needed (the budget spent,
        #: an old version not fetched): then its None means "unreadable", not "no change".
        self.trouble: str | None = None
        self._scopes: dict[str, dict[str, list[Version]] | None] = {}
        self._worktree: dict[tuple[str, ObjectRef], Any] = {}
        caches = caches if caches is not None else Caches()
        #: each file's versions per (repo, HEAD, scope, subject); objects per (blob, ref)
        self._logs: Lru[tuple[str, str, str, str], dict[str, list[Version]] | None] = caches.logs
        self._objects: Lru[tuple[str, ObjectRef], object] = caches.versions

    def _run(self, args: list[str]) -> str | None:
        if self._deadline is None:
            self._deadline = self._clock() + BUDGET_S
        left = self._deadline - self._clock()
        if left <= 0:
            self.trouble = f"reading git's history took more than {BUDGET_S:.0f}s"
            return None
        return self._git(args, min(CALL_TIMEOUT_S, left))

    def _versions(self, file: str) -> list[Version] | None:
        """The versions of ``file`` on HEAD's first-parent line, newest first (None: unknown).

        One ``git log --raw`` per installation directory and detection (and per commit across
        passes) gives every file's versions with their blob ids."""
        scope = "/".join(file.split("/")[:2])
        if scope not in self._scopes:
            if self._head is None:
                self._head = (self._run(["rev-parse", "--verify", "-q", "HEAD"]) or "").strip()
            key = (str(self.repo), self._head, scope, self.syncer_subject)
            found = self._logs.get(key) if self._head else None
            if found is None and self._head:
                found = self._read_log(scope)
                if found is not None:
                    self._logs.put(key, found)
            self._scopes[scope] = found
        histories = self._scopes[scope]
        return None if histories is None else histories.get(file)

    def _read_log(self, scope: str) -> dict[str, list[Version]] | None:
        # --relative: paths as the checkout (``--repo``, perhaps a subdirectory) names them
        out = self._run(["-c", "core.quotePath=off", "log", "--first-parent", "--no-renames", "--raw", "--no-abbrev",
                         "--relative", f"-n{MAX_COMMITS}", "--format=%x1e%H%x1f%ct%x1f%P%x1f%s", str(self._head),
                         "--", scope])
        if out is None:
            return None  # not a git repository, or no such history: nothing to tell
        histories: dict[str, list[Version]] = {}
        commits = out.split("\x1e")[1:]
        for chunk in commits:
            head, _, raw = chunk.partition("\n")
            sha, stamp, parents, subject = (head.split("\x1f", 3) + ["", "", "", ""])[:4]
            if len(sha) != 40 or not stamp.isdigit():
                continue
            when = datetime.fromtimestamp(int(stamp), timezone.utc)
            merged = parents.split()[1] if len(parents.split()) == 2 else ""
            for line in raw.splitlines():
                meta, _, path = line.partition("\t")
                fields = meta.split()
                if not line.startswith(":") or len(fields) < 5:
                    continue
                histories.setdefault(path, []).append(Version(
                    sha, when, subject.startswith(self.syncer_subject), fields[3], fields[4].startswith("A"), merged))
        if len(commits) >= MAX_COMMITS:  # the oldest versions read may not be the first: say so
            for versions in histories.values():
                if not versions[-1].created:
                    versions.append(Version("", datetime.min.replace(tzinfo=timezone.utc), False, "", False))
        return histories

    def _blob_object(self, file: str, blob: str, ref: ObjectRef) -> Any:
        """``ref`` as blob ``blob`` of ``file`` declares it, normalized as detection compares it;
        ``_MISSING`` when absent (or the file deleted); None when it cannot be read."""
        if blob == _ZERO:
            return _MISSING
        found = self._objects.get((blob, ref))
        if found is None:
            text = self._run(["cat-file", "blob", blob])
            found = _parse(text, file, ref) if text is not None else None
            if found is not None:
                self._objects.put((blob, ref), found)
            else:
                self.trouble = f"the version {blob[:12]} of {file} could not be read (not fetched, or not YAML)"
        return found

    def _by_syncer(self, version: Version, file: str) -> bool:
        """Was this version written by syncer: its own commit, a squash of its PR (the PR title
        starts like its commits), or a merge that brought in only syncer's commits to the file?"""
        if version.by_syncer:
            return True
        if not version.merged:
            return False
        out = self._run(["log", "--format=%s", f"{version.commit}^1..{version.merged}", "--", file])
        subjects = [line for line in (out or "").splitlines() if line.strip()]
        return bool(subjects) and all(line.startswith(self.syncer_subject) for line in subjects)

    def last_change(self, file: str, ref: ObjectRef, path: Path, since: datetime | None = None,
                    current: Any = None) -> LineChange | None:
        """The newest change to the value at ``path`` (in the normalized object ``ref`` that
        ``file`` declares), looking no further back than the first version older than
        ``since``; None when unknown or not changed since. ``current``: the object as the
        working tree declares it, when the caller has it parsed already. When part of the
        history needed could not be read, None with ``trouble`` saying why."""
        self.trouble = None
        versions = self._versions(file)
        if not versions:
            return None
        try:
            data = (self.repo / file).read_bytes()
        except OSError:
            return None
        if blob_id(data) != versions[0].blob:  # an uncommitted edit of the file: is it this value?
            key = (file, ref)
            if key not in self._worktree:
                if current is not None:
                    from syncer.detect.normalize import normalize

                    self._worktree[key] = normalize(current)
                else:
                    self._worktree[key] = _parse(data.decode("utf-8", "replace"), file, ref)
            newer = self._worktree[key]
            older = self._blob_object(file, versions[0].blob, ref)
            if newer is None or older is None:
                return None
            if newer is not _MISSING and older is not _MISSING and _differs(newer, older, path):
                return LineChange(_NOT_COMMITTED, datetime.now(timezone.utc), False)
        for i, version in enumerate(versions):
            if version.created or i + 1 >= len(versions) or not versions[i + 1].commit:
                # The file's first version, or older than the versions read: before the object
                # was declared here nothing is known (a repository made or reorganised after
                # the cluster was applied says nothing about who moved).
                return None
            newer = self._blob_object(file, version.blob, ref)
            older = self._blob_object(file, versions[i + 1].blob, ref)
            if newer is None or older is None or newer is _MISSING or older is _MISSING:
                return None  # unreadable, or the object's arrival (or departure): no change of its values
            if _differs(newer, older, path):
                return LineChange(version.commit, version.time, self._by_syncer(version, file))
            if since is not None and version.time <= since:
                return None  # unchanged since before the apply
        return None


def _parse(text: str, file: str, ref: ObjectRef) -> Any:
    from syncer.yamlread import parse_documents
    from syncer.detect.normalize import normalize

    try:
        obj = _find(parse_documents(text, file), ref)
    except (SyncerError, RecursionError, ValueError):
        return None
    return obj if obj is _MISSING else normalize(obj)


def _differs(newer: Any, older: Any, path: Path) -> bool:
    a, b = _at(newer, path), _at(older, path)
    return a != b or type(a) is not type(b)


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
