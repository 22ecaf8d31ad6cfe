"""The proof of an edit: render the edited copy and read back each drifted value.

A planned edit of a kustomize installation is written only when kustomize, run on a copy
holding the edited files, renders the live value at the drifted path of the drifted object
(found by its name, or for a generated one by its name without the content hash, which the
edit changes), and nothing else of the render changes. The user's files are not touched; a copy
that does not build fails every drift checked with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path as FsPath
from typing import Any

from syncer.errors import ConfigError
from syncer.sources.kustomize import render
from syncer.sources.kustomize.fields import HASH, same
from syncer.sources.manifests import object_ref
from syncer.model import Drift, FileError, ObjectRef, Path, format_path
from syncer.detect.normalize import MISSING, get_path, normalize


Key = tuple[str, str, str]


def _index(docs: list[Any], default_namespace: str) -> dict[Key, dict[str, Any]]:
    found: dict[Key, dict[str, Any]] = {}
    for doc in docs:
        if isinstance(doc, dict):
            try:
                ref = object_ref(doc, default_namespace, "render")
            except ConfigError:
                continue
            found[(ref.kind, ref.namespace, ref.name)] = doc
            found.setdefault((ref.kind, ref.namespace, "~" + HASH.sub("", ref.name)), doc)
    return found


def _differences(a: Any, b: Any, path: Path = ()) -> list[Path]:
    """Where two rendered objects differ (a list of another length differs as a whole)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [p for k in {**a, **b} for p in (_differences(a.get(k, MISSING), b.get(k, MISSING), path + (k,)))]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b)) for p in _differences(x, y, path + (i,))]
    return [] if a == b and type(a) is type(b) else [path]


def _renamed(value: Any, names: dict[str, str]) -> Any:
    """``value`` with every generated name the edit re-hashed replaced by its new name."""
    if isinstance(value, dict):
        return {k: _renamed(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, names) for v in value]
    return names.get(value, value) if isinstance(value, str) else value


def _side_effects(before: dict[ObjectRef, dict[str, Any]], after: dict[Key, dict[str, Any]],
                  drifts: Sequence[Drift]) -> list[str]:
    """What the edits changed in the render beyond the drifted values (an ``images:`` entry
    that also sets another container, a base shared by two objects): ``Kind/ns/name path``."""
    names = {}
    for ref in before:
        now = after.get((ref.kind, ref.namespace, "~" + HASH.sub("", ref.name)))
        new = (now.get("metadata") or {}).get("name") if now is not None else None
        if isinstance(new, str) and new != ref.name and HASH.sub("", new) == HASH.sub("", ref.name):
            names[ref.name] = new
    allowed: dict[ObjectRef, list[Path]] = {}
    for drift in drifts:
        allowed.setdefault(drift.ref, []).append(drift.path)
    out = []
    for ref, old in before.items():
        now = after.get((ref.kind, ref.namespace, ref.name)) or after.get(
            (ref.kind, ref.namespace, "~" + HASH.sub("", ref.name)))
        if now is None:
            out.append(f"{ref} (no longer rendered)")
            continue
        for path in _differences(normalize(_renamed(old, names)), normalize(now)):
            if not any(path[:len(p)] == p or p[:len(path)] == path for p in allowed.get(ref, [])):
                out.append(f"{ref} {format_path(path) or '(object)'}")
    return out


def check_render(host: FsPath, shown_root: str, inside: str, texts: Mapping[str, str], drifts: Sequence[Drift],
                 default_namespace: str, helm: bool, before: dict[ObjectRef, dict[str, Any]]) -> list[str | None]:
    """For each of ``drifts``, in order, why the copy of ``host`` with ``texts`` (path relative
    to ``host`` -> text) does not render it as its live value, or None; the kustomization
    rendered is ``inside`` ``host``. An edit that changes anything else of the render than the
    drifted values (``before``: the render without the edits) fails every drift checked."""
    try:
        docs = render.render(host, shown_root, texts, helm, inside)
    except ConfigError as exc:
        return [f"not written: the edited kustomization does not build: {exc.message}"] * len(drifts)
    found = _index(docs, default_namespace)
    extra = _side_effects(before, found, drifts)
    if extra:
        return [f"not written: the edit would also change {', '.join(extra[:3])}{' ...' if len(extra) > 3 else ''} "
                "(that place sets more than the drifted value)"] * len(drifts)
    out: list[str | None] = []
    for drift in drifts:
        ref = drift.ref
        now = found.get((ref.kind, ref.namespace, ref.name)) or found.get(
            (ref.kind, ref.namespace, "~" + HASH.sub("", ref.name)))
        got = get_path(normalize(now), drift.path) if now is not None else MISSING
        if got is MISSING or not same(got, drift.live):
            shown = "nothing" if got is MISSING else repr(got)
            out.append(f"not written: {ref} {drift.path_text}: the edited kustomization renders {shown}, "
                       f"live is {drift.live!r}")
        else:
            out.append(None)
    return out
