"""The live side: read the declared objects from the Kubernetes API or from snapshot files.

``LiveSource`` is all the engine needs: ``get(ref)`` returns the live object as plain
JSON data, or ``None`` when it does not exist. Two sources:

* ``KubeSource``   the API server, through syncer's one client seam (``syncer.kube``): one
                   LIST per kind and namespace where that is cheaper and allowed, else GETs
                   by name; never writes.
* ``SnapshotSource``  ``kubectl get -o yaml`` output (a ``List`` or multi-document YAML).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from operator import attrgetter
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from syncer.gather import served
from syncer.errors import NOTHING_READABLE, ClusterError, ConfigError
from syncer.kinds import list_items
from syncer.kube import ApiError, Gone, Kube, KubeClient, KubeError, Refused, TooLarge, kube_client
from syncer.kube.lists import named_items
from syncer.sources.manifests import object_ref
from syncer.yamlread import parse_documents
from syncer.model import ObjectRef, Result
from syncer.detect.normalize import LAST_APPLIED

log = logging.getLogger("syncer.live")


@runtime_checkable
class Lister(Protocol):
    """A live source that can also list a kind in a namespace (untracked objects: the API server,
    a snapshot, the sidecar's watch cache through the API server)."""

    def list_objects(self, api_version: str, kind: str, namespace: str) -> list[dict[str, Any]]: ...


class LiveSource(Protocol):
    """Where live objects come from. Sources subclass it for the defaults of its capabilities
    (``immutable``, ``prefetch``, ``other_versions``); ``syncer.gather.collect`` is its one reader."""

    #: ``get`` hands out objects that are never modified (replaced on change: the watch cache),
    #: so detection may remember comparisons by their identity (``syncer.cache``).
    immutable: bool = False

    def get(self, ref: ObjectRef) -> dict[str, Any] | None: ...

    def describe(self) -> str: ...

    def prefetch(self, refs: Iterable[ObjectRef]) -> None:
        """Read ``refs`` at once (lists, concurrent GETs) before ``get`` asks for them one by one;
        by default nothing: each ``get`` reads."""
        return None

    def other_versions(self, ref: ObjectRef) -> Sequence[str]:
        """Other apiVersions of the same group/kind the source holds ``ref`` in (a snapshot: the
        API server converts between the versions it serves); by default none."""
        return ()

    def served_kinds(self) -> frozenset[str] | None:
        """Every kind the cluster serves, when the source can tell (an API server: discovery);
        None when it cannot (a snapshot: what it lacks may still exist). Asked only when the
        config names a kind no manifest declares (``gather.trackcheck``)."""
        return None


def _documents(text: str, display: str) -> list[Any]:
    """Documents of a snapshot; ``kubectl get -o json`` output takes the (much faster) JSON path."""
    if text.lstrip().startswith("{"):
        try:
            return [json.loads(text)]
        except ValueError:
            pass  # not plain JSON after all: let the YAML parser say what is wrong
    return parse_documents(text, display)


def _group(api_version: str) -> str:
    """``apps/v1`` -> ``apps``; ``v1`` -> ``""`` (the core group)."""
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


class SnapshotSource(LiveSource):
    """Live objects read from files; objects absent from every file are absent live."""

    def __init__(self, files: list[Path], default_namespace: str) -> None:
        self.files = files
        self.objects: dict[ObjectRef, dict[str, Any]] = {}
        self._cluster: dict[tuple[str, str, str], dict[str, Any]] = {}
        self._versions: dict[tuple[str, str, str, str], list[str]] = {}
        for path in files:
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ClusterError(f"{path}: cannot read live snapshot: {exc}") from exc
            for i, doc in enumerate(_documents(text, str(path))):
                items = list_items(doc)
                for j, obj in enumerate(items if items is not None else [doc]):
                    if obj is None:
                        continue
                    where = f"{path} (document {i + 1}{f' item {j}' if items is not None else ''})"
                    if not isinstance(obj, dict):
                        raise ClusterError(f"{where}: not a Kubernetes object")
                    try:
                        ref = object_ref(obj, default_namespace, where)
                    except ConfigError as exc:
                        raise ClusterError(str(exc)) from exc
                    self.objects[ref] = obj
                    meta = obj.get("metadata")
                    if isinstance(meta, dict) and not meta.get("namespace"):
                        # A server sends no namespace only for a cluster-scoped object.
                        self._cluster[(ref.api_version, ref.kind, ref.name)] = obj
                    self._versions.setdefault((_group(ref.api_version), ref.kind, ref.namespace, ref.name),
                                              []).append(ref.api_version)

    def get(self, ref: ObjectRef) -> dict[str, Any] | None:
        found = self.objects.get(ref)
        if found is None:
            # A namespace written on a cluster-scoped kind the tables do not know means nothing.
            found = self._cluster.get((ref.api_version, ref.kind, ref.name))
        return found

    def other_versions(self, ref: ObjectRef) -> list[str]:
        """apiVersions of the same group/kind/namespace/name the snapshot holds instead of ``ref``'s."""
        key = (_group(ref.api_version), ref.kind, ref.namespace, ref.name)
        return [v for v in self._versions.get(key, []) if v != ref.api_version]

    def describe(self) -> str:
        return "snapshot " + ", ".join(str(f) for f in self.files)

    def list_objects(self, api_version: str, kind: str, namespace: str) -> list[dict[str, Any]]:
        """The snapshot's objects of ``kind`` in ``namespace`` (any version of its group)."""
        group = _group(api_version)
        return [names_only(obj) for ref, obj in self.objects.items()
                if ref.kind == kind and ref.namespace == namespace and _group(ref.api_version) == group]


#: Objects of one kind in one namespace from which one LIST is cheaper than GETs by name
#: (a LIST returns every object of the kind in the namespace, declared or not).
LIST_FROM = 8
#: GETs in flight at once when reading by name (over one keep-alive connection pool).
CONCURRENCY = 8
#: Objects per LIST page.
PAGE = 500
#: ObjectRef's order (its fields in turn), as a key: sorting thousands of refs by it is twice as fast.
_ORDER = attrgetter("api_version", "kind", "namespace", "name")
#: Seconds the served kinds stand before discovery is asked again (``served_kinds``).
KINDS_TTL = 300.0
#: Kinds never listed: a LIST would read every Secret of the namespace, not only the declared.
NEVER_LISTED = frozenset({"Secret"})


class KubeSource(LiveSource):
    """Objects read from the API server through the ``Kube`` seam (syncer/kube/).

    ``prefetch`` reads a whole detection's objects at once: one paged LIST per kind and
    namespace when enough objects of it are declared and RBAC allows listing, else
    bounded-concurrency GETs by name (a Role limited by ``resourceNames`` cannot list: the
    403 makes it fall back, said once at debug level). ``get`` answers from that read, or
    reads the one object. Never writes.
    """

    def __init__(self, kube: Kube, *, concurrency: int = CONCURRENCY, list_from: int | None = None) -> None:
        self.kube = kube
        self.concurrency = concurrency
        self.list_from = LIST_FROM if list_from is None else list_from
        self._read: dict[ObjectRef, dict[str, Any] | None | KubeError] = {}
        #: LISTs begun by ``expect``, by (apiVersion, kind, namespace)
        self._early: dict[tuple[str, str, str], Future[dict[str, dict[str, Any]] | Exception]] = {}
        #: (apiVersion, kind, namespace) -> how it is read ("list" or why not)
        self.paths: dict[tuple[str, str, str], str] = {}
        self._kinds: tuple[frozenset[str], float] | None = None  # served_kinds, and when asked

    def describe(self) -> str:
        return f"API server {self.kube.host}"

    def served_kinds(self) -> frozenset[str] | None:
        """Discovery's kinds, asked again after ``KINDS_TTL`` (a CRD installed meanwhile)."""
        now = time.monotonic()
        if self._kinds is None or now - self._kinds[1] > KINDS_TTL:
            self._kinds = served.served_kinds(self.kube), now
        return self._kinds[0]

    def get(self, ref: ObjectRef) -> dict[str, Any] | None:
        if ref in self._read:
            found = self._read.pop(ref)
            if isinstance(found, KubeError):
                raise found
            return found
        return self._get(ref)

    def _get(self, ref: ObjectRef) -> dict[str, Any] | None:
        return self.kube.call("GET", served.object_path(self.kube, ref), what=f"get {ref}")

    def prefetch(self, refs: Iterable[ObjectRef]) -> None:
        """Read ``refs`` now, as few requests as RBAC allows; ``get`` then answers from memory.
        The LISTs of several kinds go at once (the API server answers one while syncer reads
        another's pages); what each found is then taken in order, as when they went one by one."""
        groups: dict[tuple[str, str, str], list[ObjectRef]] = {}
        for ref in sorted(set(refs), key=_ORDER):  # ObjectRef's own order, compared in C
            groups.setdefault((ref.api_version, ref.kind, ref.namespace), []).append(ref)
        listable = [(key, members) for key, members in groups.items() if self._may_list(key, members)]
        early = {key: self._early[key] for key, _ in listable if key in self._early}
        self._early.clear()  # begun for groups read otherwise: dropped
        rest = [(key, members) for key, members in listable if key not in early]
        answers = dict(zip((key for key, _ in rest), self._lists([members[0] for _, members in rest])))
        answers.update({key: begun.result() for key, begun in early.items()})
        by_name: list[ObjectRef] = []
        for key, members in groups.items():
            if not self._listed(key, members, answers.get(key)):
                by_name.extend(members)
        if not by_name:
            return
        with ThreadPoolExecutor(max_workers=max(1, min(self.concurrency, len(by_name))),
                                thread_name_prefix="kube-get") as pool:
            for ref, found in zip(by_name, pool.map(self._get_or_error, by_name)):
                self._read[ref] = found

    def expect(self, keys: Iterable[tuple[str, str, str]]) -> None:
        """Begin, in the background, the LISTs of the (apiVersion, kind, namespace) groups a
        detection will likely read (a one-shot command begins them while it parses the
        manifests: ``syncer.gather.oneshot``). ``prefetch`` takes an answer begun here for a group it
        reads with one LIST, with the same messages and fallbacks, and drops the others."""
        for key in keys:
            if key[1] in NEVER_LISTED or key in self._early or self.paths.get(key, "list") != "list":
                continue
            begun: Future[dict[str, dict[str, Any]] | Exception] = Future()
            ref = ObjectRef(*key, "")

            def run(ref: ObjectRef = ref, begun: Future[dict[str, dict[str, Any]] | Exception] = begun) -> None:
                try:
                    begun.set_result(self._list(ref))
                except Exception as exc:  # taken by prefetch as the LIST's answer, like any other
                    begun.set_result(exc)

            threading.Thread(target=run, name="kube-list-early", daemon=True).start()
            self._early[key] = begun

    def _get_or_error(self, ref: ObjectRef) -> dict[str, Any] | None | KubeError:
        try:
            return self._get(ref)
        except KubeError as exc:
            return exc

    def _may_list(self, key: tuple[str, str, str], members: list[ObjectRef]) -> bool:
        return key[1] not in NEVER_LISTED and len(members) >= self.list_from and self.paths.get(key, "list") == "list"

    def _lists(self, firsts: list[ObjectRef]) -> list[dict[str, dict[str, Any]] | Exception]:
        """``_list`` of each ref's kind and namespace, at once; an exception is its answer."""
        def one(ref: ObjectRef) -> dict[str, dict[str, Any]] | Exception:
            try:
                return self._list(ref)
            except Exception as exc:  # an answer too: _listed raises or handles it in order, as if read alone
                return exc

        if len(firsts) <= 1:
            return [one(ref) for ref in firsts]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(firsts)), thread_name_prefix="kube-list") as pool:
            return list(pool.map(one, firsts))

    def _listed(self, key: tuple[str, str, str], members: list[ObjectRef],
                answer: dict[str, dict[str, Any]] | Exception | None) -> bool:
        """Take ``members`` from their kind's paged LIST, ``answer`` (None: not listed); False
        when they must be read by name."""
        api_version, kind, namespace = key
        where = f"{kind} in {namespace or 'the cluster'}"
        if kind in NEVER_LISTED or len(members) < self.list_from:
            self._say(key, "get", f"live reads: {len(members)} {where} by name (GET, {self.concurrency} at a time)")
            return False
        if self.paths.get(key, "list") != "list" or answer is None:
            return False
        try:
            if isinstance(answer, Exception):
                raise answer
            items = answer
        except (Refused, TooLarge, Gone) as exc:
            self._say(key, "get", f"live reads: cannot list {where} ({exc.message}); reading {len(members)} "
                                  f"by name (GET, {self.concurrency} at a time)")
            return False
        except ClusterError as exc:
            if isinstance(exc, NOTHING_READABLE) or (isinstance(exc, ApiError) and exc.transient):
                raise
            self._say(key, "get", f"live reads: cannot list {where} ({exc.message}); reading by name")
            return False
        self._say(key, "list", f"live reads: one LIST for {len(members)} {where}")
        for ref in members:
            self._read[ref] = items.get(ref.name)
        return True

    def list_objects(self, api_version: str, kind: str, namespace: str) -> list[dict[str, Any]]:
        """Every object of ``kind`` in ``namespace`` (paged LIST; a Secret's values dropped as read)."""
        listed = self._list(ObjectRef(api_version, kind, namespace, ""))
        return [names_only(obj) for obj in listed.values()]

    def _list(self, ref: ObjectRef) -> dict[str, dict[str, Any]]:
        path = served.collection_path(self.kube, ref)
        items: dict[str, dict[str, Any]] = {}
        token = ""
        while True:
            query = [("limit", str(PAGE))] + ([("continue", token)] if token else [])
            doc = self.kube.call("GET", path, query=query, what=f"list {ref.kind} in {ref.namespace}")
            if doc is None:
                raise ClusterError(f"the API server does not serve {path}", transient=False)
            for name, item in named_items(doc):
                items[name] = {"apiVersion": ref.api_version, "kind": ref.kind, **item}
            token = str((doc.get("metadata") or {}).get("continue") or "")
            if not token:
                return items

    def _say(self, key: tuple[str, str, str], path: str, message: str) -> None:
        if key not in self.paths:
            log.debug(message)
        self.paths[key] = path


