"""Detection, as one straight pipeline: manifests + live objects -> ``Result``. No writes.

The CLI and the sidecar both call ``detect``; write-back is a separate step fed by it.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from dataclasses import replace
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from syncer import bases, classify, endpoints, ownership
from syncer.bounds import check_nodes
from syncer.config import Config
from syncer.diff import FieldDiff, align, compare
from syncer.errors import ClusterError, ConfigError
from syncer.history import GitHistory, GitSays, judge
from syncer.kube import ClusterUnreachable
from syncer.manifests import GitObject, Manifests
from syncer.memo import IdentityMemo
from syncer.live import LiveSource
from syncer.model import Action, Direction, Drift, DriftClass, Edit, FileError, ObjectRef, Path, Result, Track
from syncer.normalize import get_path, normalize, MISSING
from syncer.redact import DEFAULT_SECRET_PATTERNS, REDACTED, is_secret_key, secret_value
from syncer.values import describe_change


class BaseStore(Protocol):
    """syncer's own record of the last state where git and the cluster agreed."""

    def base(self, ref: ObjectRef) -> dict[str, Any] | None: ...

    def proposed(self, ref: ObjectRef) -> Mapping[Path, Sequence[Any]]:
        """The values syncer proposed (PR or commit) for fields of ``ref``."""
        ...

    def propose(self, drifts: Sequence[Drift]) -> bool:
        """Remember ``drifts``' values before they are pushed."""
        ...


def _evidence(obj: GitObject, live: dict[str, Any], config: Config, store: BaseStore | None,
              history: GitHistory | None, memo: bool) -> tuple[bases.Evidence, str]:
    """Every base known for one object, and a note when the last-applied annotation is set aside.

    Git holding exactly a value syncer proposed there (the cluster's value at the time) means
    git took that value from the cluster: the cluster moved since, even when no pass saw the
    two agree, and even while a git-side change of another field of the object keeps the
    record of the whole object from moving on."""
    appliers = frozenset(config.appliers)
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
        if history is None:
            return None
        when = ownership.last_apply_time(live, appliers)
        if when is None:
            who = ownership.owner(live, path, appliers)
            when = who.time if who is not None else None
        applied_at = classify.parse_time(when)
        if applied_at is None:
            return None
        return judge(history.last_change(obj.file, obj.doc, obj.prefix + path), applied_at)

    return bases.Evidence(snapshots, proposed, owner, git_history), note


#: Field differences and last-applied bases, remembered while the git and live objects stay the
#: same objects (the sidecar's parse and watch caches): a pass re-compares only what changed.
#: ``_COMPARED`` also remembers which objects were found in sync (see ``_IN_SYNC``).
_COMPARED: IdentityMemo[Any] = IdentityMemo()
_LAST_APPLIED: IdentityMemo[tuple[dict[str, Any] | None, str]] = IdentityMemo()


def _other_versions(source: LiveSource, ref: ObjectRef) -> list[str]:
    """Other apiVersions of the same group/kind the source holds the object in (snapshots only:
    the API server converts between the versions it serves)."""
    lookup = getattr(source, "other_versions", None)
    return list(lookup(ref)) if callable(lookup) else []


def _secret_mask(value: Any) -> Any:
    if value is None:
        return None
    digest = hashlib.sha256(repr(value).encode()).hexdigest()[:8]
    return f"‹secret sha256:{digest}›"


#: managedFields managers that are people at a terminal (an item they added live may be written).
_PERSON_MANAGERS = ("k9s", "Mozilla", "lens")


def _added_by_person(manager: str | None) -> bool:
    """Was a live-only list item added by a person (not by admission, a controller or the server)?"""
    return manager is not None and (manager.startswith("kubectl") or manager.startswith(_PERSON_MANAGERS))


#: ConfigMap maps whose keys are judged one by one for secrets.
_SECRET_MAPS = (("data",), ("binaryData",))


def _looks_secret(kind: str, path: Path, git: Any, live: Any, patterns: Sequence[str]) -> str | None:
    """Why the value at ``path`` looks like a secret (never copied, never shown), else None."""
    if kind == "ConfigMap" and len(path) == 2 and path[:1] in _SECRET_MAPS and is_secret_key(str(path[1]), patterns):
        return f"key name {path[1]!r}"
    shape = secret_value(live) or secret_value(git)
    return f"value shaped like {shape}" if shape else None


