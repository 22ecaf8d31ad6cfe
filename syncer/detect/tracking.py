"""What detection derives from the manifests alone, remembered across passes (``Caches.tracking``):
the order objects are compared in, the Endpoints family, and which objects were found in sync
with which live object (``Tracked``), so a sidecar pass compares again only what changed.
"""

from __future__ import annotations

from syncer.detect import endpoints
from syncer.detect.binding import Family
from syncer.cache import Caches
from syncer.config import Config
from syncer.sources.manifests import GitObject, Manifests
from syncer.model import JSON, ObjectRef, Track


class Tracked:
    """The objects one config compares, in order, and which of them were found in sync.

    ``in_sync[i]`` is the live object that the i-th object was last found in sync with (or
    None). A comparison that found no difference depends on the git object, the live object
    and the config alone -- nothing of ``now``, the state record, git history or when the watch
    saw a change -- so the same live object again is in sync again without comparing. Only for
    a source whose objects are never modified (the watch cache; the git objects come from the
    parse cache, likewise read-only). An object with a difference is judged afresh every pass
    (its stability timing moves with ``now``)."""

    def __init__(self, config: Config, order: list[tuple[ObjectRef, GitObject]], generation: int,
                 previous: Tracked | None = None) -> None:
        self.config = config  # held: its identity is the key
        self.items = [(ref, obj, endpoints.is_family(ref.kind)) for ref, obj in order
                      if config.track_for(ref.kind) is not Track.IGNORE]
        self.in_sync: list[JSON | None] = [None] * len(self.items)
        self.generation = generation  # ``Caches.compared.clear()`` forgets these too
        if previous is not None and previous.config is config and previous.generation == self.generation:
            # A file changed: the objects of the other files are the same git objects, and
            # what was found about them still holds.
            known = {id(obj): seen for (_, obj, _), seen in zip(previous.items, previous.in_sync) if seen is not None}
            if known:
                held = {id(obj): obj for _, obj, _ in previous.items}
                for i, (_, obj, _) in enumerate(self.items):
                    if held.get(id(obj)) is obj:
                        self.in_sync[i] = known.get(id(obj))


class Tracking:
    """What detection derives from the manifests alone: the order objects are compared in (file
    order) and the Endpoints family. Remembered (``Caches.tracking``) while ``load_manifests``
    hands back the same manifests (no file changed), so a sidecar pass does not sort and index
    5,000 objects again."""

    def __init__(self, manifests: Manifests, caches: Caches, previous: Tracking | None = None) -> None:
        self.objects = manifests.objects  # held: its identity is the key
        self.order = sorted(manifests.objects.items(), key=lambda kv: (kv[1].file, kv[1].doc, kv[1].prefix))
        self.family = Family(manifests)
        self._compared = caches.compared
        self._tracked: Tracked | None = previous._tracked if previous is not None else None
        self._inherited = previous is not None

    def tracked(self, config: Config) -> Tracked:
        last = self._tracked
        generation = self._compared.generation
        if last is not None and not self._inherited and last.config is config and last.generation == generation:
            return last
        self._tracked = Tracked(config, self.order, generation, last)
        self._inherited = False
        return self._tracked


def tracking(manifests: Manifests, caches: Caches, reusable: bool) -> Tracking:
    """The tracking of ``manifests``: remembered in ``caches`` for a source whose objects are never
    modified (what was found in sync is only known again for such a one), else made afresh."""
    if not reusable:
        return Tracking(manifests, caches)
    found = caches.tracking.get(id(manifests.objects))
    if found is not None and found.objects is manifests.objects:
        return found  # type: ignore[no-any-return]
    latest = None
    for latest in caches.tracking.values():
        pass  # the most recently used one: what it found about unchanged objects still holds
    made = Tracking(manifests, caches, latest)
    caches.tracking.put(id(manifests.objects), made)
    return made
