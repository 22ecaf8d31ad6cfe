"""Objects created live and never committed (``untracked:`` in syncer.conf). Pure.

syncer compares what git declares; an object someone made live (``kubectl create configmap``,
a Service added during an incident) is invisible to that comparison and would be lost with the
cluster. With ``untracked: report`` the live objects of the installation's namespaces, of the
kinds it tracks (plus Secrets, by name), that git does not declare are drifts of class
``untracked``; with ``propose`` each (never a Secret) is also written as a new, clean file.

Most live objects are nobody's git: what a controller made (an owner reference), what the
system made (``kube-root-ca.crt``, the ``default`` ServiceAccount and its token Secret, the
Endpoints of a Service with a selector), Helm's release records, syncer's own state. Each such
exclusion is one row of ``EXCLUSIONS`` with its reason; the config's ``ignore`` rules without
pointers (by kind, name, namespace, labels, annotations) leave out the rest.

The caller lists the objects (``Lister``); this module only judges and cleans them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from syncer.cache import Caches
from syncer.config import Config, UntrackedMode
from syncer.detect.secretpolicy import secret_fields
from syncer.errors import Unserved
from syncer.kinds import CLUSTER_SCOPED, NEVER_WRITTEN, api_versions
from syncer.kube import Refused
from syncer.gather.live import Lister, LiveSource
from syncer.writeback.plan import FileChange
from syncer.writeback.livefile import clean as clean, render as render  # re-exported: the file of a proposal
from syncer.model import JSON, Action, Direction, Drift, DriftClass, FileError, ObjectRef, Result, Track
from syncer.secrets.redact import DEFAULT_SECRET_PATTERNS

if TYPE_CHECKING:
    from syncer.writeback.deliver import Loaded

log = logging.getLogger("syncer.untracked")

#: Kinds never looked at: records of what happened, not configuration anyone keeps in git.
NEVER_LISTED_KINDS = frozenset({"Event", "Lease", "EndpointSlice", "ReplicaSet", "Pod", "ControllerRevision",
                                "Job"})
#: Kinds listed by name only: their values are never kept, shown or written.
NAMES_ONLY = NEVER_WRITTEN


@dataclass(frozen=True)
class Exclusion:
    """One kind of live object that no git declares, and why."""

    name: str
    reason: str
    applies: Callable[[str, JSON, Mapping[str, JSON]], bool]  # (kind, object, Services by name)


def _meta(obj: JSON) -> JSON:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _owned(kind: str, obj: JSON, services: Mapping[str, JSON]) -> bool:
    return bool(_meta(obj).get("ownerReferences"))


def _root_ca(kind: str, obj: JSON, services: Mapping[str, JSON]) -> bool:
    # kube-controller-manager publishes the cluster's CA into every namespace (1.20+).
    return kind == "ConfigMap" and _meta(obj).get("name") == "kube-root-ca.crt"


def _default_account(kind: str, obj: JSON, services: Mapping[str, JSON]) -> bool:
    return kind == "ServiceAccount" and _meta(obj).get("name") == "default"


def _token_secret(kind: str, obj: JSON, services: Mapping[str, JSON]) -> bool:
    return kind == "Secret" and (obj.get("type") == "kubernetes.io/service-account-token"
                                 or "kubernetes.io/service-account.name" in (_meta(obj).get("annotations") or {}))


def _helm_release(kind: str, obj: JSON, services: Mapping[str, JSON]) -> bool:
    name = str(_meta(obj).get("name", ""))
    return (kind in ("Secret", "ConfigMap") and (name.startswith("sh.helm.release.v1.")
                                                 or obj.get("type") == "helm.sh/release.v1"
                                                 or (_meta(obj).get("labels") or {}).get("owner") == "helm"))


def _selector_endpoints(kind: str, obj: JSON, services: Mapping[str, JSON]) -> bool:
    # The endpoints controller keeps the Endpoints of a Service with a selector; the API server
    # keeps "kubernetes" in default.
    if kind != "Endpoints":
        return False
    service = services.get(str(_meta(obj).get("name", "")))
    spec = service.get("spec") if isinstance(service, dict) else None
    return isinstance(spec, dict) and bool(spec.get("selector")) or _meta(obj).get("name") == "kubernetes"


def _api_service(kind: str, obj: JSON, services: Mapping[str, JSON]) -> bool:
    return kind == "Service" and _meta(obj).get("name") == "kubernetes" and _meta(obj).get("namespace") == "default"


def _other_source(kind: str, obj: JSON, services: Mapping[str, JSON]) -> bool:
    # A Helm release, an Argo CD application or a Flux kustomization declares it elsewhere.
    meta = _meta(obj)
    notes, labels = meta.get("annotations") or {}, meta.get("labels") or {}
    return ("meta.helm.sh/release-name" in notes or "argocd.argoproj.io/tracking-id" in notes
            or "kustomize.toolkit.fluxcd.io/name" in labels or "helm.toolkit.fluxcd.io/name" in labels)


def _syncer_record(kind: str, obj: JSON, services: Mapping[str, JSON]) -> bool:
    # syncer's state ConfigMap (syncer.sidecar.state.LABELS); its Lease is a kind never listed.
    return (_meta(obj).get("labels") or {}).get("app.kubernetes.io/managed-by") == "syncer"


def _leader_record(kind: str, obj: JSON, services: Mapping[str, JSON]) -> bool:
    return kind in ("ConfigMap", "Endpoints") and \
        "control-plane.alpha.kubernetes.io/leader" in (_meta(obj).get("annotations") or {})


#: The exclusions, each with its reason (Argo CD's orphaned-resource exclusions are the floor).
EXCLUSIONS: tuple[Exclusion, ...] = (
    Exclusion("owner-reference", "made by a controller (it has an owner reference)", _owned),
    Exclusion("root-ca", "published in every namespace by kube-controller-manager", _root_ca),
    Exclusion("default-service-account", "made in every namespace by the service account controller",
              _default_account),
    Exclusion("service-account-token", "a service account token, made by the token controller", _token_secret),
    Exclusion("helm-release", "Helm's record of a release", _helm_release),
    Exclusion("selector-endpoints", "kept by the endpoints controller for a Service with a selector",
              _selector_endpoints),
    Exclusion("api-service", "the API server's own Service", _api_service),
    Exclusion("leader-election", "a leader-election record", _leader_record),
    Exclusion("syncer-record", "syncer's own state record", _syncer_record),
    Exclusion("other-source", "declared elsewhere: a Helm release, an Argo CD application or a Flux object names it",
              _other_source),
)


def excluded(kind: str, obj: JSON, services: Mapping[str, JSON], config: Config) -> str | None:
    """Why ``obj`` is nobody's git (the reason of the first exclusion that applies), else None."""
    meta = _meta(obj)
    name, namespace = str(meta.get("name", "")), str(meta.get("namespace", ""))
    for rule in EXCLUSIONS:
        if rule.applies(kind, obj, services):
            return rule.reason
    for ignore in config.ignore:
        if not ignore.pointers and ignore.matches(kind, namespace, name, meta):
            return "matched by an ignore rule of the config"
    return None


