"""Detection inputs built directly from live objects: what ``syncer.gather.collect`` hands to
``engine.detect``, for detection tests that need no API server, no source and no git."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from syncer.config import Config
from syncer.detect.endpoints import declared_services
from syncer.gather.collect import objects_to_read
from syncer.detect.inputs import Inputs, LiveRead
from syncer.sources.manifests import Manifests
from syncer.model import ObjectRef


def gathered(config: Config, manifests: Manifests, objects: Mapping[ObjectRef, Any], **kw: Any) -> Inputs:
    """Every object detection reads, from ``objects`` by ref (absent live: not in ``objects``)."""
    bound = config.bound_to(declared_services(manifests.objects))
    live: dict[ObjectRef, LiveRead] = {ref: objects.get(ref) for ref in objects_to_read(bound, manifests)}
    return Inputs(manifests, live, **kw)
