"""Gather, then detect: the reading half of detection.

``gather`` reads everything one detection needs into one frozen ``Inputs``: the live objects
``objects_to_read`` names (through the ``LiveSource``: one prefetch, then one read each), the
state record of the objects to be compared, and, once comparing has asked, git's history
(``answer``: the one ``git log --raw`` per installation directory of ``syncer.gather.history``).
``engine.detect`` then does no I/O. ``detect_live`` is the two together, for the one-shot
commands and every sidecar pass.

A read that fails for one object (a 403, an error answer, an object not watched) is kept as
that object's outcome; an API server that cannot be reached at all, or that rejects syncer's
credentials (401), is raised here: nothing could be compared.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

from syncer.gather.helmrelease import release_bases
from syncer.detect import endpoints, engine
from syncer.detect.binding import config_map_ref
from syncer.cache import Caches, by_identity
from syncer.config import BoundConfig, Config
from syncer.errors import NOTHING_READABLE, ClusterError, ConfigError, Forbidden, SyncerError
from syncer.gather.history import GitHistory, judge
from syncer.kinds import ALTERNATE_VERSIONS
from syncer.detect.inputs import Answer, Inputs, LiveRead, Question, Record
from syncer.gather.live import Lister, LiveSource
from syncer.sources.manifests import GitObject, Manifests
from syncer.detect.tracking import tracking
from syncer.model import JSON, Drift, GitSays, ObjectRef, Path, Result, Track


class BaseStore(Protocol):
    """syncer's own record of the last state where git and the cluster agreed."""

    def base(self, ref: ObjectRef) -> JSON | None: ...

    def proposed(self, ref: ObjectRef) -> Mapping[Path, Sequence[Any]]:
        """The values syncer proposed (PR or commit) for fields of ``ref``."""
        ...

    def propose(self, drifts: Sequence[Drift], head: str | None = None) -> bool:
        """Remember ``drifts``' values before they are pushed, and ``head``, the commit about to
        be pushed as (or already found as) the PR branch's head."""
        ...

    def pushed_heads(self) -> Collection[str] | None:
        """The PR branch heads recorded by ``propose`` (None: this record never held one)."""
        ...


def objects_to_read(config: BoundConfig, manifests: Manifests) -> list[ObjectRef]:
    """The live objects detection reads: every declared object of a kind not ignored, and the
    ConfigMap of each candidate list that binds one of them (``config`` bound to ``manifests``:
    ``Config.bound_to``). The one-shot reads exactly these, the sidecar watches exactly these,
    and syncer's Role must grant them (``live_reads``)."""
    refs = dict.fromkeys(ref for ref in manifests.objects if config.track_for(ref.kind) is not Track.IGNORE)
    for ref in list(refs):
        service = endpoints.service_of(ref.kind, manifests.objects[ref].data)
        bound = config.candidates_for(ref.namespace, service) if service is not None else None
        if bound is not None:
            refs.setdefault(config_map_ref(bound.namespace, bound.config_map))
    return list(refs)


def live_reads(config: BoundConfig, manifests: Manifests) -> list[ObjectRef]:
    """The live objects a comparison reads (what syncer's Role must grant: ``syncer.grants``)."""
    return sorted(objects_to_read(config, manifests))


def _reread(source: LiveSource, ref: ObjectRef, found: object) -> LiveRead:
    """``found``, read as ``ref``, as detection reads it: absent, an EndpointSlice also under the
    older version an API server may serve, and in the v1 shape; not a mapping, refused."""
    for alt in ALTERNATE_VERSIONS.get((ref.api_version, ref.kind), ()) if found is None else ():
        try:
            found = source.get(replace(ref, api_version=alt))
        except NOTHING_READABLE:
            raise
        except ClusterError:
            found = None  # not served or not watched under that version: absent
        if found is not None:
            break
    if found is not None and not isinstance(found, dict):
        return ConfigError(f"live object has an unexpected shape: a {type(found).__name__}, not a mapping")
    if found is not None and ref.kind == endpoints.SLICE:
        return endpoints.as_v1(found)
    return found


def _record(store: BaseStore, ref: ObjectRef) -> Record | Exception:
    """The record of ``ref``: its proposals read now (a store that cannot be read fails here,
    for this object only), its base when detection asks for it (``Record``)."""
    try:
        return Record(proposed=store.proposed(ref), read=lambda: store.base(ref))
    except Exception as exc:  # noqa: BLE001 -- raised again where detection uses it: it costs that object only
        return exc


def _store_readable(store: BaseStore, ref: ObjectRef) -> bool:
    """Can the state record be read now (detection reads it for every compared object)?"""
    try:
        store.base(ref)
        store.proposed(ref)
    except Exception:  # noqa: BLE001 -- whatever it raises, reading the compared objects' records raises again
        return False
    return True


