"""Detection, as one straight pipeline: manifests + live objects -> ``Result``. No writes.

The CLI and the sidecar both call ``detect``; write-back is a separate step fed by it.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from dataclasses import replace
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from syncer import bases, classify, endpoints, ownership
from syncer.bounds import check_nodes
from syncer.config import Config
from syncer.diff import FieldDiff, align, compare
from syncer.errors import ClusterError, ConfigError
from syncer.history import GitHistory, GitSays, judge
from syncer.grants import unreadable_message
from syncer.kube import ClusterUnreachable, Refused
from syncer.manifests import GitObject, Manifests
from syncer.memo import IdentityMemo
from syncer.live import LiveSource
from syncer.served import NotServed, outcome as served_outcome
from syncer.kinds import NEVER_WRITTEN
from syncer.model import (Action, Direction, Drift, DriftClass, Edit, FileError, ObjectRef, Path, Result, Track,
                          format_path)
from syncer.normalize import get_path, normalize, MISSING
from syncer import secrets
from syncer.redact import CONFIGMAP_KEYED, DEFAULT_SECRET_PATTERNS, NAMED_MAPS, REDACTED, is_secret_key, keyed_map
from syncer.values import describe_change


class BaseStore(Protocol):
    """syncer's own record of the last state where git and the cluster agreed."""

    def base(self, ref: ObjectRef) -> dict[str, Any] | None: ...

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


def _evidence(obj: GitObject, live: dict[str, Any], config: Config, store: BaseStore | None,
              history: GitHistory | None, memo: bool) -> tuple[bases.Evidence, str]:
    """Every base known for one object, and a note when the last-applied annotation is set aside.

    Git holding exactly a value syncer proposed there (the cluster's value at the time) means
    git took that value from the cluster: the cluster moved since, even when no pass saw the
    two agree, and even while a git-side change of another field of the object keeps the
    record of the whole object from moving on."""
    appliers = _appliers(tuple(config.appliers))
    snapshots: list[tuple[str, dict[str, Any]]] = []
    applied, note = (_LAST_APPLIED.get((live,), appliers, lambda: ownership.trusted_last_applied(live, appliers))
                     if memo else ownership.trusted_last_applied(live, appliers))
    if applied is not None:
        snapshots.append((bases.LAST_APPLIED, applied))
    record = store.base(obj.ref) if store is not None else None
    if record is not None:
        snapshots.append((bases.RECORD, record))
    if obj.ref.kind == endpoints.SLICE:  # a slice applied as v1beta1 remembers it in that shape
        snapshots = [(name, endpoints.as_v1(b)) for name, b in snapshots]
    proposed = store.proposed(obj.ref) if store is not None else {}

    def owner(live_path: Path) -> tuple[Direction, ownership.Owner] | None:
        return ownership.direction_by_owner(live, live_path, appliers)

    def git_history(path: Path) -> tuple[GitSays, str] | None:
        if history is None or obj.rendered:  # a rendered field's history is not its object file's
            return None
        when = ownership.last_apply_time(live, appliers)
        if when is None:
            who = ownership.owner(live, path, appliers)
            when = who.time if who is not None else None
        applied_at = classify.parse_time(when)
        if applied_at is None:
            return None
        said = judge(history.last_change(obj.file, obj.ref, path, applied_at, current=obj.data), applied_at)
        if said is None and history.trouble:
            return GitSays.UNREADABLE, f"git's history could not be read: {history.trouble}"
        return said

    return bases.Evidence(snapshots, proposed, owner, git_history), note


#: Field differences and last-applied bases, remembered while the git and live objects stay the
#: same objects (the sidecar's parse and watch caches): a pass re-compares only what changed.
#: Which objects were found in sync is remembered per manifests and config (``_Tracked``).
_COMPARED: IdentityMemo[list[FieldDiff]] = IdentityMemo()
@functools.lru_cache(maxsize=8)
def _appliers(names: tuple[str, ...]) -> frozenset[str]:
    """One frozenset per config: every memo key below holds it (a copy per object was 3.5 MiB
    at 5,000 objects, issue #24)."""
    return frozenset(names)


