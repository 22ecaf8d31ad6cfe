"""The kinds ``syncer.conf`` names (``track:``, ``optional:``) checked against what exists.

A typo there must not pass silently: ``Configmap: writeback`` would leave every ConfigMap
``report`` (kinds not listed are reported), and the installation would quietly never be
written back. A kind is fine when a manifest declares it. One no manifest declares is checked
against the cluster when one is at hand (discovery: any API group serving a kind of that
name; the untracked objects of a kind can be looked for without declaring one), else against
the kinds Kubernetes serves by itself, by spelling: a near match (``ConfigMap`` for
``Configmap``) is an error that names it; a name like no known kind (a custom resource's
kind) is one note, since without a cluster nothing says it is wrong.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from syncer.config import Config
from syncer.errors import ConfigError
from syncer.kinds import BUILTIN_KINDS
from syncer.gather.live import LiveSource
from syncer.model import FileError

#: How alike two kind names must be (difflib's ratio, case ignored) to be offered as the one meant.
NEAR = 0.8


def near_match(kind: str, known: Iterable[str]) -> str | None:
    """The known kind ``kind`` most likely misspells (same letters in another case first), or None."""
    names = sorted(set(known) - {kind})
    same = [k for k in names if k.lower() == kind.lower()]
    if same:
        return same[0]
    lowered = {k.lower(): k for k in names}
    found = difflib.get_close_matches(kind.lower(), list(lowered), n=1, cutoff=NEAR)
    return lowered[found[0]] if found else None


def check_kinds(config: Config, declared: Iterable[str], source: LiveSource) -> list[FileError]:
    """Raise a ``ConfigError`` for the first kind of ``track:`` or ``optional:`` that no manifest
    declares and nothing serves (naming the near match); the notes for kinds that could not be
    checked. ``declared``: the kinds of the installation's objects."""
    have = set(declared)
    named = [(f"track.{kind}", kind) for kind in config.track] + [("optional", kind) for kind in sorted(config.optional)]
    unknown = [(key, kind) for key, kind in named if kind not in have]
    if not unknown:
        return []
    served = source.served_kinds()
    notes: list[FileError] = []
    for key, kind in unknown:
        if served is not None and kind in served:
            continue  # served (another API group, a CRD): fine, declared or not
        if served is None and kind in BUILTIN_KINDS:
            continue
        guess = near_match(kind, have | BUILTIN_KINDS | (served or set()))
        hint = f" (did you mean {guess}?)" if guess else ""
        if served is not None:
            raise ConfigError(f"{config.source}: {key}: no manifest declares kind {kind} and the API server serves no "
                              f"kind of that name{hint}; kinds are spelt as in a manifest's `kind:`")
        if guess is not None:
            raise ConfigError(f"{config.source}: {key}: no manifest declares kind {kind}, and Kubernetes has no kind of "
                              f"that name{hint}; kinds are spelt as in a manifest's `kind:`")
        notes.append(FileError(config.source, f"{config.source}: {key}: no manifest declares kind {kind}, and "
                                              f"{source.describe()} cannot tell whether a cluster serves it "
                                              "(not checked)"))
    return notes
