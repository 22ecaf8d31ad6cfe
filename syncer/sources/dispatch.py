"""The source of git objects, one seam: ``hosts/<installation>/`` as plain manifest files, or
as what kustomize renders from it (the directory holds a ``kustomization.yaml``).

Both give a ``Manifests``: the declared objects by ref. Plain files need nothing more (a
field lives in its object's file); a rendered source adds a ``SourceMap`` (which file and
position set each field, and a re-render that verifies an edit). Detection does not know
which one it got: it hands its drifts to ``source_map.place`` when there is one.
"""

from __future__ import annotations

import os
from pathlib import Path

from syncer.cache import Caches
from syncer.sources.manifests import GitObject, Manifests, SourceMap, host_dir, load_manifests
from syncer.model import Drift, FileError, ObjectRef
from syncer.writeback.plan import FileChange, plan_changes

#: The names kustomize looks for in a directory, in its order.
KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def kustomization_file(directory: Path) -> Path | None:
    """The kustomization file of ``directory``, or None (then it is not a kustomization)."""
    for name in KUSTOMIZATION_NAMES:
        path = directory / name
        if path.is_file():
            return path
    return None


def is_rendered(repo: Path, installation: str) -> bool:
    """Is ``hosts/<installation>/`` a kustomization (rendered) rather than plain files? It is
    when it holds a kustomization file, or one of its directories does (an overlay over a
    base: plain reading would take them for manifests without a kind)."""
    host = host_dir(repo, installation)
    if kustomization_file(host) is not None:
        return True
    names = set(KUSTOMIZATION_NAMES)  # os.walk: no stat per file (the sidecar asks every pass)
    return any(not names.isdisjoint(files) for _, _, files in os.walk(host))


def load_source(repo: Path, installation: str, default_namespace: str, *,
                caches: Caches | None = None) -> Manifests:
    """The objects ``hosts/<installation>/`` declares: rendered by kustomize when it holds a
    kustomization, else its manifest files as they are. ``caches``: what the last loads
    remember (None: nothing)."""
    if is_rendered(repo, installation):
        from syncer.sources.kustomize import load_rendered

        return load_rendered(repo, installation, default_namespace, caches=caches)
    return load_manifests(repo, installation, default_namespace, caches=caches)


def verified(repo: Path, changes: list[FileChange], drifts: list[Drift], source_map: SourceMap,
             aborted: list[FileError]) -> list[FileChange]:
    """The planned ``changes`` whose result renders as the live values: the files of a drift
    that does not verify are left out (one line each in ``aborted``), and the rest checked again."""
    keep = list(changes)
    while keep:
        files = {c.file for c in keep}
        errors = source_map.verify(repo, {c.file: c.new for c in keep},
                                   [d for d in drifts if d.edits and d.file in files])
        if not errors:
            break
        aborted.extend(e for e in errors if e not in aborted)
        bad = {e.file for e in errors}
        if not bad & files:
            return []  # an error naming no planned file: nothing can be trusted
        keep = [c for c in keep if c.file not in bad]
    return keep


def verify_each(repo: Path, installation: str, drifts: list[Drift], objects: dict[ObjectRef, GitObject],
                source_map: SourceMap, caches: Caches | None = None) -> tuple[list[FileChange], list[tuple[Drift, str]]]:
    """The file changes of the ``drifts`` whose edits are proven, and the others with the reason.

    Each drift's edits are planned and rendered on their own (the live value rendered, nothing
    else of the render changed); a drift that fails is refused with its reason and blocks no
    other, even in the same file. The proven ones are then planned and rendered together; should
    two of them disagree together (two edits of one inline patch), they are kept one by one in
    order while the whole still renders right."""
    ok: list[Drift] = []
    refused: list[tuple[Drift, str]] = []

    def attempt(chosen: list[Drift]) -> tuple[list[FileChange], str]:
        aborted: list[FileError] = []
        changes = plan_changes(repo, installation, chosen, objects, aborted, caches=caches)
        if aborted:
            return [], _reason(aborted[0])
        errors = source_map.verify(repo, {c.file: c.new for c in changes}, chosen) if changes else []
        return changes, (_reason(errors[0]) if errors else "")

    for drift in drifts:
        if not drift.edits:
            continue
        _, why = attempt([drift])
        if why:
            refused.append((drift, why))
        else:
            ok.append(drift)
    changes, why = attempt(ok)
    if why:
        kept: list[Drift] = []
        for drift in ok:
            trial, why = attempt([*kept, drift])
            if why:
                refused.append((drift, f"{why} (together with the other edits)"))
            else:
                kept, changes = [*kept, drift], trial
        changes = attempt(kept)[0] if kept else []
    return changes, refused


def _reason(error: FileError) -> str:
    """``<file>: not written: why`` as a drift's reason (``not written: why``)."""
    message = error.message
    return message[len(error.file) + 2:] if error.file and message.startswith(error.file + ": ") else message
