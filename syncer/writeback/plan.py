"""Apply accepted drifts to manifest files, surgically. Pure text in, text out: what it
remembers between passes (plans and parses, pure functions of a file's text and the edits)
lives in the caller's ``Caches`` (``planned``, ``parsed``).

Only files holding a drift are parsed again (with the position-keeping ``yamledit``);
a file without accepted drift is never rewritten. Nothing outside ``hosts/<installation>/``
is ever touched.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from collections.abc import Callable

from syncer.cache import Caches
from syncer.errors import ConfigError
from syncer.sources.manifests import GitObject
from syncer import templating
from syncer.yamlread import parse_documents
from syncer.model import LINE, Drift, Edit, FileError, ObjectRef, format_path
from syncer.detect.normalize import MISSING, get_path
from syncer.secrets import values
from syncer.writeback.editorparse import parsed_for_edit, read_back
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
        # a line that is a secret by its key (unchanged: the only ones a written diff can hold) is
        # shown without its value: the file keeps it, the terminal and the logs need not
        shown = (line if line.startswith(("---", "+++", "@@")) else line[:1] + values.shown_line(line[1:])
                 for line in lines)
        out = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in shown)
        return out.replace("\r\n", "\n")


#: A new text planned (``Caches.planned``, by file, hash of its text and the edits): the sidecar
#: plans the same held drifts pass after pass, and parsing a file with the position-keeping
#: editor is the slow part (pure-Python parser). The result is a pure function of the key.
Planned = tuple[str, tuple[tuple[ObjectRef, str, str], ...]]  # new text, kept trailing comments


def _apply(data: Any, edit_path: tuple[str | int, ...], edit: Edit) -> None:
    """``edit`` applied to plain data (what the file must read back as afterwards)."""
    parent = get_path(data, edit_path[:-1])
    if parent is MISSING and edit.add and _new_map(data, edit_path):
        parent = get_path(data, edit_path[:-2])[edit_path[-2]] = {}
    if parent is MISSING:
        raise ConfigError(f"no {format_path(edit_path[:-1]) or '<root>'} to edit")
    if edit.add and isinstance(edit_path[-1], int):
        parent.append(copy.deepcopy(edit.value))
    else:
        parent[edit_path[-1]] = copy.deepcopy(edit.value)


def _new_map(data: Any, edit_path: tuple[str | int, ...]) -> bool:
    """Is ``edit_path`` a key of a map git lacks whose parent map git has (annotations added
    live to a manifest without ``annotations:``)? Then the keys go in as a new map."""
    return (len(edit_path) >= 2 and isinstance(edit_path[-2], str) and not isinstance(edit_path[-1], int)
            and get_path(data, edit_path[:-1]) is MISSING and isinstance(get_path(data, edit_path[:-2]), dict))


def _missing_in(doc: YamlFile, index: int, path: tuple[str | int, ...]) -> bool:
    try:
        doc.get(index, path)
    except YamlEditError:
        return True
    return False


def _first_difference(a: Any, b: Any, path: tuple[str | int, ...] = ()) -> tuple[str | int, ...] | None:
    """Where ``a`` and ``b`` first differ (types count: ``1`` is not ``true``); None when equal."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            if key not in a or key not in b:
                return path + (key,)
            found = _first_difference(a[key], b[key], path + (key,))
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return path
        for i, (x, y) in enumerate(zip(a, b)):
            found = _first_difference(x, y, path + (i,))
            if found is not None:
                return found
        return None
    return None if a == b and type(a) is type(b) else path


def _refuse_templated(want: list[Any], steps: list[tuple[Drift, GitObject, Edit]],
                      substituted: Callable[[], frozenset[str] | None]) -> None:
    """ConfigError when a value an edit replaces is a template (``templating``): that value is
    a tool's input, not what the cluster got. The file's other values are written as usual."""
    for drift, obj, edit in steps:
        if edit.add:
            continue
        held = get_path(want[obj.doc], obj.prefix + edit.path) if 0 <= obj.doc < len(want) else MISSING
        if held is MISSING:
            continue
        found = templating.marks(held, None)
        if found and "{{" not in found:
            found = templating.marks(held, substituted())
        if found:
            raise ConfigError(f"cannot write {drift.ref} {drift.path_text}: templated (git holds {found})")