def _judge_secrets(kind: str, fds: list[FieldDiff], patterns: Sequence[str]) -> list[tuple[FieldDiff, str | None]]:
    """Each difference with why it looks secret; a whole ConfigMap map added live is judged
    key by key: its secret keys become differences of their own, the rest stays one."""
    out: list[tuple[FieldDiff, str | None]] = []
    for fd in fds:
        if kind == "ConfigMap" and fd.path in _SECRET_MAPS and isinstance(fd.live, dict) \
                and not isinstance(fd.git, dict):
            why = {k: _looks_secret(kind, fd.path + (k,), None, v, patterns) for k, v in fd.live.items()}
            if any(why.values()):
                rest = {k: v for k, v in fd.live.items() if not why[k]}
                if rest:
                    out.append((replace(fd, live=rest), None))
                out += [(replace(fd, path=fd.path + (k,), git=None, live=fd.live[k], cls=DriftClass.ADDED,
                                 live_path=fd.where_live + (k,)), w)
                        for k, w in why.items() if w]
                continue
        out.append((fd, _looks_secret(kind, fd.path, fd.git, fd.live, patterns)))
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
    cm = _config_map_ref(bound.namespace, bound.config_map)
    live = cache.get(cm, _UNREAD)
    if live is _UNREAD:
        live = cache[cm] = source.get(cm)
    declared = manifests.objects.get(cm)
    for obj in (live, declared.data if declared is not None else None):
        value = get_path(obj, ("data", bound.key)) if obj else MISSING
        if isinstance(value, str):
            return endpoints.candidate_hosts(value)
    return set()


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
        service = endpoints.service_of(obj.ref.kind, obj.data)
        if service is not None:
            _candidates(config, obj.ref.namespace, service, source, manifests, cache)

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
) -> list[Drift]:
    ref = obj.ref
    ignore = config.ignored_pointers(ref.kind, ref.namespace, ref.name)
    git = normalize(obj.data)
    if memo:  # a copy: the readiness diffs below extend it
        diffs = list(_COMPARED.get((obj.data, live), (ref.kind, ignore),
                                   lambda: compare(ref.kind, git, normalize(live), ignore)))
    else:
        diffs = compare(ref.kind, git, normalize(live), ignore)
    if binding is not None:
        diffs += endpoints.readiness_diff(ref.kind, git, live, diffs, ignore)
    if not diffs:
        return []
    live_n = normalize(live)
    # snapshots in git's list layout, as the diffs' paths
    evidence = replace(evidence, snapshots=[(n, align(ref.kind, b, git, live_n)) for n, b in evidence.snapshots])
    track = config.track_for(ref.kind)
    secret = ref.kind == "Secret"
    out = []
    if binding is not None:
        # Where the Service points: one drift, classified against its candidates. Port and
        # other changes of the object are drifts of their own, below.
        moved, diffs = endpoints.split(ref.kind, git, diffs)
        if moved:
            verdict = bases.combine([bases.decide(fd.path, fd.git, fd.live, evidence, fd.where_live) for fd in moved])
            drift = endpoints.address_drift(ref, obj.file, obj.data, live, moved, binding, verdict.direction, track,
                                            now, config.stable_for, observed_since)
            out.append(replace(drift, base=verdict.base, base_why=verdict.why, base_note=note))
            if obj.templated and out[-1].action is not Action.REPORT:
                out[-1] = replace(out[-1], action=Action.REPORT, reason="templated: not written")
    patterns = (*DEFAULT_SECRET_PATTERNS, *config.secret_keys)
    for fd, looks_secret in _judge_secrets(ref.kind, diffs, patterns):
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
        elif fd.needs_person and action is not Action.REPORT and not _added_by_person(manager):
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


def _to_read(config: Config, manifests: Manifests) -> list[ObjectRef]:
    """The live objects ``detect`` will read: tracked ones and their candidate ConfigMaps."""
    refs = [ref for ref in manifests.objects if config.track_for(ref.kind) is not Track.IGNORE]
    for ref in list(refs):
        service = endpoints.service_of(ref.kind, manifests.objects[ref].data)
        bound = config.candidates_for(ref.namespace, service) if service is not None else None
        if bound is not None:
            refs.append(ObjectRef("v1", "ConfigMap", bound.namespace, bound.config_map))
    return refs


