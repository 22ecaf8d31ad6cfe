"""What detection reads, as one frozen value: ``syncer.gather.collect`` builds it, ``engine.detect``
consumes it without any I/O.

A read that failed for one object only (a 403, an error answer, a kind not watched) is kept
as that object's outcome: detection raises it again where it uses the object, so it costs
that object (an error or a warning naming it), exactly as a failed read always did.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from syncer.errors import SyncerError
from syncer.sources.manifests import Manifests
from syncer.model import JSON, GitSays, ObjectRef, Path

if TYPE_CHECKING:
    from syncer.detect.tracking import Tracking

#: A live object as read: the object, None (absent live), or why it could not be read.
LiveRead = JSON | None | SyncerError

#: A question to git's history: when did git last change ``path`` of this object, against the
#: time the cluster last applied it? Answered before detection runs (``gather.answer``).
Question = tuple[ObjectRef, Path, datetime]
#: What git's history says, with one line why; None: no answer.
Answer = tuple[GitSays, str] | None


class Record:
    """What syncer's state record holds for one object: ``base``, the object as last agreed
    (None: none recorded), and ``proposed``. ``read``: how to get ``base`` when it is first
    asked for, instead of ``base`` itself: only an object with differences has its base asked,
    and parsing every object's (a sidecar's first pass compares all of them) took tens of MiB
    at 50,000 objects, which the process then kept as its RSS."""

    __slots__ = ("_base", "_read", "proposed")

    def __init__(self, base: JSON | None = None, proposed: Mapping[Path, Sequence[Any]] | None = None, *,
                 read: Callable[[], JSON | None] | None = None) -> None:
        self._base, self._read = base, read
        self.proposed: Mapping[Path, Sequence[Any]] = proposed if proposed is not None else {}

    @property
    def base(self) -> JSON | None:
        if self._read is not None:
            self._base, self._read = self._read(), None
        return self._base


@dataclass(frozen=True)
class Inputs:
    """Everything one detection reads."""

    manifests: Manifests
    #: every object ``objects_to_read`` names (declared objects, candidate ConfigMaps)
    live: Mapping[ObjectRef, LiveRead]
    #: other apiVersions a snapshot holds an object absent in git's version in
    other_versions: Mapping[ObjectRef, Sequence[str]] = field(default_factory=dict)
    #: the state record of each object compared, or why it could not be read; None: no record
    records: Mapping[ObjectRef, Record | Exception] | None = None
    #: the record can be read (an object known in sync is only skipped while it can)
    record_readable: bool = True
    #: when the watch saw each object's content change (stability timing without managedFields)
    observed_since: Mapping[ObjectRef, datetime] = field(default_factory=dict)
    #: answers of git's history; None: no history at all (nothing is asked)
    history: Mapping[Question, Answer] | None = None
    #: the live objects are never modified (the watch cache): comparisons may be remembered
    reusable: bool = False
    #: what the manifests alone say (order, Endpoints family, found in sync), as gather derived
    #: it to choose the records to read; None: detection derives it (inputs built by hand)
    tracking: Tracking | None = None
    #: rendered objects as their tool last applied them (a Helm release's deployed manifest)
    released: Mapping[ObjectRef, JSON] = field(default_factory=dict)
    #: generated objects (kustomize's content hash in the name) the cluster holds under the name
    #: of an older content: git's ref -> the live name it was read under
    renamed: Mapping[ObjectRef, str] = field(default_factory=dict)


def live_object(live: Mapping[ObjectRef, LiveRead], ref: ObjectRef) -> JSON | None:
    """The live object ``ref`` as read; a failed read is raised again."""
    found = live[ref]
    if isinstance(found, SyncerError):
        raise found
    return found


def record_of(inputs: Inputs, ref: ObjectRef) -> Record | None:
    """The state record of ``ref`` (None: no state record); a failed read is raised again."""
    if inputs.records is None:
        return None
    found = inputs.records[ref]
    if isinstance(found, Exception):
        raise found
    return found
