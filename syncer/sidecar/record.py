"""What the sidecar records as agreed after a pass: pure, no I/O (``state`` stores it).

An object is agreed when the pass checked it and found no difference on it; the record
holds it as git declares it (normalized), the base that later decides who moved. Secrets and
other never-written kinds are never recorded. Objects no longer declared are dropped by the
store (``keep``).
"""

from __future__ import annotations


from syncer.cache import Caches, by_identity
from syncer.config import NEVER_WRITTEN
from syncer.sources.manifests import Manifests
from syncer.model import JSON, ObjectRef, Result
from syncer.detect.normalize import normalize

def agreed(result: Result, manifests: Manifests, caches: Caches) -> dict[ObjectRef, JSON]:
    """The objects git and the cluster agree on after ``result``, as git declares them (shared,
    read-only values).

    Each is git's parsed object itself when normalizing leaves it as it is (the usual case:
    git declares no status or server metadata), so an unchanged object is the same object
    pass after pass (the parse cache hands the same one back while its file is unchanged),
    which the store recognizes without serializing it again (``state.ConfigMapStore.record``),
    and no copy of it is held. The others, normalized, are remembered in
    ``caches.normalized`` by the identity of the parsed object."""
    drifting = {d.ref for d in result.drifts}
    out = {}
    for ref in result.checked:
        obj = manifests.objects.get(ref)
        if obj is not None and ref not in drifting and ref.kind not in NEVER_WRITTEN:
            out[ref] = _recorded(obj.data, caches)
    return out


def _recorded(data: JSON, caches: Caches) -> JSON:
    """``data`` as recorded: ``normalize(data)``, or ``data`` itself when that is the same value
    (only a copy that differs is remembered)."""
    # normalize copies the maps it goes through and shares the rest; an equal copy is not kept
    normalized = by_identity(caches.normalized, (data,), None, lambda: normalize(data), keep=lambda n: n != data)
    return data if normalized == data else normalized
