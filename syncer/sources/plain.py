"""The plain-manifests source: ``hosts/<installation>/``'s YAML files are the objects, as they stand.

Every field lives in its object's own file, at its own path: placing a drift changes nothing,
and the edit is proved by reading the edited file back (``syncer.yamledit``), so ``verify``
renders nothing. Git's history of that file tells who changed a field. An untracked live
object can become a new file. And the files' text tells, at a glance and before any parse,
which kinds they declare many objects of (``likely_lists``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from syncer.cache import Caches
from syncer.config import Config
from syncer.kinds import CLUSTER_SCOPED
from syncer.model import Drift
from syncer.sources.manifests import MAX_FILE_BYTES, GitObject, Manifests, load_manifests, manifest_files
from syncer.sources.source import Planner, Verified

#: A guess needs no exactness (see ``likely_lists``): lines found from a newline, with a C-speed scan.
_KIND = re.compile(r"\nkind:[ \t]*[\"']?([A-Za-z][A-Za-z0-9]*)")
_API_VERSION = re.compile(r"\napiVersion:[ \t]*[\"']?([A-Za-z0-9][A-Za-z0-9./-]*)")
_NAMESPACE = re.compile(r"\n  namespace:[ \t]*[\"']?([a-z0-9][a-z0-9.-]*)")


class ManifestsSource:
    """``hosts/<installation>/`` as plain manifest files (``syncer.sources.manifests``)."""

    name = "manifests"
    proposes_files = True
    new_file_note = ""
    declares = "manifests"

    def __init__(self, repo: Path, installation: str, config: Config) -> None:
        self.repo, self.installation, self.namespace = repo, installation, config.namespace

    @staticmethod
    def claims(host: Path) -> bool:
        return True  # the last resort: whatever no other source claims is read as it stands

    def load(self, caches: Caches) -> Manifests:
        return load_manifests(self.repo, self.installation, self.namespace, caches=caches)

    def history_file(self, obj: GitObject) -> str | None:
        return obj.file

    def place(self, obj: GitObject, drifts: Sequence[Drift], caches: Caches) -> list[Drift]:
        return list(drifts)  # a field lives in its object's file, where detection found it

    def verify(self, drifts: Sequence[Drift], plan: Planner, caches: Caches) -> Verified:
        return Verified(tuple(drifts))  # the edited file reads back as intended (yamledit): proof enough

    def likely_lists(self, at_least: int) -> list[tuple[str, str, str]]:
        """(apiVersion, kind, namespace) of each kind the files declare at least ``at_least``
        objects of in one namespace, as their text says at a glance: a file's ``kind:`` and
        ``apiVersion:`` lines in pairs, and its objects in the one namespace its ``  namespace:``
        lines name (in the default one without such lines; a file naming several is left out).
        Only a guess: detection reads what the parsed files declare."""
        counts: Counter[tuple[str, str, str]] = Counter()
        for path in manifest_files(self.repo, self.installation):
            try:
                if path.is_symlink() or path.stat().st_size > MAX_FILE_BYTES:
                    continue
                text = "\n" + path.read_bytes().decode("utf-8", "replace")
            except OSError:
                continue
            kinds, versions, spaces = _KIND.findall(text), _API_VERSION.findall(text), set(_NAMESPACE.findall(text))
            if len(kinds) != len(versions) or len(spaces) > 1:
                continue
            ns = spaces.pop() if spaces else self.namespace
            counts.update((v, k, "" if k in CLUSTER_SCOPED else ns) for v, k in zip(versions, kinds))
        return [key for key, n in counts.items() if n >= at_least]