def scope(config: Config, declared: Iterable[ObjectRef]) -> list[tuple[str, str, str]]:
    """(apiVersion, kind, namespace) to list: the kinds the installation tracks (or the config's
    ``untracked.kinds``), plus Secrets, in every namespace git places objects in."""
    declared = list(declared)
    versions: dict[str, str] = {}
    namespaces = {config.namespace}
    for ref in declared:
        versions.setdefault(ref.kind, ref.api_version)
        if ref.namespace:
            namespaces.add(ref.namespace)
    if config.untracked.kinds:
        kinds = set(config.untracked.kinds)
    else:
        kinds = {k for k in versions if config.track_for(k) is not Track.IGNORE}
        kinds |= {k for k, mode in config.track.items() if mode is not Track.IGNORE}
        kinds.add("Secret")
    out: list[tuple[str, str, str]] = []
    for kind in sorted(kinds - NEVER_LISTED_KINDS - CLUSTER_SCOPED):
        if config.track.get(kind) is Track.IGNORE:
            continue
        version = versions.get(kind) or next(iter(api_versions(kind)), None)  # kinds.KINDS: the newest
        if version is None:
            continue  # a kind neither git nor the table names a version for: nothing to list it in
        out.extend((version, kind, ns) for ns in sorted(namespaces))
    return out


def _created(obj: JSON) -> tuple[str | None, str | None]:
    """(manager, time) of the object's creation: its oldest managedFields entry, else the
    creationTimestamp."""
    meta = _meta(obj)
    entries = [e for e in meta.get("managedFields") or [] if isinstance(e, dict) and e.get("manager")]
    if entries:
        first = min(entries, key=lambda e: str(e.get("time") or ""))
        return str(first["manager"]), (str(first["time"]) if first.get("time") else meta.get("creationTimestamp"))
    return None, meta.get("creationTimestamp")


#: Longest file name stem written (the name limit is 255 bytes; room for ``.yaml``).
MAX_STEM = 120