def _merged(want: list[Any], steps: list[tuple[Drift, GitObject, Edit]]) -> list[tuple[Drift, GitObject, Edit]]:
    """``steps`` with the edits that each rewrite one multi-line string (an inline patch of a
    kustomization, each with one of its lines changed) merged into one: their changed lines
    together. ConfigError when two of them change the same lines differently."""
    by_place: dict[tuple[int, tuple[str | int, ...]], list[int]] = defaultdict(list)
    for i, (_, obj, edit) in enumerate(steps):
        if not edit.add and isinstance(edit.value, str) and "\n" in edit.value:
            by_place[(obj.doc, obj.prefix + edit.path)].append(i)
    drop: set[int] = set()
    out = list(steps)
    for (doc, full), indexes in by_place.items():
        if len(indexes) < 2:
            continue
        held = get_path(want[doc], full) if 0 <= doc < len(want) else MISSING
        if not isinstance(held, str):
            continue
        drift, obj, edit = steps[indexes[0]]
        text = _merge_lines(held, [str(steps[i][2].value) for i in indexes])
        if text is None:
            raise ConfigError(f"cannot write {drift.ref} {drift.path_text}: two edits change the same lines of "
                              f"{format_path(full)}")
        out[indexes[0]] = (drift, obj, replace(edit, value=text))
        drop.update(indexes[1:])
    return [step for i, step in enumerate(out) if i not in drop]


def _merge_lines(old: str, news: list[str]) -> str | None:
    """``old`` with the changed lines of every text of ``news`` (each ``old`` with some lines
    replaced), or None when two of them change overlapping lines differently."""
    base = old.splitlines(keepends=True)
    changes: dict[tuple[int, int], list[str]] = {}
    for new in news:
        lines = new.splitlines(keepends=True)
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, base, lines, autojunk=False).get_opcodes():
            if tag == "equal":
                continue
            if any(a < i2 and i1 < b or (a, b) == (i1, i2) for a, b in changes if changes[(a, b)] != lines[j1:j2]):
                return None
            changes[(i1, i2)] = lines[j1:j2]
    out, at = [], 0
    for (i1, i2), lines in sorted(changes.items()):
        out.extend(base[at:i1])
        out.extend(lines)
        at = max(at, i2)
    out.extend(base[at:])
    return "".join(out)


