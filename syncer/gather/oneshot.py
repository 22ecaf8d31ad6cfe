"""What a one-shot command (``syncer diff``) does to finish sooner, that the sidecar must not.

A one-shot command builds its whole world once (every manifest parsed, every live object
read) and ends. Python's cyclic collector finds nothing to free in that world, yet walks it
again and again as it grows, and once more when the interpreter ends (when the process has
printed its answer already): time that grows with the objects and buys nothing. Reference
counting still frees everything that is not a cycle.

And the API server is not left idle while the manifests are parsed: the LISTs of the kinds
the files plainly declare many objects of begin first, in the background (``list_early``).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from syncer.config import Config
from syncer.errors import SyncerError
from syncer.sources.source import DEFAULT_TOOLS, Tools


@contextmanager
def collection_paused() -> Iterator[None]:
    """No cyclic collection while the block runs; afterwards the collector as it was (a
    ``--watch`` loop collects between its runs). What the block made is handed to the oldest
    generation (``freeze`` + ``unfreeze``): left young, the first allocation after the block
    would walk all of it at once."""
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


#: Objects of one kind in one namespace from which their LIST is begun before the files are
#: parsed (a few objects are read by name anyway).
EARLY_FROM = 100


def likely_lists(repo: Path, installation: str, config: Config,
                 tools: Tools = DEFAULT_TOOLS) -> list[tuple[str, str, str]]:
    """(apiVersion, kind, namespace) of each tracked kind the installation's source plainly
    declares at least ``EARLY_FROM`` objects of in one namespace (``Source.likely_lists``: a
    guess from the files' text; nothing for a source that renders its objects). A wrong guess
    costs one LIST dropped (``KubeSource.expect``); nothing when the files cannot be read (the
    command says why, later)."""
    from syncer.model import Track
    from syncer.sources.dispatch import source_for

    try:
        found = source_for(repo, installation, config, tools).likely_lists(EARLY_FROM)
    except (SyncerError, OSError):
        return []
    return [key for key in found if config.track_for(key[1]) is not Track.IGNORE]


def list_early(source: object, repo: Path, installation: str, config: Config, tools: Tools = DEFAULT_TOOLS) -> None:
    """Begin the LISTs ``likely_lists`` names when ``source`` is the API server."""
    from syncer.gather.live import KubeSource

    if isinstance(source, KubeSource):
        source.expect(likely_lists(repo, installation, config, tools))
