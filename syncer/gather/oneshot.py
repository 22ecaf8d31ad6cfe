"""What a one-shot command (``syncer diff``) does to finish sooner, that the sidecar must not.

A one-shot command builds its whole world once (every manifest parsed, every live object
read) and ends. Python's cyclic collector finds nothing to free in that world, yet walks it
again and again as it grows (about 9 % of a 5,000-object ``syncer diff``), and once more
when the interpreter ends (0.2-0.4 s at 5,000 objects: the process had printed its answer
already). Reference counting still frees everything that is not a cycle, as always.

And the API server is not left idle while the manifests are parsed: the LISTs of the kinds
the files plainly declare many objects of begin first, in the background (``list_early``).
"""

from __future__ import annotations

import gc
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from syncer.errors import SyncerError


@contextmanager
def collection_paused() -> Iterator[None]:
    """No cyclic collection while the block runs; afterwards the collector as it was (a
    ``--watch`` loop collects between its runs). What the block made is handed to the oldest
    generation (``freeze`` + ``unfreeze``): left young, the first allocation after the block
    would walk all of it at once (0.2 s at 5,000 objects)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        if was:
            gc.enable()


def before_exit() -> None:
    """The process is about to end: the objects it holds are left out of the collection the
    interpreter makes at its end (``gc.freeze``); they are freed with the process."""
    gc.freeze()


#: Objects of one kind in one namespace from which the plain files' text is looked at for them,
#: and their LIST begun before the files are parsed (a few objects are read by name anyway).
EARLY_FROM = 100

#: A guess needs no exactness (see ``likely_lists``): lines found from a newline, with a C-speed scan.
_KIND = re.compile(r"\nkind:[ \t]*[\"']?([A-Za-z][A-Za-z0-9]*)")
_API_VERSION = re.compile(r"\napiVersion:[ \t]*[\"']?([A-Za-z0-9][A-Za-z0-9./-]*)")
_NAMESPACE = re.compile(r"\n  namespace:[ \t]*[\"']?([a-z0-9][a-z0-9.-]*)")


def likely_lists(repo: Path, installation: str, namespace: str | None = None) -> list[tuple[str, str, str]]:
    """(apiVersion, kind, namespace) of each kind the installation's plain manifest files
    declare at least ``EARLY_FROM`` objects of in one namespace, tracked, as their text says at
    a glance: a file's ``kind:`` and ``apiVersion:`` lines in pairs, and its objects in the one
    namespace its ``  namespace:`` lines name (in the default one without such lines; a file
    naming several is left out). Only a guess: detection reads what the parsed files declare,
    and an answer begun for a wrong guess is dropped (``KubeSource.expect``). Nothing for a
    kustomization (it renders the objects), nor when the config cannot be read (the command
    says why, later)."""
    from syncer.config import load_config
    from syncer.sources.dispatch import is_rendered
    from syncer.kinds import CLUSTER_SCOPED
    from syncer.sources.manifests import MAX_FILE_BYTES, host_dir, manifest_files
    from syncer.model import Track

    try:
        if is_rendered(repo, installation):
            return []
        config = load_config(host_dir(repo, installation), installation, namespace=namespace)
        files = manifest_files(repo, installation)
    except (SyncerError, OSError):
        return []
    counts: Counter[tuple[str, str, str]] = Counter()
    for path in files:
        try:
            if path.is_symlink() or path.stat().st_size > MAX_FILE_BYTES:
                continue
            text = "\n" + path.read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
        kinds, versions, spaces = _KIND.findall(text), _API_VERSION.findall(text), set(_NAMESPACE.findall(text))
        if len(kinds) != len(versions) or len(spaces) > 1:
            continue
        ns = spaces.pop() if spaces else config.namespace
        counts.update((v, k, "" if k in CLUSTER_SCOPED else ns) for v, k in zip(versions, kinds))
    return [key for key, n in counts.items() if n >= EARLY_FROM and config.track_for(key[1]) is not Track.IGNORE]


def list_early(source: object, repo: Path, installation: str, namespace: str | None = None) -> None:
    """Begin the LISTs ``likely_lists`` names when ``source`` is the API server."""
    from syncer.gather.live import KubeSource

    if isinstance(source, KubeSource):
        source.expect(likely_lists(repo, installation, namespace))
