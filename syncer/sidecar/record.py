"""What the sidecar records as agreed after a pass: pure, no I/O (``state`` stores it).

An object is agreed when the pass checked it and found no difference on it; the record
holds it as git declares it (normalized), the base that later decides who moved. Secrets and
other never-written kinds are never recorded. Objects no longer declared are dropped by the
store (``keep``).
"""

from __future__ import annotations

from typing import Any

from syncer.config import NEVER_WRITTEN
from syncer.manifests import Manifests
from syncer.model import ObjectRef, Result
from syncer.normalize import normalize


def agreed(result: Result, manifests: Manifests) -> dict[ObjectRef, dict[str, Any]]:
    """The objects git and the cluster agree on after ``result``, as git declares them."""
    drifting = {d.ref for d in result.drifts}
    return {ref: normalize(manifests.objects[ref].data) for ref in result.checked
            if ref not in drifting and ref in manifests.objects and ref.kind not in NEVER_WRITTEN}