def gather(config: BoundConfig, manifests: Manifests, source: LiveSource, caches: Caches, *,
           store: BaseStore | None = None, observed_since: Mapping[ObjectRef, datetime] | None = None,
           history: bool = False) -> Inputs:
    """Everything ``engine.detect`` reads; ``history``: git's history will answer questions."""
    # the same manifests and config (the sidecar's parse cache): the same objects to read
    refs: list[ObjectRef] = by_identity(caches.to_read, (manifests.objects, config), "to-read",
                                        lambda: objects_to_read(config, manifests))
    source.prefetch(refs)  # an API source reads everything at once (lists, concurrent GETs)
    live: dict[ObjectRef, LiveRead] = {}
    others: dict[ObjectRef, tuple[str, ...]] = {}
    get, slice_kind = source.get, endpoints.SLICE
    for ref in refs:
        try:
            found = get(ref)
        except NOTHING_READABLE:
            raise  # nothing can be compared
        except SyncerError as exc:
            live[ref] = exc  # costs this object only
            continue
        if found is not None and type(found) is dict and ref.kind != slice_kind:
            live[ref] = found
            continue
        live[ref] = read = _reread(source, ref, found)
        if read is None and (versions := tuple(source.other_versions(ref))):
            others[ref] = versions
    renamed = _generated_renames(source, manifests, live)
    records: dict[ObjectRef, Record | Exception] | None = None
    readable: bool | None = None
    reusable = source.immutable
    made = tracking(manifests, caches, reusable)  # detection's too (``Inputs.tracking``)
    if store is not None:
        # The record of each object to be compared: one known in sync (the watch cache) is not
        # compared while the record can be read at all.
        records = {}
        tracked, shadowed = made.tracked(config), made.family.shadowed
        for i, (ref, _, _) in enumerate(tracked.items):
            held = live[ref]
            if not isinstance(held, dict) or ref in shadowed:
                continue
            if reusable and tracked.in_sync[i] is held:
                if readable is None:
                    readable = _store_readable(store, ref)
                if readable:
                    continue
            records[ref] = _record(store, ref)
    released = release_bases(source, manifests) if manifests.releases else {}  # what Helm last deployed
    return Inputs(manifests, live, others, records, readable is not False, observed_since or {},
                  {} if history else None, reusable, made, released=released, renamed=renamed)


def _generated_by(name: str, generator: str) -> bool:
    """Is ``name`` the generator's, with another content hash (ten characters of kustomize's
    alphabet: hex with 0, 1, 3, a, e swapped for g, h, k, m, t)?"""
    rest = name[len(generator):]
    return name.startswith(generator) and len(rest) == 11 and rest[0] == "-" and all(c in "2456789bcdfghkmt" for c in rest[1:])


def _generated_renames(source: LiveSource, manifests: Manifests, live: dict[ObjectRef, LiveRead]) -> dict[ObjectRef, str]:
    """For each generated object absent live under the name git renders (kustomize hashes its
    content into the name: a git change not applied yet is a new name), the live object of the
    same generator, read as git's: compared under git's name, its older name said in a note.
    Found by listing the kind in the namespace where the source can (the chart's
    ``rbac.watchKinds``; a Role limited by names cannot list: then it stays absent, or
    unreadable), which also reads a new name the Role does not name; of several, the newest."""
    if not isinstance(source, Lister):
        return {}
    absent = [ref for ref, read in live.items()
              if (read is None or isinstance(read, Forbidden)) and ref in manifests.objects
              and manifests.objects[ref].generator]
    listed: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    renamed: dict[ObjectRef, str] = {}
    for ref in absent:
        key = (ref.api_version, ref.kind, ref.namespace)
        if key not in listed:
            try:
                listed[key] = source.list_objects(*key)
            except SyncerError:
                listed[key] = []
        want = manifests.objects[ref].generator
        exact = [o for o in listed[key] if isinstance(o.get("metadata"), dict) and o["metadata"].get("name") == ref.name]
        if exact:  # a Role that may list the kind but not get this name (rbac.watchKinds)
            live[ref] = exact[0]
            continue
        same = [o for o in listed[key] if isinstance(o.get("metadata"), dict)
                and isinstance(o["metadata"].get("name"), str) and o["metadata"]["name"] != ref.name
                and _generated_by(o["metadata"]["name"], want)]
        if not same:
            continue
        newest = max(same, key=lambda o: (str(o["metadata"].get("creationTimestamp") or ""), o["metadata"]["name"]))
        renamed[ref] = newest["metadata"]["name"]
        live[ref] = {**newest, "metadata": {**newest["metadata"], "name": ref.name}}
    return renamed


#: Which file's git history tells who changed an object's fields (``Source.history_file``).
HistoryFile = Callable[[GitObject], "str | None"]


def _own_file(obj: GitObject) -> str | None:
    return obj.file


def answer(history: GitHistory, questions: Sequence[Question], manifests: Manifests,
           history_file: HistoryFile = _own_file) -> dict[Question, Answer]:
    """What git's history says of each question, in order (its time budget is the detection's);
    no answer for an object whose fields no one file's history tells of."""
    answers: dict[Question, Answer] = {}
    for question in questions:
        ref, path, applied_at = question
        obj = manifests.objects[ref]
        file = history_file(obj)
        if file is None:
            answers[question] = None
            continue
        said = judge(history.last_change(file, obj.ref, path, applied_at, current=obj.data), applied_at)
        if said is None and history.trouble:
            said = GitSays.UNREADABLE, f"git's history could not be read: {history.trouble}"
        answers[question] = said
    return answers


def detect_live(config: BoundConfig, manifests: Manifests, source: LiveSource, now: datetime, *,
                store: BaseStore | None = None, observed_since: Mapping[ObjectRef, datetime] | None = None,
                history: GitHistory | None = None, history_file: HistoryFile = _own_file,
                caches: Caches | None = None) -> Result:
    """Gather, detect, ask git's history what comparing asked, and finish: one detection.

    ``history_file``: the file whose history tells of an object's fields (its source's
    ``history_file``; by default the object's own file). ``caches``: what the installation
    remembers between passes (the sidecar keeps one; None: a fresh one, nothing to reuse)."""
    caches = caches if caches is not None else Caches()
    inputs = gather(config, manifests, source, caches, store=store, observed_since=observed_since,
                    history=history is not None)
    detection = engine.Detection(config, inputs, now, caches)
    questions = detection.compare()
    if history is None or not questions:
        return detection.finish()
    return detection.finish(answer(history, questions, manifests, history_file))
