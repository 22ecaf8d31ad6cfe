"""Git's own history as a base: when did git last change the lines of a drifted value?

``git blame`` of the value's lines (the working tree included, so an uncommitted edit counts
as a change made now) gives the newest commit that touched them. Compared with when the
cluster last applied the object (managedFields), it tells whether git moved since:

* changed after the last apply (or after the field's live write, when no applier ever wrote
  the object): git moved -- its change is pending apply;
* last changed by syncer's own write-back commit: git holds a value it copied from the
  cluster, so git did not move since and a different live value means the cluster did;
* otherwise: no answer.

Failures (not a git repository, a file git does not track, a shallow boundary, a partial
clone missing old versions, a timeout) mean "no answer", never an error: the other bases
still decide. Only local objects are read: nothing is fetched.
"""

from __future__ import annotations

import enum
import os
import re
import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path as FsPath

from ruamel.yaml.error import YAMLError

from syncer import yamledit
from syncer.model import Path

#: ``git blame`` of a few lines takes milliseconds; a repository on a hung network
#: filesystem must not hang detection.
BLAME_TIMEOUT_S = 10.0
_HEADER = re.compile(r"^([0-9a-f]{40}) \d+ \d+(?: \d+)?$")
_NOT_COMMITTED = "0" * 40


class GitSays(str, enum.Enum):
    MOVED = "moved"  # git changed these lines after the cluster last applied them
    COPIED = "copied"  # the lines were last written by syncer, copying the cluster


@dataclass(frozen=True)
class LineChange:
    """The newest change to a value's lines."""

    commit: str  # 40 hex; all zeros for an uncommitted edit
    time: datetime
    by_syncer: bool


def _span(text: str, doc: int, path: Path) -> tuple[int, int] | None:
    """1-based first and last line of the value at ``path`` of document ``doc`` (with its key)."""
    try:
        docs = yamledit.load(text)
    except (YAMLError, ValueError, RecursionError):
        return None
    if not 0 <= doc < len(docs):
        return None
    base = sum(len(d.text) for d in docs[:doc])
    node, start = docs[doc].root, docs[doc].root.start
    for part in path:
        if node.kind == "map":
            hit = next(((k, v) for k, v in node.items if yamledit.same(yamledit.mapping_key(k), part)), None)
            if hit is None:
                return None
            start, node = hit[0].start, hit[1]
        elif node.kind == "seq" and type(part) is int and 0 <= part < len(node.items):
            node = node.items[part]
            start = node.start
        else:
            return None
    end = max(node.end - 1, start)
    first = text.count("\n", 0, base + start) + 1
    last = text.count("\n", 0, base + end) + 1
    return first, last


class GitHistory:
    """Blame lookups in one repository checkout, cached per file and line range."""

    def __init__(self, repo: FsPath, installation: str) -> None:
        self.repo = repo
        self.syncer_subject = f"syncer({installation}): copy "
        self._texts: dict[str, str | None] = {}
        self._blame: dict[str, tuple[list[str], dict[str, LineChange | None]] | None] = {}

    def _text(self, file: str) -> str | None:
        if file not in self._texts:
            try:
                self._texts[file] = (self.repo / file).read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                self._texts[file] = None
        return self._texts[file]

    def last_change(self, file: str, doc: int, path: Path) -> LineChange | None:
        """The newest change to the lines holding ``path`` (None: unknown)."""
        text = self._text(file)
        span = _span(text, doc, path) if text is not None else None
        if span is None:
            return None
        if file not in self._blame:  # one blame per file, however many of its values drifted
            self._blame[file] = self._run_blame(file)
        blame = self._blame[file]
        if blame is None:
            return None
        line_commits, changes = blame
        newest: LineChange | None = None
        for sha in line_commits[span[0] - 1:span[1]]:
            change = changes.get(sha)
            if change is None:
                return None  # a shallow clone's edge: the real change is older and unknown
            if change.commit == _NOT_COMMITTED:
                return change
            if newest is None or change.time > newest.time or (
                    change.time == newest.time and newest.by_syncer and not change.by_syncer):
                newest = change
        return newest

    def _run_blame(self, file: str) -> tuple[list[str], dict[str, LineChange | None]] | None:
        """The commit of every line of ``file`` (working tree included), and each commit's change."""
        try:
            # Local history only: in a partial clone (the sidecar's, blob-less) blame would fetch
            # every old version of the file from the remote, or ask for credentials; there it
            # fails instead, and git history simply gives no answer.
            env = {**os.environ, "GIT_NO_LAZY_FETCH": "1", "GIT_TERMINAL_PROMPT": "0"}
            proc = subprocess.run(["git", "blame", "--root", "--porcelain", "--", file], cwd=self.repo, env=env,
                                  capture_output=True, text=True, timeout=BLAME_TIMEOUT_S, check=False,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError):
            return None
        if proc.returncode != 0:
            return None
        lines: list[str] = []
        commits: dict[str, dict[str, str]] = {}
        current: dict[str, str] | None = None
        for line in proc.stdout.splitlines():
            m = _HEADER.match(line)
            if m:
                lines.append(m.group(1))
                current = commits.setdefault(m.group(1), {})
            elif current is not None and not line.startswith("\t"):
                name, _, value = line.partition(" ")
                current.setdefault(name, value)
        changes: dict[str, LineChange | None] = {}
        now = datetime.now(timezone.utc)
        for sha, info in commits.items():
            if sha == _NOT_COMMITTED:
                changes[sha] = LineChange(sha, now, False)
            elif "boundary" in info or "committer-time" not in info:
                changes[sha] = None
            else:
                changes[sha] = LineChange(sha, datetime.fromtimestamp(int(info["committer-time"]), timezone.utc),
                                          info.get("summary", "").startswith(self.syncer_subject))
        return lines, changes


def judge(change: LineChange | None, applied_at: datetime | None) -> tuple[GitSays, str] | None:
    """What the newest change to a value's lines says about git, against when the cluster last
    applied the object; with one line saying why."""
    if change is None:
        return None
    what = "an uncommitted edit" if change.commit == _NOT_COMMITTED else f"commit {change.commit[:12]}"
    when = change.time.strftime("%Y-%m-%dT%H:%M:%SZ")
    if change.by_syncer:
        return GitSays.COPIED, f"git's lines were last written by syncer's copy from the cluster ({what} at {when})"
    if applied_at is not None and change.time > applied_at:
        return GitSays.MOVED, (f"git changed these lines in {what} at {when}, after the cluster last applied them "
                               f"at {applied_at.strftime('%Y-%m-%dT%H:%M:%SZ')}")
    return None
