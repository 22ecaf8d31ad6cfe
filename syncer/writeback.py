"""Apply accepted drifts to manifest files, surgically. Pure text in, text out.

Only files holding a drift are parsed again (with the position-keeping ``yamledit``);
a file without accepted drift is never rewritten. Nothing outside ``hosts/<installation>/``
is ever touched.
"""

from __future__ import annotations

import difflib
import hashlib
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from syncer.errors import ConfigError
from syncer.manifests import GitObject
from syncer.model import Drift, Edit, ObjectRef
from syncer.yamledit import YamlEditError, YamlFile


@dataclass(frozen=True)
class FileChange:
    file: str  # repo-relative
    old: str
    new: str
    #: (object, field, comment) for each changed value whose line ends in a comment: the edit
    #: keeps the comment, which may now describe the old value.
    comments: tuple[tuple[ObjectRef, str, str], ...] = ()

    def unified_diff(self) -> str:
        lines = difflib.unified_diff(
            self.old.splitlines(keepends=True), self.new.splitlines(keepends=True),
            fromfile=f"a/{self.file}", tofile=f"b/{self.file}",
        )
        out = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
        return out.replace("\r\n", "\n")


#: New texts already planned, by (file, hash of its text, the edits): the sidecar plans the same
#: held drifts pass after pass, and parsing a file with the position-keeping editor is the
#: slow part (pure-Python parser). The result is a pure function of the key.
Planned = tuple[str, tuple[tuple[ObjectRef, str, str], ...]]  # new text, kept trailing comments
_PLANNED: OrderedDict[tuple[str, str, str], Planned] = OrderedDict()
_PLANNED_MAX = 512
_PLANNED_LOCK = threading.Lock()


def _remember(key: tuple[str, str, str], new: Planned) -> None:
    with _PLANNED_LOCK:
        _PLANNED[key] = new
        while len(_PLANNED) > _PLANNED_MAX:
            _PLANNED.popitem(last=False)


def _edit(file: str, old: str, steps: list[tuple[Drift, GitObject, Edit]]) -> Planned:
    doc = YamlFile.parse(old, file)
    comments: list[tuple[ObjectRef, str, str]] = []
    for drift, obj, edit in steps:
        full = obj.prefix + edit.path
        try:
            if edit.add:
                doc.add_key(obj.doc, full[:-1], str(full[-1]), edit.value)
            else:
                comment = doc.trailing_comment(obj.doc, full)
                doc.set_value(obj.doc, full, edit.value)
                if comment:
                    comments.append((drift.ref, drift.path_text, comment))
        except YamlEditError as exc:
            raise ConfigError(f"{file}: cannot write {drift.ref} {drift.path_text}: {exc}") from exc
    return doc.render(), tuple(comments)


def plan_changes(
    repo: Path, installation: str, drifts: Iterable[Drift], objects: dict[ObjectRef, GitObject]
) -> list[FileChange]:
    """New text of every file the ``drifts`` touch (files read from ``repo``)."""
    by_file: dict[str, list[Drift]] = defaultdict(list)
    for drift in drifts:
        if drift.edits:
            by_file[drift.file].append(drift)
    prefix = f"hosts/{installation}/"
    changes = []
    for file, file_drifts in sorted(by_file.items()):
        if not file.startswith(prefix) or ".." in Path(file).parts:
            raise ConfigError(f"{file}: outside {prefix}; refusing to write")
        path = repo / file
        if path.is_symlink():
            raise ConfigError(f"{file}: is a symlink; refusing to write through it")
        old = path.read_bytes().decode("utf-8")
        steps = [(drift, objects[drift.ref], edit) for drift in file_drifts for edit in drift.edits]
        key = (file, hashlib.sha256(old.encode()).hexdigest(),
               repr([(o.doc, o.prefix + e.path, e.add, e.value) for _, o, e in steps]))
        planned = _PLANNED.get(key)
        if planned is None:
            planned = _edit(file, old, steps)
            _remember(key, planned)
        new, comments = planned
        if new != old:
            changes.append(FileChange(file, old, new, comments))
    return changes


def write_changes(repo: Path, changes: Iterable[FileChange]) -> None:
    for change in changes:
        # newline="" keeps CRLF files CRLF: the text already carries its own line endings.
        with open(repo / change.file, "w", encoding="utf-8", newline="") as fh:
            fh.write(change.new)