#: Keys of a Secret that hold its values: never kept when Secrets are listed (untracked objects).
_SECRET_VALUES = ("data", "stringData")


def names_only(obj: dict[str, Any]) -> dict[str, Any]:
    """A Secret without its values (other kinds as they are)."""
    if obj.get("kind") != "Secret":
        return obj
    meta = obj.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("annotations"), dict):
        meta = {**meta, "annotations": {k: v for k, v in meta["annotations"].items() if k != LAST_APPLIED}}
    return {**{k: v for k, v in obj.items() if k not in _SECRET_VALUES}, "metadata": meta}


def kube_api_client(kubeconfig: str | None, context: str | None, impersonate: str | None = None,
                    impersonate_groups: Sequence[str] = ()) -> KubeClient:
    """The API client of the CLI: kubeconfig (explicit, $KUBECONFIG, ~/.kube/config) or in-cluster,
    as ``impersonate`` (kubectl's ``--as``/``--as-group``) when given."""
    return kube_client(kubeconfig, context, read_yaml=parse_documents, pool_size=max(16, CONCURRENCY),
                       impersonate=impersonate, impersonate_groups=impersonate_groups)


def snapshot_note(source: LiveSource, result: Result) -> Result:
    """``result`` with one warning when a snapshot's objects carry no ``managedFields`` and that is
    why some direction is unknown: ``kubectl get -o yaml`` leaves them out unless given
    ``--show-managed-fields`` (kubectl 1.21 on), and they are the base that says who moved."""
    from dataclasses import replace

    from syncer.model import Direction, FileError

    if not isinstance(source, SnapshotSource):
        return result
    bare = sorted({str(d.ref) for d in result.drifts if d.direction is Direction.UNKNOWN
                   and not ((source.get(d.ref) or {}).get("metadata") or {}).get("managedFields")})
    if not bare:
        return result
    files = ", ".join(str(f) for f in source.files)
    note = FileError(files, f"{files}: {len(bare)} object(s) with differences carry no managedFields, so who moved "
                            "them (git or the cluster) and which field manager changed them is unknown; take the "
                            "snapshot with `kubectl get -o yaml --show-managed-fields`")
    return replace(result, warnings=result.warnings + (note,))
