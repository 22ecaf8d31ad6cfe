"""The plan step's questions to the source: where each drifted field is written, and whether its
edit may be.

Detection compares objects without asking where their fields come from. After it, ``placed``
hands each object's drifts to its source (``Source.place``: the file and the edits, or why no
single place can be told), so ``syncer diff`` shows every drift's own file; and ``proved``
plans the file edits (``plan.plan_changes``) and has the source prove them (``Source.verify``):
each edit on its own, then together, a refused one never blocking the others, every file
written with the edits that were proven.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from syncer.cache import Caches
from syncer.errors import ConfigError
from syncer.model import Drift, FileError, ObjectRef, Result
from syncer.sources.manifests import GitObject
from syncer.sources.source import Source
from syncer.writeback.plan import FileChange, plan_changes


def placed(git: Source, objects: Mapping[ObjectRef, GitObject], result: Result, caches: Caches) -> Result:
    """``result`` with the drifts of each declared object placed by its source, in order. An
    object whose source cannot be read to place them is one error; its drifts are left out."""
    at: dict[ObjectRef, list[int]] = {}
    for i, drift in enumerate(result.drifts):
        if drift.ref in objects:  # an untracked object is declared nowhere: nothing to place
            at.setdefault(drift.ref, []).append(i)
    drifts: list[Drift | None] = list(result.drifts)
    errors: list[FileError] = []
    failed: set[ObjectRef] = set()
    for ref, indexes in at.items():
        obj = objects[ref]
        try:
            found = git.place(obj, [result.drifts[i] for i in indexes], caches)
        except ConfigError as exc:
            errors.append(FileError(obj.file, f"{ref}: {exc.message}"))
            failed.add(ref)
            for i in indexes:
                drifts[i] = None
            continue
        for i, drift in zip(indexes, found, strict=True):
            drifts[i] = drift
    if not failed:
        return replace(result, drifts=tuple(d for d in drifts if d is not None))
    return replace(result, drifts=tuple(d for d in drifts if d is not None), errors=result.errors + tuple(errors),
                   checked=tuple(r for r in result.checked if r not in failed))


def proved(git: Source, repo: Path, installation: str, drifts: Sequence[Drift],
           objects: dict[ObjectRef, GitObject], aborted: list[FileError],
           caches: Caches, refused: list[tuple[Drift, str]] | None = None) -> tuple[list[Drift], list[FileChange]]:
    """The drifts to write (of ``drifts``, in order) and the file changes that write them.

    A file whose edits cannot be made exactly together is planned again one drift at a time:
    a drift whose own edit cannot be made is refused, the others of that file go on (a file none
    of whose edits can be made is left out, one line in ``aborted``). The source then proves the
    rest (``Source.verify``), a refused one never blocking another. Refused drifts (with why)
    go into ``refused`` when given (to be reported as such), else one line each in ``aborted``."""
    said: list[tuple[Drift, str]] = []
    failed: list[FileError] = []
    plan_changes(repo, installation, drifts, objects, failed, caches=caches)
    unplanned = {e.file for e in failed}
    for file in sorted(unplanned):
        mine = [d for d in drifts if d.edits and d.file == file]
        alone: list[tuple[Drift, str]] = []
        for drift in mine:
            errors: list[FileError] = []
            plan_changes(repo, installation, [drift], objects, errors, caches=caches)
            if errors:
                alone.append((drift, _why(errors[0])))
        if len(alone) == len(mine):
            aborted.extend(e for e in failed if e.file == file)  # nothing of it can be written
        else:
            said.extend(alone)
    gone = {id(d) for d, _ in said} | {id(d) for d in drifts if d.edits and d.file in unplanned
                                       and any(e.file == d.file for e in aborted)}
    drifts = [d for d in drifts if id(d) not in gone]

    def plan(chosen: Sequence[Drift]) -> tuple[dict[str, str], list[FileError]]:
        errors: list[FileError] = []
        planned = plan_changes(repo, installation, chosen, objects, errors, caches=caches)
        return {c.file: c.new for c in planned}, errors

    verified = git.verify([d for d in drifts if d.edits], plan, caches)
    said.extend(verified.refused)
    if refused is not None:
        refused.extend(said)
    else:
        aborted.extend(FileError(d.file, f"{d.file}: {why}") for d, why in said)
    out = {id(d) for d, _ in said}
    drifts = [d for d in drifts if id(d) not in out]
    return drifts, plan_changes(repo, installation, drifts, objects, aborted, caches=caches)


def _why(error: FileError) -> str:
    """A planning error as a refusal: ``not written: why``, without the file the line starts with."""
    message = error.message
    return message[len(error.file) + 2:] if error.file and message.startswith(error.file + ": ") else message