def file_for(installation: str, kind: str, namespace: str, name: str) -> str:
    """Where ``propose`` writes an object: ``hosts/<inst>/untracked/<namespace>/<kind>-<name>.yaml``.

    Characters a file name should not hold become ``_``; a name (or namespace) that loses any
    that way, or is cut for length, ends in a hash of what it was, so two objects never share a
    file however alike they clean (``a/b`` and ``a_b``, ``café`` and ``cafè``, ``.`` and ``..``),
    and each keeps its file from pass to pass."""
    def safe(text: str) -> str:
        return re.sub(r"[^A-Za-z0-9_.-]", "_", text).lstrip(".") or "_"

    def digest(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]

    stem = f"{safe(kind.lower())}-{safe(name)}"
    if len(stem) > MAX_STEM or safe(name) != name:  # an object name may be 253 characters; a file name 255 bytes
        stem = f"{stem[:MAX_STEM - 13]}-{digest(f'{kind}/{name}')}"
    folder = safe(namespace or "_cluster")
    if namespace and folder != namespace:
        folder = f"{folder[:MAX_STEM - 13]}-{digest(namespace)}"
    return f"hosts/{installation}/untracked/{folder}/{stem}.yaml"


def _collisions(drifts: list[Drift]) -> list[Drift]:
    """Objects that would still share a file (a kind of two API groups, names that differ only in
    case on a case-insensitive checkout): each reported, neither written."""
    by_file: dict[str, list[Drift]] = {}
    for d in drifts:
        if d.action is Action.WRITE:
            by_file.setdefault(d.file.casefold(), []).append(d)
    clash = {id(d): group for group in by_file.values() if len(group) > 1 for d in group}
    out = []
    for d in drifts:
        if id(d) in clash:
            others = ", ".join(str(o.ref) for o in clash[id(d)] if o is not d)
            why = d.reason.replace("; proposed as a new file", "")
            d = dataclasses.replace(d, action=Action.REPORT, file="", reason=(
                f"{why}; not written: {others} would be written to the same file ({d.file}); neither is"))
        out.append(d)
    return out


def find(config: Config, declared: Iterable[ObjectRef], lister: Lister, caches: Caches | None = None) -> list[Drift]:
    """The untracked objects as drifts (class ``untracked``), one per object, sorted; ``caches``:
    where the judgements of their texts are remembered (None: nowhere)."""
    mode = config.untracked.mode
    if mode is UntrackedMode.IGNORE:
        return []
    declared = set(declared)
    known = {(r.kind, r.namespace, r.name) for r in declared}
    drifts: list[Drift] = []
    listed: dict[tuple[str, str], list[JSON]] = {}
    for api_version, kind, namespace in scope(config, declared):
        listed[(kind, namespace)] = _listed(lister, api_version, kind, namespace)
    for (kind, namespace), objects in sorted(listed.items()):
        services = {str(_meta(s).get("name")): s for s in listed.get(("Service", namespace), [])}
        for obj in objects:
            meta = _meta(obj)
            name = str(meta.get("name", ""))
            if not name or (kind, namespace, name) in known or excluded(kind, obj, services, config):
                continue
            drifts.append(_drift(config, kind, namespace, obj, mode, caches))
    return _collisions(sorted(drifts, key=lambda d: (d.ref.kind, d.ref.namespace, d.ref.name)))


def _listed(lister: Lister, api_version: str, kind: str, namespace: str) -> list[JSON]:
    """The objects of ``kind`` in ``namespace``, listed in ``api_version``; where the server does
    not serve that one, in the first other version of the kind it serves (``kinds.KINDS``: each
    release serves a kind in some of them only, batch/v1 CronJobs from Kubernetes 1.21,
    batch/v1beta1 ones until 1.24). Served in none: the last one's ``Unserved``."""
    versions = (api_version, *(v for v in api_versions(kind) if v != api_version))
    for version in versions[:-1]:
        try:
            return lister.list_objects(version, kind, namespace)
        except Unserved:
            continue
    return lister.list_objects(versions[-1], kind, namespace)


