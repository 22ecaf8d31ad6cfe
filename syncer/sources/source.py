"""The ``Source`` protocol: what every way of turning ``hosts/<installation>/`` into git objects
provides, and the one proof of an edit every rendering source shares.

A source is picked once per load (``syncer.sources.dispatch.source_for``) and bound to its
installation. Its life is the pipeline's: ``load`` (gather: every read of the tree, every render),
then detection compares the objects without asking where they came from, then ``place``
(plan: which file and which line set each drifted field) and ``verify`` (plan: prove each edit
by rendering it). ``place`` and ``verify`` answer for the objects of the source's last ``load``.

What differs between sources is said here, as a property or a method, and nowhere else:
``name``, ``proposes_files`` (and ``new_file_note``), ``declares``, ``history_file``,
``likely_lists``. A new kind of source is one package under ``syncer/sources/`` implementing
this protocol, and one entry in ``dispatch.SOURCES``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from syncer.cache import Caches
from syncer.config import Config
from syncer.model import Drift, FileError
from syncer.sources.manifests import GitObject, Manifests

#: The planned text of every file ``drifts`` edit, as write-back would write it (repo-relative
#: file -> new text), and one line for each file whose edits cannot be made exactly.
Planner = Callable[[Sequence[Drift]], tuple[dict[str, str], list[FileError]]]

#: A source's check of one render with ``texts`` in place of its files: for each of ``drifts``,
#: in order, why its field does not render as its live value, or None (proven).
Check = Callable[[Mapping[str, str], Sequence[Drift]], list[str | None]]


@dataclass(frozen=True)
class Verified:
    """What ``Source.verify`` proved of a set of drifts with edits."""

    #: the drifts whose edits render as live, in the order given: write these
    drifts: tuple[Drift, ...]
    #: each drift refused, with why (``not written: ...``, naming the file); never written
    refused: tuple[tuple[Drift, str], ...] = ()


class Source(Protocol):
    """How one installation's directory becomes git objects (see the module docstring)."""

    #: "manifests", "kustomize", "helm": said in notes and logs
    name: str
    #: an untracked live object may be written here as a new file (plain manifests: a new file
    #: is a new object; a render shows only what its inputs list)
    proposes_files: bool
    #: why not, when ``proposes_files`` is False: what a person does instead, in a few words
    new_file_note: str
    #: what the objects are called in messages: "manifests", "objects kustomize renders"
    declares: str

    def load(self, caches: Caches) -> Manifests:
        """The declared objects, their errors and the files skipped with a note. Every read of
        the tree and every render of loading happens here; ``caches`` keeps what the next load
        may reuse (a render is made again only when a file of its tree changed)."""
        ...

    def checkout_paths(self, caches: Caches) -> list[str]:
        """Repo-relative paths outside ``hosts/<installation>/`` that loading reads (a chart a
        HelmRelease names at the top of the repository): a sparse clone checks them out too."""
        ...

    def history_file(self, obj: GitObject) -> str | None:
        """The file whose git history tells who changed ``obj``'s fields and when, or None when
        no one file does (a render's fields come from several files)."""
        ...

    def likely_lists(self, at_least: int) -> list[tuple[str, str, str]]:
        """(apiVersion, kind, namespace) of the kinds the tree's text plainly declares at least
        ``at_least`` objects of in one namespace, before any load: a guess, to begin their LISTs
        early; [] when nothing can be told without rendering."""
        ...

    def place(self, obj: GitObject, drifts: Sequence[Drift], caches: Caches) -> list[Drift]:
        """``drifts`` of ``obj``, in order, each with the file that sets its field and the edits
        in that file; or (never written: action REPORT, no edits) the reason no single place can
        be told. Runs in the plan step, after detection, and may read the tree and render."""
        ...

    def verify(self, drifts: Sequence[Drift], plan: Planner, caches: Caches) -> Verified:
        """Which of ``drifts`` (each with edits, as ``place`` gave them) may be written: all the
        edits proven together, else each on its own, then the proven ones together (``proven``);
        a refused edit never blocks another. ``plan`` gives the files' new texts for any subset
        of ``drifts``."""
        ...


@dataclass(frozen=True)
class Tools:
    """The programs a source runs, as the command line names them (``--kustomize``, ``--helm``): handed to
    the source as a value, never read from the environment below the command line."""

    #: Renders a kustomization: ``kubectl`` (``kubectl kustomize``) or ``kustomize`` (``kustomize
    #: build``), a name on PATH or a path.
    kustomize: str = "kubectl"
    #: Renders a Helm chart (``helm template``): a name on PATH or a path.
    helm: str = "helm"


DEFAULT_TOOLS = Tools()


class SourceType(Protocol):
    """A kind of source, as ``dispatch.SOURCES`` lists it: whether it claims an installation's
    directory, and the source bound to an installation it claims."""

    def claims(self, host: Path) -> bool: ...

    def __call__(self, repo: Path, installation: str, config: Config, tools: Tools = DEFAULT_TOOLS) -> Source: ...


def proven(drifts: Sequence[Drift], plan: Planner, check: Check) -> Verified:
    """The proof a rendering source gives ``verify``: all the drifts' edits planned and checked
    together (``check``: each field renders as live, nothing else of the render changes); when
    that fails, each alone, then the proven ones together; should two of them disagree together
    (two edits of one place), they are kept one by one, in order, while the whole still checks.
    ``plan``'s failure for a drift refuses that drift."""
    ok: list[Drift] = []
    refused: list[tuple[Drift, str]] = []

    def attempt(chosen: Sequence[Drift]) -> list[str | None]:
        texts, errors = plan(chosen)
        if errors:
            return [_why(errors[0])] * len(chosen)
        return check(texts, chosen) if texts else [None] * len(chosen)

    # What is written is the whole set, so its passing check is the proof of each; the usual
    # case (every edit good) costs one render instead of one per drift, and that render is
    # often the one the place step made for the same texts.
    if len(drifts) > 1 and all(why is None for why in attempt(drifts)):
        return Verified(tuple(drifts), ())
    for drift in drifts:
        why = attempt([drift])[0]
        if why is None:
            ok.append(drift)
        else:
            refused.append((drift, why))
    if len(ok) > 1 and any(why is not None for why in attempt(ok)):
        kept: list[Drift] = []
        for drift in ok:
            why = next((w for w in attempt([*kept, drift]) if w is not None), None)
            if why is None:
                kept.append(drift)
            else:
                refused.append((drift, f"{why} (together with the other edits)"))
        ok = kept
    order = {id(d): i for i, d in enumerate(drifts)}
    return Verified(tuple(ok), tuple(sorted(refused, key=lambda r: order[id(r[0])])))


def _why(error: FileError) -> str:
    """A planning error as a refusal: ``not written: why``, without the file the line starts with."""
    message = error.message
    return message[len(error.file) + 2:] if error.file and message.startswith(error.file + ": ") else message