def _edit(file: str, old: str, steps: list[tuple[Drift, GitObject, Edit]], caches: Caches,
          substituted: Callable[[], frozenset[str] | None] = lambda: None) -> Planned:
    """New text of one file and its kept trailing comments; ConfigError (one line, without the
    file name) when it cannot be written exactly."""
    doc, want = parsed_for_edit(file, old, {obj.doc for _, obj, _ in steps}, caches)
    if ("{{" in old or "${" in old) and not all(edit.values for _, _, edit in steps):
        _refuse_templated(want, steps, substituted)  # a chart's values may hold templates for tpl
    steps = _merged(want, _inner_edits(file, doc, steps))
    comments: list[tuple[ObjectRef, str, str]] = []
    # Keys added to one mapping one after the other go in as one edit: linear in the number
    # of keys (10,000 keys added live are one splice and one check, not 10,000).
    adds: list[tuple[Drift, GitObject, Edit]] = []

    def flush() -> None:
        if not adds:
            return
        drift, obj, edit = adds[0]
        full = obj.prefix + edit.path
        items = [(str(e.path[-1]), e.value) for _, _, e in adds]
        try:
            if _missing_in(doc, obj.doc, full[:-1]) and isinstance(doc.get(obj.doc, full[:-2]), dict):
                doc.add_keys(obj.doc, full[:-2], [(str(full[-2]), dict(items))])
            else:
                doc.add_keys(obj.doc, full[:-1], items)
        except YamlEditError as exc:
            raise ConfigError(f"cannot write {drift.ref} {drift.path_text}: {exc}") from exc
        adds.clear()

    for drift, obj, edit in steps:
        full = obj.prefix + edit.path
        if edit.add and not isinstance(full[-1], int):
            if adds and (adds[0][1].doc, (adds[0][1].prefix + adds[0][2].path)[:-1]) != (obj.doc, full[:-1]):
                flush()
            adds.append((drift, obj, edit))
            try:
                _apply(want[obj.doc], full, edit)
            except ConfigError as exc:
                raise ConfigError(f"cannot write {drift.ref} {drift.path_text}: {exc.message}") from exc
            continue
        flush()
        try:
            if edit.add:  # a whole list item (keys added are batched above)
                doc.append_item(obj.doc, full[:-1], edit.value)
            else:
                comment = doc.trailing_comment(obj.doc, full)
                doc.set_value(obj.doc, full, edit.value)
                if comment:
                    comments.append((drift.ref, drift.path_text, comment))
            _apply(want[obj.doc], full, edit)
        except YamlEditError as exc:
            raise ConfigError(f"cannot write {drift.ref} {drift.path_text}: {exc}") from exc
        except ConfigError as exc:
            raise ConfigError(f"cannot write {drift.ref} {drift.path_text}: {exc.message}") from exc
    flush()
    new = doc.render()
    # Verification: read the new text as kubectl will, and demand exactly git plus the
    # accepted live values -- nothing else may have changed anywhere in the file.
    got = read_back(new, file, doc.pieces(), want, {obj.doc for _, obj, _ in steps})
    where = _first_difference(want, got) if len(got) == len(want) else ()
    if where is not None:
        at = f"document {int(where[0]) + 1} {format_path(where[1:]) or '<root>'}" if where else "document count"
        raise ConfigError(f"verification failed: the edited file would not read back as git plus the accepted "
                          f"live values (at {at})")
    return new, tuple(comments)


def _inner_edits(file: str, doc: YamlFile, steps: list[tuple[Drift, GitObject, Edit]]
                 ) -> list[tuple[Drift, GitObject, Edit]]:
    """``steps`` with the edits inside one YAML text held in a value (``Edit.inner``: a values
    document in a block scalar) made into one edit of that value: the text edited with the
    same surgical editor, so its comments and format stay."""
    groups: dict[tuple[int, tuple[str | int, ...]], list[tuple[Drift, GitObject, Edit]]] = {}
    out: list[tuple[Drift, GitObject, Edit]] = []
    for step in steps:
        _, obj, edit = step
        if edit.inner:
            groups.setdefault((obj.doc, obj.prefix + edit.path), []).append(step)
        else:
            out.append(step)
    for (index, full), group in groups.items():
        drift, obj, edit = group[0]
        try:
            held = doc.get(index, full)
            if not isinstance(held, str):
                raise ConfigError(f"{format_path(full)} holds no YAML text")
            inner = YamlFile.parse(held, f"{file} {format_path(full)}")
            for _, _, step_edit in group:
                inner.set_value(0, step_edit.inner, step_edit.value)
            text = inner.render()
            if parse_documents(text, file)[:1] != [_inner_want(held, file, group)]:
                raise ConfigError(f"the edited text of {format_path(full)} would not read back as intended")
        except YamlEditError as exc:
            raise ConfigError(f"cannot write {drift.ref} {drift.path_text}: {exc}") from exc
        except ConfigError as exc:
            raise ConfigError(f"cannot write {drift.ref} {drift.path_text}: {exc.message}") from exc
        out.append((drift, obj, replace(edit, value=text, inner=())))
    return out


def _inner_want(held: str, file: str, group: list[tuple[Drift, GitObject, Edit]]) -> Any:
    docs = parse_documents(held, file)
    want = copy.deepcopy(docs[0]) if docs else None
    for _, _, edit in group:
        _apply(want, edit.inner, replace(edit, add=False))
    return want