def _drift(config: Config, kind: str, namespace: str, obj: JSON, mode: UntrackedMode, caches: Caches | None) -> Drift:
    meta = _meta(obj)
    name = str(meta["name"])
    ref = ObjectRef(str(obj.get("apiVersion", "")), kind, namespace, name)
    manager, when = _created(obj)
    who = f"created by {manager}" if manager else "creator unknown (no managedFields)"
    why = f"no owner, {who}" + (f" at {when}" if when else "")
    secret = kind in NAMES_ONLY
    cleaned = None if secret else clean(obj)
    # judged as detection judges a live change: a secret-looking key or value anywhere in it
    # keeps the whole object out of git, and its values out of every output
    found = [] if cleaned is None else secret_fields(kind, cleaned, (*DEFAULT_SECRET_PATTERNS, *config.secret_keys),
                                                     caches)
    write = mode is UntrackedMode.PROPOSE and not secret and not found
    if secret:
        reason = f"{why}; a {kind}: never written, its values never read into the report"
    elif found:
        field, what = found[0]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        reason = f"{why}; looks like a secret at {field}: {what}{more}: never written, values not shown"
        cleaned = None
    elif write:
        reason = f"{why}; proposed as a new file"
    else:
        reason = f"{why}; reported (untracked: {mode.value})"
    return Drift(ref, file_for(config.installation, kind, namespace, name) if write else "", (), None,
                 cleaned, Direction.CLUSTER, DriftClass.UNTRACKED,
                 Action.WRITE if write else Action.REPORT, manager=manager, changed_at=when,
                 detail="created live, not in git", reason=reason)


class WarnOnRefusal:
    """A ``Lister`` whose 403s become one warning each, naming the grant (the rest is still listed);
    logged once per installation (``Caches.refusals_said``: the sidecar lists at every pass)."""

    def __init__(self, inner: Lister, where: str, caches: Caches) -> None:
        self.inner = inner
        self.where = where
        self.said = caches.refusals_said
        self.warnings: list[FileError] = []

    def list_objects(self, api_version: str, kind: str, namespace: str) -> list[JSON]:
        try:
            return self.inner.list_objects(api_version, kind, namespace)
        except Refused as exc:
            message = (f"untracked: cannot list {kind} in {namespace} ({exc.message}): grant list on it to see the "
                       "objects created there live (chart: untracked.enabled=true, untracked.resources)")
            key = (kind, namespace)
            if self.said.get(key) is None:  # the sidecar lists at every pass: the log says it once
                self.said.put(key, True)
                log.warning("%s", message)
            self.warnings.append(FileError(self.where, message))
            return []



def with_untracked(loaded: "Loaded", result: Result, source: LiveSource, caches: Caches | None = None) -> Result:
    """``result`` with the live objects git does not declare (``untracked:`` in the config);
    a kind the account may not list is one warning naming the grant, the rest goes on."""
    config = loaded.config
    if config.untracked.mode is UntrackedMode.IGNORE:
        return result
    if not isinstance(source, Lister):
        return replace(result, errors=result.errors + (FileError(
            config.source, f"untracked: {source.describe()} cannot list objects; untracked objects not read"),))
    caches = caches if caches is not None else Caches()
    lister = WarnOnRefusal(source, config.source, caches)
    found = find(config, loaded.manifests.objects, lister, caches)
    if not loaded.git.proposes_files:  # a render shows only what its inputs list
        found = [replace(d, action=Action.REPORT, file="",
                         reason=d.reason.replace("; proposed as a new file", "") +
                         f"; not proposed: {loaded.git.new_file_note}")
                 if d.action is Action.WRITE else d for d in found]
    return replace(result, drifts=result.drifts + tuple(found), warnings=result.warnings + tuple(lister.warnings))



def _linked_dir(host: Path, path: Path) -> str | None:
    """The first directory between ``host`` and ``path`` that is a symlink or not a directory
    (a committed ``untracked -> /elsewhere`` would take the new file out of the repository)."""
    if host.is_symlink():
        return str(host)
    at = host
    for part in path.relative_to(host).parts[:-1]:
        at = at / part
        if at.is_symlink() or (at.exists() and not at.is_dir()):
            return str(at.relative_to(host.parent.parent))
    return None


def new_files(repo: Path, installation: str, drifts: Iterable[Drift],
              aborted: list[FileError]) -> list[tuple[Drift, FileChange]]:
    """(drift, FileChange) of each untracked object to propose as a new file (the drifts to
    write: their source proposes files, ``Source.proposes_files``). A file that exists already
    is one line in ``aborted`` instead."""
    host = repo / "hosts" / installation
    out: list[tuple[Drift, FileChange]] = []
    for drift in drifts:
        if drift.action is not Action.WRITE or not drift.file or not isinstance(drift.live, dict):
            continue
        path = repo / drift.file
        if path.exists() or path.is_symlink():
            aborted.append(FileError(drift.file, f"{drift.ref}: not written: {drift.file} exists already"))
            continue
        if link := _linked_dir(host, path):
            aborted.append(FileError(drift.file, f"{drift.ref}: not written: {link} is a symlink or no directory; "
                                                 "refusing to write through it"))
            continue
        try:
            text = render(drift.live)
        except ValueError as exc:
            aborted.append(FileError(drift.file, f"{drift.ref}: not written: {exc}"))
            continue
        out.append((drift, FileChange(drift.file, "", text)))
    return out
