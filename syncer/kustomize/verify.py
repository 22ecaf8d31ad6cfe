"""The proof of an edit: render the edited copy and read back each drifted value.

A planned edit of a kustomize installation is written only when kustomize, run on a copy
holding the edited files, renders the live value at the drifted path of the drifted object
(found by its name, or for a generated one by its name without the content hash, which the
edit changes). The user's files are not touched; a copy that does not build fails every file.
"""

from __future__ import annotations

from pathlib import Path as FsPath
from typing import Any

from syncer.errors import ConfigError
from syncer.kustomize import render
from syncer.kustomize.fields import HASH, same
from syncer.manifests import object_ref
from syncer.model import Drift, FileError
from syncer.normalize import MISSING, get_path, normalize


def rendered_as_live(host: FsPath, shown_host: str, shown_root: str, inside: str, texts: dict[str, str],
                     drifts: list[Drift], default_namespace: str, helm: bool) -> list[FileError]:
    """One error per drift that the copy of ``host`` with ``texts`` (repo-relative file ->
    text) does not render as its live value; the kustomization rendered is ``inside`` ``host``."""
    prefix = shown_host + "/"
    rel = {f.removeprefix(prefix): t for f, t in texts.items()}
    try:
        docs = render.render(host, shown_root, rel, helm, inside)
    except ConfigError as exc:
        return [FileError(f, f"{f}: not written: the edited kustomization does not build: {exc.message}")
                for f in sorted(texts)]
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    for doc in docs:
        if isinstance(doc, dict):
            try:
                ref = object_ref(doc, default_namespace, "render")
            except ConfigError:
                continue
            found[(ref.kind, ref.namespace, ref.name)] = doc
            found.setdefault((ref.kind, ref.namespace, "~" + HASH.sub("", ref.name)), doc)
    errors = []
    for drift in drifts:
        ref = drift.ref
        now = found.get((ref.kind, ref.namespace, ref.name)) or found.get(
            (ref.kind, ref.namespace, "~" + HASH.sub("", ref.name)))
        got = get_path(normalize(now), drift.path) if now is not None else MISSING
        if got is MISSING or not same(got, drift.live):
            shown = "nothing" if got is MISSING else repr(got)
            errors.append(FileError(drift.file, f"{drift.file}: not written: {ref} {drift.path_text}: the edited "
                                                f"kustomization renders {shown}, live is {drift.live!r}"))
    return errors
