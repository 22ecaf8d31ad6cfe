"""Which source an installation is: the one dispatch, and the one place a new source type goes.

``SOURCES`` lists every kind of source (``syncer.sources.source.SourceType``) in the order they
are asked; the first that claims ``hosts/<installation>/`` is its source. Plain manifests claim
whatever no other does. Nothing else in syncer asks which kind of source it has: what differs
is a property or a method of the ``Source`` (``syncer.sources.source``).

A new source type: a package ``syncer/sources/<name>/`` whose class implements ``Source`` and
``SourceType``, and its entry in ``SOURCES`` (before plain manifests).
"""

from __future__ import annotations

from pathlib import Path

from syncer.config import Config
from syncer.sources.kustomize import KustomizeSource
from syncer.sources.manifests import host_dir
from syncer.sources.plain import ManifestsSource
from syncer.sources.source import Source, SourceType

#: Every kind of source, in the order they claim a directory (the last claims any).
SOURCES: tuple[SourceType, ...] = (KustomizeSource, ManifestsSource)


def source_for(repo: Path, installation: str, config: Config) -> Source:
    """The source of ``hosts/<installation>/``, bound to it (``config``: its namespace and the
    settings its loading needs); ConfigError for an unknown installation."""
    host = host_dir(repo, installation)
    return next(kind for kind in SOURCES if kind.claims(host))(repo, installation, config)