def _edit_lines(old: str, steps: list[tuple[Drift, GitObject, Edit]]) -> Planned:
    """New text of a file that is not YAML (an env file): whole lines replaced, nothing else;
    or (an edit at path ``()``: a generator's ``files:`` source) the whole text."""
    for drift, _, edit in steps:
        if edit.doc == LINE and edit.path == () and isinstance(edit.value, str):
            if len(steps) != 1:
                raise ConfigError(f"cannot write {drift.ref} {drift.path_text}: the file is one value, set twice")
            return edit.value, ()
    lines = old.splitlines(keepends=True)
    for drift, _, edit in steps:
        index = edit.path[0] if edit.doc == LINE and len(edit.path) == 1 else None
        if not isinstance(index, int) or not 0 <= index < len(lines) or not isinstance(edit.value, str) \
                or "\n" in edit.value or "\r" in edit.value:
            raise ConfigError(f"cannot write {drift.ref} {drift.path_text}: not one line of this file")
        body = lines[index].rstrip("\r\n")
        lines[index] = edit.value + lines[index][len(body):]
    return "".join(lines), ()


def _target(obj: GitObject, edit: Edit) -> GitObject:
    """Where ``edit`` applies: inside its object, or (a rendered object's field) at a path of
    another document of the drift's file."""
    return obj if edit.doc is None else replace(obj, doc=edit.doc, prefix=())


def plan_changes(
    repo: Path, installation: str, drifts: Iterable[Drift], objects: dict[ObjectRef, GitObject],
    aborted: list[FileError] | None = None, *, caches: Caches | None = None,
) -> list[FileChange]:
    """New text of every file the ``drifts`` touch (files read from ``repo``); ``caches``
    remembers plans and parses across calls (None: nothing remembered).

    A file whose edits cannot be made exactly (or that is templated) is left untouched: with
    ``aborted`` given, one line saying why is added to it and the other files are still
    planned; without it, ConfigError is raised.
    """
    by_file: dict[str, list[Drift]] = defaultdict(list)
    for drift in drifts:
        if drift.edits:
            by_file[drift.file].append(drift)
    caches = caches if caches is not None else Caches()
    prefix = f"hosts/{installation}/"
    changes = []
    flux: list[frozenset[str] | None] = []

    def substituted() -> frozenset[str] | None:  # read only when a value holds a ${VAR}
        if not flux:
            flux.append(templating.flux_substitutions(repo))
        return flux[0]

    for file, file_drifts in sorted(by_file.items()):
        if not file.startswith(prefix) or ".." in Path(file).parts:
            raise ConfigError(f"{file}: outside {prefix}; refusing to write")
        path = repo / file
        if path.is_symlink():
            raise ConfigError(f"{file}: is a symlink; refusing to write through it")
        old = path.read_bytes().decode("utf-8")
        steps = [(drift, _target(objects[drift.ref], edit), edit) for drift in file_drifts for edit in drift.edits]
        key = (file, hashlib.sha256(old.encode()).hexdigest(),
               repr([(o.doc, o.prefix + e.path, e.add, e.value, e.inner, e.values) for _, o, e in steps]))
        planned: Planned | None = caches.planned.get(key)
        if planned is None:
            try:
                planned = (_edit_lines(old, steps) if any(e.doc == LINE for _, _, e in steps)
                           else _edit(file, old, steps, caches, substituted))
            except ConfigError as exc:
                if aborted is None:
                    raise ConfigError(f"{file}: {exc.message}") from exc
                aborted.append(FileError(file, f"{file}: not written: {exc.message}"))
                continue
            caches.planned.put(key, planned)
        new, comments = planned
        if new != old:
            changes.append(FileChange(file, old, new, comments))
    return changes


def write_changes(repo: Path, changes: Iterable[FileChange]) -> None:
    for change in changes:
        if not change.old:  # a new file (an untracked object proposed): its directory may be new too
            (repo / change.file).parent.mkdir(parents=True, exist_ok=True)
        # newline="" keeps CRLF files CRLF: the text already carries its own line endings.
        with open(repo / change.file, "w", encoding="utf-8", newline="") as fh:
            fh.write(change.new)