_LAST_APPLIED: IdentityMemo[tuple[dict[str, Any] | None, str]] = IdentityMemo()


def _other_versions(source: LiveSource, ref: ObjectRef) -> list[str]:
    """Other apiVersions of the same group/kind the source holds the object in (snapshots only:
    the API server converts between the versions it serves)."""
    lookup = getattr(source, "other_versions", None)
    return list(lookup(ref)) if callable(lookup) else []


def _plural(kind: str) -> str:
    """The resource name kubectl knows a kind by, as the API's naming convention makes it
    (``NetworkPolicy`` -> ``networkpolicies``, ``Ingress`` -> ``ingresses``)."""
    low = kind.lower()
    if low.endswith("s"):
        return low + ("es" if low.endswith(("ss", "us")) else "")
    if low.endswith("y") and low[-2:-1] not in "aeiou":
        return low[:-1] + "ies"
    return low + ("es" if low.endswith(("x", "ch", "sh")) else "s")


def other_version_note(ref: ObjectRef, others: Sequence[str]) -> str:
    """The snapshot holds ``ref`` only in ``others`` (git's ``autoscaling/v1``, the snapshot's
    ``v2``): not compared, and how to export it in git's version."""
    group, _, version = ref.api_version.rpartition("/")
    resource = _plural(ref.kind)
    where = f" -n {ref.namespace}" if ref.namespace else ""
    return (f"{ref} not compared: the snapshot holds it as {', '.join(others)}, git declares {ref.api_version}; "
            f"export it in git's version: kubectl get {resource}.{version}{'.' + group if group else ''} "
            f"{ref.name}{where} -o yaml --show-managed-fields")


def _secret_mask(value: Any) -> Any:
    if value is None:
        return None
    digest = hashlib.sha256(repr(value).encode()).hexdigest()[:8]
    return f"‹secret sha256:{digest}›"


#: Interactive tools a person edits a live object with (managedFields manager names). kubectl
#: names its manager after the verb (``kubectl-edit``); k9s and Lens are the common consoles (Lens
#: and other browser tools show up under their user agent, ``Mozilla``).
_KUBECTL_EDITS = frozenset(f"kubectl-{verb}" for verb in ("edit", "patch", "set", "label", "annotate", "scale",
                                                          "taint", "rollout"))
_CONSOLES = ("k9s", "Mozilla", "lens")


def _added_by_person(who: ownership.Owner | None, appliers: Sequence[str]) -> bool:
    """Was a live-only list item (or label) added by a person, not by admission, a controller or the server?

    Only an interactive editing tool's ``Update`` counts. Appliers and creators never do
    (``kubectl-client-side-apply``, ``kubectl`` (server-side apply, and every verb of kubectl
    < 1.19), ``kubectl-create``, ``kubectl-replace``, Helm, the configured ``appliers``, any
    ``Apply`` operation): they send a whole object, and the server records everything mutating
    admission added to it (default tolerations, injected sidecars and volumes) under that
    request's manager -- on create, and on every update that admission mutates. An edit tool's
    update is a person changing a field or two of an existing object, which admission rarely
    touches.
    """
    if who is None or who.operation != "Update" or who.manager in appliers:
        return False
    return who.manager in _KUBECTL_EDITS or who.manager.startswith(_CONSOLES)


def _at(doc: Any, path: Path) -> Any:
    """The node at ``path`` in ``doc``, or None."""
    for part in path:
        if isinstance(part, int) and isinstance(doc, list) and 0 <= part < len(doc):
            doc = doc[part]
        elif isinstance(part, str) and isinstance(doc, dict):
            doc = doc.get(part)
        else:
            return None
    return doc


def _secret_item(item: Any, patterns: Sequence[str]) -> str | None:
    """A ``{name, value}`` list item (an env var, a parameter) whose name looks secret."""
    if isinstance(item, dict) and isinstance(item.get("name"), str) and item.get("value") not in (None, ""):
        if is_secret_key(item["name"], patterns):
            return f"item named {item['name']!r}"
    return None