class _Plan:
    """What detection derives from the manifests alone: the order objects are compared in (file
    order) and the Endpoints family. Remembered while ``load_manifests`` hands back the same
    manifests (no file changed), so a sidecar pass does not sort and index 5,000 objects again."""

    def __init__(self, manifests: Manifests) -> None:
        self.objects = manifests.objects  # held: its identity is the key
        self.order = sorted(manifests.objects.items(), key=lambda kv: (kv[1].file, kv[1].doc, kv[1].prefix))
        self.family = _Family(manifests)
        self._tracked: tuple[Config, list[tuple[ObjectRef, GitObject, bool]]] | None = None

    def tracked(self, config: Config) -> list[tuple[ObjectRef, GitObject, bool]]:
        """(ref, git object, in the Endpoints family) of every object ``config`` does not ignore, in order."""
        last = self._tracked
        if last is not None and last[0] is config:
            return last[1]
        out = [(ref, obj, endpoints.is_family(ref.kind)) for ref, obj in self.order
               if config.track_for(ref.kind) is not Track.IGNORE]
        self._tracked = (config, out)
        return out


_PLAN: list[_Plan] = []  # the last one (one installation per process in practice)
_PLAN_LOCK = threading.Lock()


def _plan(manifests: Manifests) -> _Plan:
    with _PLAN_LOCK:
        if _PLAN and _PLAN[0].objects is manifests.objects:
            return _PLAN[0]
    plan = _Plan(manifests)
    with _PLAN_LOCK:
        _PLAN[:] = [plan]
    return plan


#: An object found in sync is remembered in ``_COMPARED`` too, keyed on (git object, live
#: object, config): only a comparison that found no difference, whose outcome depends on those
#: three alone (nothing of ``now``, the state record, git history or when the watch saw a
#: change), so the same three objects again are in sync again without comparing. An object
#: with a difference is judged afresh each pass (stability timing moves with ``now``).
_IN_SYNC = "in sync"


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
    drifts: list[Drift] = []
    errors: list[FileError] = list(manifests.errors)
    checked: list[ObjectRef] = []
    cache: dict[ObjectRef, Any] = {}
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
    for ref, obj, in_family in plan.tracked(config):
        try:
            live = _get_live(source, ref, cache)
            if live is None:
                others = _other_versions(source, ref)
                detail = "declared in git, absent live"
                if others:
                    detail = (f"git declares {ref.api_version}; the cluster holds {ref.kind} {ref.name} as "
                              f"{', '.join(others)}: versions differ, not compared field by field")
                drifts.append(Drift(ref, obj.file, (), "declared", None, Direction.UNKNOWN, DriftClass.REMOVED,
                                    Action.REPORT, detail=detail,
                                    reason="absent live in this version; syncer never deletes from git" if others
                                    else "absent live; syncer never deletes from git"))
                checked.append(ref)
                continue
            if shadowed and ref in shadowed:
                checked.append(ref)  # a mirrored slice: its Endpoints speaks for it
                continue
            if memo and _COMPARED.peek((obj, live, config), _IN_SYNC):
                if store_ok is None:
                    store_ok = _store_readable(store, ref)
                if store_ok:
                    # Still read what binds it (the candidate ConfigMap may have become
                    # unreadable); what it holds cannot matter to an object without differences.
                    if in_family:
                        family.read_binding(obj, live, config, source, manifests, cache)
                    checked.append(ref)
                    continue
            check_nodes(live, "live object")  # an alias bomb in a snapshot costs this object only
            binding = family.binding(obj, live, config, source, manifests, cache) if in_family else None
            since = observed_since.get(ref) if observed_since else None
            evidence, note = _evidence(obj, live, config, store, history, memo)
            found = _object_drifts(obj, live, config, evidence, now, binding, since, note, memo)
            drifts.extend(found)
            checked.append(ref)
            if memo and not found:
                _COMPARED.put((obj, live, config), _IN_SYNC, True)
        except ClusterUnreachable:
            raise  # nothing can be compared
        except ClusterError as exc:
            errors.append(FileError(obj.file, f"{ref}: {exc.message}"))
        except ConfigError as exc:
            errors.append(FileError(obj.file, f"{ref}: {exc.message}"))
        except (AttributeError, TypeError, KeyError, ValueError, RecursionError) as exc:
            # A live object whose fields have types no Kubernetes server would send: report
            # that object and keep comparing the others.
            errors.append(FileError(obj.file, f"{ref}: live object has an unexpected shape ({type(exc).__name__}: "
                                              f"{str(exc)[:120]})"))
    return Result(config.installation, tuple(drifts), tuple(errors), tuple(checked))
