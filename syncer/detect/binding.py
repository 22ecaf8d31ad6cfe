"""Binding the Endpoints family to its candidate lists: which slices belong to which Service,
the candidate hosts a binding reads (the live ConfigMap, else git's), the one drift saying where
a Service now points, and the picks of an open branch kept while the backend is away. Pure:
every live object comes from the gathered ``Inputs``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from syncer.detect.classify import decide, parse_time
from syncer.detect.provenance import of_field, seen_at
from syncer.config import Candidates, Config
from syncer.detect.diff import FieldDiff, compare
from syncer.detect.endpoints import (ENDPOINTS, SLICE, address_class, address_root, address_set, all_addresses,
                              candidate_hosts, endpoint_ready, is_address_path, is_family, is_mirrored,
                              ready_addresses, service_of)
from syncer.errors import NOTHING_READABLE, ClusterError, SyncerError
from syncer.detect.inputs import LiveRead, live_object
from syncer.kinds import list_items
from syncer.sources.manifests import GitObject, Manifests, object_ref, parse_documents
from syncer.model import JSON, Action, Direction, Drift, DriftClass, Edit, ObjectRef, Path, Result, Track
from syncer.detect.normalize import MISSING, get_path, normalize
from syncer.detect.values import describe_change


@dataclass(frozen=True)
class Binding:
    """What an object of the family is judged against."""

    service: str
    candidates: set[str] | None  # None: no candidate list binds the Service
    addresses: tuple[str, ...]  # the Service's ready addresses live (every slice judged together)
    members: int = 1  # objects judged together (slices of the Service; 1 for an Endpoints)


def _edit(fd: FieldDiff) -> Edit | None:
    if fd.cls is DriftClass.ADDED:
        return Edit(fd.path, fd.live, add=True)
    if fd.cls is DriftClass.VALUE:
        return Edit(fd.path, fd.live)
    return None


def pick_edits(git: Mapping[str, Any], live: Mapping[str, Any], candidates: set[str]) -> tuple[Edit, ...]:
    """The edits a slice's ``pick`` makes: exactly the endpoints it speaks of.

    Written are the live endpoints that are ready with every address a candidate, plus a
    not-ready one only where git already declares that endpoint not ready; a sleeping
    backend's endpoint is never carried into git along with the pick. Each kept endpoint takes
    the place of git's entry for the same addresses (unchanged, comments and all), a new one
    the place of an entry whose addresses left -- so a changed address is one changed line
    that keeps its comment -- and further ones are appended. Only when fewer endpoints remain
    than git declares is the list written whole.
    """
    raw_git, raw_live = git.get("endpoints"), live.get("endpoints")
    git_eps = raw_git if isinstance(raw_git, list) else []
    live_eps = raw_live if isinstance(raw_live, list) else []
    git_asleep = {address_set(g) for g in git_eps if isinstance(g, dict) and not endpoint_ready(g)}
    picked = []
    for ep in live_eps:
        addresses = address_set(ep)
        if not addresses:
            continue
        ready = endpoint_ready(ep)
        if (ready and addresses <= candidates) or (not ready and addresses in git_asleep):
            picked.append(ep)
    slots: list[object] = [None] * len(git_eps)
    new: list[object] = []
    for ep in picked:
        at = next((i for i, g in enumerate(git_eps) if slots[i] is None and address_set(g) == address_set(ep)), None)
        if at is None:
            new.append(ep)
        else:
            slots[at] = ep
    for i in range(len(slots)):
        if slots[i] is None and new:
            slots[i] = new.pop(0)
    if any(s is None for s in slots):  # fewer endpoints than git declares: no edit removes an item
        return (Edit(("endpoints",), [s for s in slots if s is not None]),)
    edits = [Edit(fd.path, fd.live) for fd in compare(SLICE, {"endpoints": git_eps}, {"endpoints": slots})
             if fd.cls is DriftClass.VALUE]
    edits += [Edit(("endpoints", len(git_eps) + n), ep, add=True) for n, ep in enumerate(new)]
    if not git_eps and not isinstance(raw_git, list):  # git declares no list at all: set it whole
        return (Edit(("endpoints",), new),) if new else ()
    return tuple(edits)


def nothing_to_pick(kind: str, git: Mapping[str, Any], live: Mapping[str, Any], binding: Binding) -> bool:
    """Does a slice differ from git only in endpoints a ``pick`` never writes (not ready, not
    declared), while the Service's ready addresses are candidates? Then where it points is as
    git says: no drift (a sleeping backend's endpoint is no change to report, nor to commit)."""
    if kind != SLICE or binding.candidates is None:
        return False
    if address_class(binding.addresses, binding.candidates) is not DriftClass.PICK:
        return False
    return pick_edits(git, live, binding.candidates) == ()


def address_drift(ref: ObjectRef, file: str, git: Mapping[str, Any], live: JSON,
                  diffs: list[FieldDiff], binding: Binding, dirn: Direction, track: Track, now: datetime,
                  stable_for: float, observed_since: datetime | None,
                  fields: Mapping[Path, datetime] | None = None) -> Drift:
    """The one drift saying where the object now points, classified from the Service's address set."""
    kind = ref.kind
    cls = address_class(binding.addresses, binding.candidates)
    if cls is DriftClass.VALUE and all(fd.cls is DriftClass.ADDED for fd in diffs):
        cls = DriftClass.ADDED
    root = address_root(kind)
    # the manager repointing the same subsets again keeps its entry's first time: the watch's is later
    who = of_field(live, root, seen=seen_at(fields, root))
    manager, when = who.manager, who.changed_at
    changed = parse_time(when) or observed_since
    action, reason = decide(kind, cls, dirn, track, changed, now, stable_for)
    git_addrs = " ".join(ready_addresses(kind, git)) or None
    live_addrs = " ".join(ready_addresses(kind, live)) or None
    whole = f" in any of the {binding.members} slices of Service {binding.service}" if binding.members > 1 else ""
    if cls is DriftClass.CLEARED:
        detail = f"cleared (was {git_addrs}): no ready address{whole} since {when or 'unknown'}"
    else:
        detail = describe_change(git_addrs or "", live_addrs or "")
        if binding.members > 1:
            detail += f" (Service {binding.service} now: {' '.join(binding.addresses)})"
    edits = tuple(e for e in map(_edit, diffs) if e is not None)
    if kind == SLICE and cls is DriftClass.PICK and binding.candidates is not None:
        edits = pick_edits(git, live, binding.candidates)
    cands = frozenset(binding.candidates) if binding.candidates is not None else None
    return Drift(ref, file, root, git_addrs, live_addrs, dirn, cls, action, manager, when, detail, reason, edits,
                 service=binding.service, candidates=cands)


@functools.lru_cache(maxsize=1024)
def config_map_ref(namespace: str, name: str) -> ObjectRef:
    return ObjectRef("v1", "ConfigMap", namespace, name)


@dataclass
class Reads:
    """What one detection read for its bindings: ConfigMaps, and the hosts of each candidate
    list (once read in a detection, a list stays what it was)."""

    config_maps: dict[ObjectRef, JSON | None] = field(default_factory=dict)
    lists: dict[Candidates, frozenset[str]] = field(default_factory=dict)


class Family:
    """The Endpoints family of one set of manifests: which slices belong to which Service."""

    def __init__(self, manifests: Manifests) -> None:
        self.slices: dict[tuple[str, str], list[ObjectRef]] = {}
        declared = {(r.namespace, r.name) for r in manifests.objects if r.kind == ENDPOINTS}
        self.shadowed: set[ObjectRef] = set()
        for ref, obj in sorted(manifests.objects.items()):
            if ref.kind != SLICE:
                continue
            service = service_of(ref.kind, obj.data)
            if service is None:
                continue
            if is_mirrored(obj.data) and (ref.namespace, service) in declared:
                self.shadowed.add(ref)  # the control plane's copy of a declared Endpoints
            else:
                self.slices.setdefault((ref.namespace, service), []).append(ref)

    def read_binding(self, obj: GitObject, live: JSON, config: Config, reads: Mapping[ObjectRef, LiveRead],
                     manifests: Manifests, cache: Reads) -> None:
        """What ``binding`` reads, for an object whose binding's content cannot matter (one in
        sync): it fails where ``binding`` would, for the same reason."""
        if obj.ref.kind != ENDPOINTS:
            self.binding(obj, live, config, reads, manifests, cache)
            return
        # Of an Endpoints' binding only reading the candidate ConfigMap can fail (taking a list
        # apart cannot): read it as ``candidates`` would.
        service = service_of(obj.ref.kind, obj.data)
        bound = config.candidates_for(obj.ref.namespace, service) if service is not None else None
        if bound is not None:
            cm = config_map_ref(bound.namespace, bound.config_map)
            if cm not in cache.config_maps:
                cache.config_maps[cm] = live_object(reads, cm)

    def binding(self, obj: GitObject, live: JSON, config: Config, reads: Mapping[ObjectRef, LiveRead],
                manifests: Manifests, cache: Reads) -> Binding | None:
        ref = obj.ref
        service = service_of(ref.kind, obj.data)
        if service is None:
            return None
        cands = candidates(config, ref.namespace, service, reads, manifests, cache)
        if ref.kind == ENDPOINTS:
            return Binding(service, cands, tuple(ready_addresses(ref.kind, live)))
        members = self.slices.get((ref.namespace, service), [ref])
        seen: list[str] = []
        for member in members:
            try:
                other = live if member == ref else live_object(reads, member)
            except NOTHING_READABLE:
                raise
            except ClusterError:
                continue  # that slice reports its own error; judge with the ones we can see
            seen += [a for a in ready_addresses(member.kind, other) if a not in seen]
        return Binding(service, cands, tuple(seen), len(members))


def candidates(config: Config, namespace: str, service: str, reads: Mapping[ObjectRef, LiveRead],
               manifests: Manifests, cache: Reads) -> set[str] | None:
    """Candidate hosts for a Service's Endpoints/slices: from the live ConfigMap, else git's."""
    bound = config.candidates_for(namespace, service)
    if bound is None:
        return None
    # Once read in this detection, a binding's list stays what it was (the ConfigMap is read
    # once per detection): remembered by the Candidates entry, which many Services may share.
    known = cache.lists.get(bound)
    if known is not None:
        return set(known)
    cm = config_map_ref(bound.namespace, bound.config_map)
    if cm in cache.config_maps:
        live = cache.config_maps[cm]
    else:
        live = cache.config_maps[cm] = live_object(reads, cm)
    declared = manifests.objects.get(cm)
    hosts: set[str] = set()
    for obj in (live, declared.data if declared is not None else None):
        value = get_path(obj, ("data", bound.key)) if obj else MISSING
        if isinstance(value, str):
            hosts = candidate_hosts(value)
            break
    cache.lists[bound] = frozenset(hosts)
    return hosts


def keep_proposed(result: Result, manifests: Manifests, show: Callable[[str], str]) -> tuple[list[Drift], list[str]]:
    """Endpoints (and EndpointSlice) picks already proposed on the open branch, kept while the
    backend is away; and one line for each branch version refused.

    A pick proposed earlier is still the best value known when its Endpoints is cleared (the
    host sleeps) or re-made and not yet stable again; dropping it would rewrite the branch
    and the PR at every sleep/wake flap. The edits are recomputed from base to the branch's
    version (``show``: a file as the branch holds it), so the branch's bytes come out identical.

    The branch is only a memory, and anyone who can push may write it: a version is kept only
    while every address it adds is among the candidates of its binding as this detection read
    them (``Drift.candidates``), and only its address part is taken (never ports or other fields).
    An address in no candidate list is never carried, whoever the commit says wrote it.
    """
    kept: list[Drift] = []
    refused: list[str] = []
    texts: dict[str, list[object]] = {}
    for d in result.drifts:
        if not is_family(d.ref.kind) or d.path != address_root(d.ref.kind) or d.action is Action.WRITE \
                or d.ref not in manifests.objects:
            continue
        if d.cls is not DriftClass.CLEARED and d.action is not Action.WAIT:
            continue
        obj = manifests.objects[d.ref]
        if obj.file not in texts:
            try:
                texts[obj.file] = parse_documents(show(obj.file), obj.file)
            except SyncerError:
                texts[obj.file] = []
        proposed = None
        for doc in texts[obj.file]:
            items = list_items(doc)
            for cand in items if items is not None else [doc]:
                try:
                    if isinstance(cand, dict) and object_ref(cand, obj.ref.namespace, obj.file) == d.ref:
                        proposed = cand
                except SyncerError:
                    continue
        if proposed is None:
            continue
        added = all_addresses(d.ref.kind, proposed) - all_addresses(d.ref.kind, obj.data)
        outside = sorted(added - d.candidates) if d.candidates is not None else sorted(added)
        if outside:
            refused.append(f"{d.ref}: the open branch points it at {' '.join(outside)}, in no candidate list "
                           f"{'bound to Service ' + d.service if d.candidates is not None else '(none binds it)'}; "
                           "not kept")
            continue
        fds = compare(d.ref.kind, normalize(obj.data), normalize(proposed))
        edits = tuple(Edit(fd.path, fd.live, add=fd.cls is DriftClass.ADDED) for fd in fds
                      if fd.cls in (DriftClass.VALUE, DriftClass.ADDED) and is_address_path(d.ref.kind, fd.path))
        if not edits:
            continue
        live = " ".join(ready_addresses(d.ref.kind, proposed)) or None
        kept.append(replace(d, live=live, cls=DriftClass.PICK, action=Action.WRITE, edits=edits,
                            detail=describe_change(d.git or "", live or ""),
                            reason="kept from the open pull request while the backend is away or not yet stable"))
    return kept, refused