def _secret_inside(value: Any, patterns: Sequence[str]) -> str | None:
    """Why a whole value (an item, a container, a list, a template) added, removed or
    changed holds a secret at any depth: a ``{name, value}`` item with a secret-looking name
    (an env var ``DB_PASSWORD`` of a second container), a secret-looking key of a nested
    ``annotations``/``labels`` map, or of the ``data``/``binaryData`` of a nested
    ConfigMap. Walked without recursion; the live object was bounded (``bounds.check_nodes``)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        if why := _secret_item(node, patterns):
            return why
        maps = [node.get(k) for k in NAMED_MAPS]
        if node.get("kind") == "ConfigMap":
            maps += [node.get(k[0]) for k in CONFIGMAP_KEYED]
        for keyed in maps:
            if isinstance(keyed, dict):
                for key in keyed:
                    if is_secret_key(str(key), patterns):
                        return f"key name {key!r}"
        stack.extend(node.values())
    return None


def _named_item(fd: FieldDiff, git_doc: Any, live_doc: Any, patterns: Sequence[str]) -> str | None:
    """Why a difference inside a named list item is secret: the ``value`` of an env var
    called ``DB_PASSWORD`` is one whatever the kind (``valueFrom`` references are not),
    also deep inside a whole item or list added, removed or changed."""
    for value in (fd.live, fd.git):
        if why := _secret_inside(value, patterns):
            return why
    if len(fd.path) >= 2 and fd.path[-1] == "value" and isinstance(fd.path[-2], int):
        item = _at(git_doc, fd.path[:-1]) if fd.git is not None else None
        if not isinstance(item, dict) and fd.live is not None:
            item = _at(live_doc, fd.where_live[:-1])
        if isinstance(item, dict) and isinstance(item.get("name"), str) and is_secret_key(item["name"], patterns):
            return f"item named {item['name']!r}"
    for doc, where, value in ((live_doc, fd.where_live, fd.live), (git_doc, fd.path, fd.git)):  # ``--db-password``, then it
        index = where[-1] if value is not None and where else None
        items = _at(doc, where[:-1]) if isinstance(index, int) else None
        if isinstance(items, list) and isinstance(index, int) and (why := secrets.option_value(items, index, patterns)):
            return why
    return None


def _looks_secret(kind: str, fd: FieldDiff, patterns: Sequence[str], git_doc: Any = None,
                  live_doc: Any = None) -> str | None:
    """Why the difference ``fd`` looks like a secret (never copied, never shown), else None:
    a secret-looking key of a ConfigMap's data or of annotations/labels, the value of a list
    item with a secret-looking name, or a secret inside the value (``secrets.judge``)."""
    path = fd.path
    if path and keyed_map(kind, path[:-1]) and is_secret_key(str(path[-1]), patterns):
        return f"key name {path[-1]!r}"
    if why := _named_item(fd, git_doc, live_doc, patterns):
        return why
    # inside the value: a credential's shape, a file's secret key, binaryData decoded (``secrets``)
    binary = kind == "ConfigMap" and path[:1] == ("binaryData",)
    return secrets.judge(fd.live, patterns, binary=binary) or secrets.judge(fd.git, patterns, binary=binary)


def _judge_secrets(kind: str, fds: list[FieldDiff], patterns: Sequence[str], git_doc: Any = None,
                   live_doc: Any = None) -> list[tuple[FieldDiff, str | None]]:
    """Each difference with why it looks secret; a whole map added live (ConfigMap data,
    annotations, labels) is judged key by key: its secret keys become differences of their
    own, the rest stays one."""
    out: list[tuple[FieldDiff, str | None]] = []
    for fd in fds:
        if keyed_map(kind, fd.path) and isinstance(fd.live, dict) and not isinstance(fd.git, dict):
            keyed = {k: replace(fd, path=fd.path + (k,), git=None, live=v, cls=DriftClass.ADDED,
                                live_path=fd.where_live + (k,)) for k, v in fd.live.items()}
            why = {k: _looks_secret(kind, one, patterns) for k, one in keyed.items()}
            if any(why.values()):
                rest = {k: v for k, v in fd.live.items() if not why[k]}
                if rest:
                    out.append((replace(fd, live=rest), None))
                out += [(keyed[k], w) for k, w in why.items() if w]
                continue
        out.append((fd, _looks_secret(kind, fd, patterns, git_doc, live_doc)))
    return out


def _edit_for(fd: FieldDiff) -> Edit | None:
    if fd.cls is DriftClass.ADDED:
        return Edit(fd.path, fd.live, add=True)  # an int last part: append the whole item
    if fd.cls is DriftClass.VALUE:
        return Edit(fd.path, fd.live)
    return None


def _candidates(
    config: Config, namespace: str, service: str, source: LiveSource, manifests: Manifests,
    cache: dict[ObjectRef, Any]
) -> set[str] | None:
    """Candidate hosts for a Service's Endpoints/slices: from the live ConfigMap, else git's."""
    bound = config.candidates_for(namespace, service)
    if bound is None:
        return None
    # Once read in this detection, a binding's list stays what it was (the ConfigMap is read
    # once per detection): remembered by the Candidates entry, which many Services may share.
    known = cache.get(bound, _UNREAD)  # type: ignore[call-overload]
    if known is not _UNREAD:
        return set(known)
    cm = _config_map_ref(bound.namespace, bound.config_map)
    live = cache.get(cm, _UNREAD)
    if live is _UNREAD:
        live = cache[cm] = source.get(cm)
    declared = manifests.objects.get(cm)
    hosts: set[str] = set()
    for obj in (live, declared.data if declared is not None else None):
        value = get_path(obj, ("data", bound.key)) if obj else MISSING
        if isinstance(value, str):
            hosts = endpoints.candidate_hosts(value)
            break
    cache[bound] = frozenset(hosts)  # type: ignore[index]
    return hosts


@functools.lru_cache(maxsize=1024)
def _config_map_ref(namespace: str, name: str) -> ObjectRef:
    return ObjectRef("v1", "ConfigMap", namespace, name)


#: Not in the per-detection cache of live objects yet (None there means absent live).
_UNREAD: Any = object()


def _get_live(source: LiveSource, ref: ObjectRef, cache: dict[ObjectRef, Any]) -> dict[str, Any] | None:
    """The live object; an EndpointSlice also under the older version a snapshot may hold."""
    found = cache.get(ref, _UNREAD)
    if found is not _UNREAD:
        return found  # type: ignore[no-any-return]
    live = source.get(ref)
    for alt in endpoints.ALTERNATE_VERSIONS.get((ref.api_version, ref.kind), ()) if live is None else ():
        try:
            live = source.get(replace(ref, api_version=alt))
        except ClusterUnreachable:
            raise
        except ClusterError:
            live = None  # not served or not watched under that version: absent
        if live is not None:
            break
    if live is not None and ref.kind == endpoints.SLICE:
        live = endpoints.as_v1(live)
    cache[ref] = live
    return live


class _Family:
    """The Endpoints family of one set of manifests: which slices belong to which Service."""

    def __init__(self, manifests: Manifests) -> None:
        self.slices: dict[tuple[str, str], list[ObjectRef]] = {}
        declared = {(r.namespace, r.name) for r in manifests.objects if r.kind == endpoints.ENDPOINTS}
        self.shadowed: set[ObjectRef] = set()
        for ref, obj in sorted(manifests.objects.items()):
            if ref.kind != endpoints.SLICE:
                continue
            service = endpoints.service_of(ref.kind, obj.data)
            if service is None:
                continue
            if endpoints.is_mirrored(obj.data) and (ref.namespace, service) in declared:
                self.shadowed.add(ref)  # the control plane's copy of a declared Endpoints
            else:
                self.slices.setdefault((ref.namespace, service), []).append(ref)

    def read_binding(self, obj: GitObject, live: dict[str, Any], config: Config, source: LiveSource,
                     manifests: Manifests, cache: dict[ObjectRef, Any]) -> None:
        """What ``binding`` reads, for an object whose binding's content cannot matter (one in
        sync): it fails where ``binding`` would, for the same reason."""
        if obj.ref.kind != endpoints.ENDPOINTS:
            self.binding(obj, live, config, source, manifests, cache)
            return
        # Of an Endpoints' binding only reading the candidate ConfigMap can fail (taking a list
        # apart cannot): read it as ``_candidates`` would.
        service = endpoints.service_of(obj.ref.kind, obj.data)
        bound = config.candidates_for(obj.ref.namespace, service) if service is not None else None
        if bound is not None:
            cm = _config_map_ref(bound.namespace, bound.config_map)
            if cm not in cache:
                cache[cm] = source.get(cm)

    def binding(self, obj: GitObject, live: dict[str, Any], config: Config, source: LiveSource,
                manifests: Manifests, cache: dict[ObjectRef, Any]) -> endpoints.Binding | None:
        ref = obj.ref
        service = endpoints.service_of(ref.kind, obj.data)
        if service is None:
            return None
        cands = _candidates(config, ref.namespace, service, source, manifests, cache)
        if ref.kind == endpoints.ENDPOINTS:
            return endpoints.Binding(service, cands, tuple(endpoints.ready_addresses(ref.kind, live)))
        members = self.slices.get((ref.namespace, service), [ref])
        seen: list[str] = []
        for member in members:
            try:
                other = live if member == ref else _get_live(source, member, cache)
            except ClusterUnreachable:
                raise
            except ClusterError:
                continue  # that slice reports its own error; judge with the ones we can see
            seen += [a for a in endpoints.ready_addresses(member.kind, other) if a not in seen]
        return endpoints.Binding(service, cands, tuple(seen), len(members))


def _object_drifts(
    obj: GitObject,
    live: dict[str, Any],
    config: Config,
    evidence: bases.Evidence,
    now: datetime,
    binding: endpoints.Binding | None,
    observed_since: datetime | None,
    note: str = "",
    memo: bool = False,
    unstored: list[str] | None = None,
) -> list[Drift]:
    ref = obj.ref
    ignore = config.ignored_pointers(ref.kind, ref.namespace, ref.name, live.get("metadata"))
    git = normalize(obj.data)
    appliers = tuple(config.appliers)
    # keys only live count where a person wrote them (the rule for items added live, below)
    by_person = ownership.moved_by(live, appliers, lambda who: _added_by_person(who, appliers))
    unowned = not (live.get("metadata") or {}).get("managedFields")
    if memo:  # a copy: the readiness diffs below extend it
        diffs = list(_COMPARED.get((obj.data, live), (ref.kind, ignore, appliers),
                                   lambda: compare(ref.kind, git, normalize(live), ignore, by_person, unowned)))
    else:
        diffs = compare(ref.kind, git, normalize(live), ignore, by_person, unowned)
    diffs, dropped = ownership.not_stored(ref, live, diffs)  # fields the server drops: notes (issue 20)
    if unstored is not None:
        unstored += dropped
    if binding is not None:
        diffs += endpoints.readiness_diff(ref.kind, git, live, diffs, ignore)
    if not diffs:
        return []
    live_n = normalize(live)
    # snapshots in git's list layout, as the diffs' paths
    evidence = replace(evidence, snapshots=[(n, align(ref.kind, b, git, live_n)) for n, b in evidence.snapshots])
    track = config.track_for(ref.kind)
    secret = ref.kind in NEVER_WRITTEN
    out = []
    if binding is not None:
        # Where the Service points: one drift, classified against its candidates. Port and
        # other changes of the object are drifts of their own, below.
        moved, diffs = endpoints.split(ref.kind, git, diffs)
        if moved and not endpoints.nothing_to_pick(ref.kind, obj.data, live, binding):
            verdict = bases.combine([bases.decide(fd.path, fd.git, fd.live, evidence, fd.where_live) for fd in moved])
            drift = endpoints.address_drift(ref, obj.file, obj.data, live, moved, binding, verdict.direction, track,
                                            now, config.stable_for, observed_since)
            out.append(replace(drift, base=verdict.base, base_why=verdict.why, base_note=note))
            if obj.templated and out[-1].action is not Action.REPORT:
                out[-1] = replace(out[-1], action=Action.REPORT, reason="templated: not written")
    patterns = (*DEFAULT_SECRET_PATTERNS, *config.secret_keys)
    for fd, looks_secret in _judge_secrets(ref.kind, diffs, patterns, git, live_n):
        verdict = bases.decide(fd.path, fd.git, fd.live, evidence, fd.where_live)
        dirn = verdict.direction
        manager, when = classify.provenance(live, fd.where_live)
        if looks_secret and not secret:
            # Never copied into git, never shown anywhere (text, JSON, PR, commit, webhooks, logs).
            shown_git = None if fd.git is None else REDACTED
            shown_live = None if fd.live is None else REDACTED
            out.append(Drift(ref, obj.file, fd.path, shown_git, shown_live, dirn, fd.cls, Action.REPORT, manager,
                             when, "looks like a secret (value not shown)",
                             f"looks like a secret ({looks_secret}): never copied into git; keep it in a Secret",
                             base=verdict.base, base_why=verdict.why, base_note=note))
            continue
        changed = classify.parse_time(when) or observed_since
        action, reason = classify.decide(ref.kind, fd.cls, dirn, track, changed, now, config.stable_for)
        if obj.templated and action is not Action.REPORT:
            action, reason = Action.REPORT, "templated: not written"
        elif (fd.needs_person and action is not Action.REPORT
              and not _added_by_person(ownership.owner(live, fd.where_live, config.appliers),
                                       config.appliers)):
            what = "list item" if fd.is_item else "key"
            who = f"by {manager}" if manager else "by an unknown manager (no managedFields entry)"
            action, reason = Action.REPORT, f"{what} added live {who}, not by a person: never written"
        git_v, live_v = (_secret_mask(fd.git), _secret_mask(fd.live)) if secret else (fd.git, fd.live)
        detail = "secret value differs" if secret else describe_change(git_v, live_v)
        edit = None if secret else _edit_for(fd)
        out.append(Drift(ref, obj.file, fd.path, git_v, live_v, dirn, fd.cls, action, manager, when, detail,
                         reason, (edit,) if edit else (), base=verdict.base, base_why=verdict.why, base_note=note))
    return out


def _store_readable(store: BaseStore | None, ref: ObjectRef) -> bool:
    """Can the state record be read now (``_evidence`` reads it for every compared object)?"""
    if store is None:
        return True
    try:
        store.base(ref)
        store.proposed(ref)
    except Exception:  # noqa: BLE001 -- whatever it raises, the full path raises it again for this object
        return False
    return True


def live_reads(config: Config, manifests: Manifests) -> list[ObjectRef]:
    """The live objects a comparison reads (what syncer's Role must grant: ``syncer.grants``)."""
    return sorted(set(_to_read(config.bound_to(endpoints.declared_services(manifests.objects)), manifests)))


def _to_read(config: Config, manifests: Manifests) -> list[ObjectRef]:
    """The live objects ``detect`` will read: tracked ones and their candidate ConfigMaps."""
    refs = [ref for ref in manifests.objects if config.track_for(ref.kind) is not Track.IGNORE]
    for ref in list(refs):
        service = endpoints.service_of(ref.kind, manifests.objects[ref].data)
        bound = config.candidates_for(ref.namespace, service) if service is not None else None
        if bound is not None:
            refs.append(ObjectRef("v1", "ConfigMap", bound.namespace, bound.config_map))
    return refs


class _Tracked:
    """The objects one config compares, in order, and which of them were found in sync.

    ``in_sync[i]`` is the live object that the i-th object was last found in sync with (or
    None). A comparison that found no difference depends on the git object, the live object
    and the config alone -- nothing of ``now``, the state record, git history or when the watch
    saw a change -- so the same live object again is in sync again without comparing. Only for
    a source whose objects are never modified (the watch cache; the git objects come from the
    parse cache, likewise read-only). An object with a difference is judged afresh every pass
    (its stability timing moves with ``now``)."""

    def __init__(self, config: Config, order: list[tuple[ObjectRef, GitObject]],
                 previous: _Tracked | None = None) -> None:
        self.config = config  # held: its identity is the key
        self.items = [(ref, obj, endpoints.is_family(ref.kind)) for ref, obj in order
                      if config.track_for(ref.kind) is not Track.IGNORE]
        self.in_sync: list[dict[str, Any] | None] = [None] * len(self.items)
        self.generation = _COMPARED.generation  # ``_COMPARED.clear()`` forgets these too
        if previous is not None and previous.config is config and previous.generation == self.generation:
            # A file changed: the objects of the other files are the same git objects, and
            # what was found about them still holds.
            known = {id(obj): seen for (_, obj, _), seen in zip(previous.items, previous.in_sync) if seen is not None}
            if known:
                held = {id(obj): obj for _, obj, _ in previous.items}
                for i, (_, obj, _) in enumerate(self.items):
                    if held.get(id(obj)) is obj:
                        self.in_sync[i] = known.get(id(obj))


class _Plan:
    """What detection derives from the manifests alone: the order objects are compared in (file
    order) and the Endpoints family. Remembered while ``load_manifests`` hands back the same
    manifests (no file changed), so a sidecar pass does not sort and index 5,000 objects again."""

    def __init__(self, manifests: Manifests, previous: _Plan | None = None) -> None:
        self.objects = manifests.objects  # held: its identity is the key
        self.order = sorted(manifests.objects.items(), key=lambda kv: (kv[1].file, kv[1].doc, kv[1].prefix))
        self.family = _Family(manifests)
        self._tracked: _Tracked | None = previous._tracked if previous is not None else None
        self._inherited = previous is not None

    def tracked(self, config: Config) -> _Tracked:
        last = self._tracked
        if last is not None and not self._inherited and last.config is config \
                and last.generation == _COMPARED.generation:
            return last
        self._tracked = _Tracked(config, self.order, last)
        self._inherited = False
        return self._tracked


_PLANS: list[_Plan] = []  # the last few (one installation per process in practice)
_PLANS_LOCK = threading.Lock()


def _plan(manifests: Manifests) -> _Plan:
    with _PLANS_LOCK:
        for plan in _PLANS:
            if plan.objects is manifests.objects:
                return plan
        latest = _PLANS[0] if _PLANS else None
    plan = _Plan(manifests, latest)
    with _PLANS_LOCK:
        _PLANS[:] = [plan, *_PLANS[:3]]
    return plan


def detect(
    config: Config,
    manifests: Manifests,
    source: LiveSource,
    now: datetime,
    *,
    store: BaseStore | None = None,
    observed_since: Mapping[ObjectRef, datetime] | None = None,
    history: GitHistory | None = None,
) -> Result:
    """Compare every tracked object; per-object problems become ``errors``, not exceptions.

    An API server that cannot be reached at all is raised (nothing could be compared);
    a 403 or a bad object only costs that object.
    """
    config = config.bound_to(endpoints.declared_services(manifests.objects))  # see Config.bound_to
    drifts: list[Drift] = []
    errors: list[FileError] = list(manifests.errors)
    warnings: list[FileError] = []
    unreadable: list[ObjectRef] = []
    notes: list[FileError] = list(manifests.skipped)
    checked: list[ObjectRef] = []
    cache: dict[ObjectRef, Any] = {}  # live objects read in this detection (and candidate lists, see _candidates)
    # A source whose objects are never modified (the watch cache) lets comparisons be remembered
    # while neither side changes: git objects come from the parse cache, likewise read-only.
    memo = bool(getattr(source, "immutable", False))
    prefetch = getattr(source, "prefetch", None)
    if prefetch is not None:  # an API source reads everything at once (lists, concurrent GETs)
        prefetch(_to_read(config, manifests))
    plan = _plan(manifests) if memo else _Plan(manifests)
    family = plan.family
    # The state record is read for every object compared (a record not read yet fails each
    # one); an object known in sync skips its comparison only while the record can be read.
    store_ok: bool | None = None if store is not None else True
    shadowed = family.shadowed
    tracked = plan.tracked(config)
    in_sync = tracked.in_sync
    reused = 0
    for i, (ref, obj, in_family) in enumerate(tracked.items):
        try:
            live = _get_live(source, ref, cache)
            if live is None:
                others = _other_versions(source, ref)
                if others:  # a note, not a drift: nothing says the object differs
                    notes.append(FileError(obj.file, other_version_note(ref, others)))
                else:
                    drifts.append(Drift(ref, obj.file, (), "declared", None, Direction.UNKNOWN, DriftClass.REMOVED,
                                        Action.REPORT, detail="declared in git, absent live",
                                        reason="absent live; syncer never deletes from git"))
                checked.append(ref)
                continue
            if shadowed and ref in shadowed:
                checked.append(ref)  # a mirrored slice: its Endpoints speaks for it
                continue
            if memo and in_sync[i] is live:
                if store_ok is None:
                    store_ok = _store_readable(store, ref)
                if store_ok:
                    # Still read what binds it (the candidate ConfigMap may have become
                    # unreadable); what it holds cannot matter to an object without differences.
                    if in_family:
                        family.read_binding(obj, live, config, source, manifests, cache)
                    checked.append(ref)
                    reused += 1
                    continue
            check_nodes(live, "live object")  # an alias bomb in a snapshot costs this object only
            binding = family.binding(obj, live, config, source, manifests, cache) if in_family else None
            since = observed_since.get(ref) if observed_since else None
            evidence, note = _evidence(obj, live, config, store, history, memo)
            unstored: list[str] = []
            found = _object_drifts(obj, live, config, evidence, now, binding, since, note, memo, unstored)
            notes.extend(FileError(obj.file, message) for message in unstored)
            if found and manifests.source_map is not None:
                found = manifests.source_map.place(obj, found)  # each field's own file (kustomize)
            drifts.extend(found)
            checked.append(ref)
            if memo:
                in_sync[i] = None if found or unstored else live
        except ClusterUnreachable:
            raise  # nothing can be compared
        except Refused as exc:  # the Role lacks this object: say which grant, go on with the rest
            unreadable.append(ref)
            written = config.track_for(ref.kind) in (Track.WRITEBACK, Track.STABLE)
            (errors if written else warnings).append(FileError(obj.file, unreadable_message(ref, exc, written)))
        except NotServed as exc:  # an API the cluster does not serve (a CRD not installed): syncer/served.py
            error, message = served_outcome(exc, config.track_for(ref.kind) in (Track.WRITEBACK, Track.STABLE))
            (errors if error else warnings).append(FileError(obj.file, message))
        except ClusterError as exc:
            errors.append(FileError(obj.file, f"{ref}: {exc.message}"))
        except ConfigError as exc:
            errors.append(FileError(obj.file, f"{ref}: {exc.message}"))
        except (AttributeError, TypeError, KeyError, ValueError, RecursionError) as exc:
            # A live object whose fields have types no Kubernetes server would send: report
            # that object and keep comparing the others.
            errors.append(FileError(obj.file, f"{ref}: live object has an unexpected shape ({type(exc).__name__}: "
                                              f"{str(exc)[:120]})"))
    _COMPARED.served(reused)  # comparisons not made again
    return Result(config.installation, tuple(drifts), tuple(errors), tuple(checked), tuple(warnings),
                  tuple(unreadable), tuple(notes))


def secret_fields(kind: str, obj: dict[str, Any], patterns: Sequence[str]) -> list[tuple[str, str]]:
    """(field, why) of each part of a whole object that looks secret, judged as detection judges a
    difference: as if git declared only the object's identity and a person had added the rest
    live (an untracked object proposed as a new file: ``syncer.untracked``)."""
    live = normalize(obj)
    found_meta = live.get("metadata")
    meta: dict[str, Any] = found_meta if isinstance(found_meta, dict) else {}
    git: dict[str, Any] = {k: live[k] for k in ("apiVersion", "kind") if k in live}
    git["metadata"] = {**{k: v for k, v in meta.items() if k in ("name", "namespace")}, "labels": {}, "annotations": {}}
    found = compare(kind, git, live, moved_by=lambda _path: True)
    return [(format_path(fd.path), why) for fd, why in _judge_secrets(kind, found, patterns, git, live) if why]
