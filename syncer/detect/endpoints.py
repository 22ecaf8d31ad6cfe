"""The Endpoints family: where a selector-less Service points, judged against its candidates. Pure.

A reconciler (asgard's endpoint manager) points a Service at whichever candidate host
answers, by writing either its ``v1 Endpoints`` or its ``discovery.k8s.io`` EndpointSlices
(labelled ``kubernetes.io/service-name=<service>``). ``candidates[].endpoints`` in syncer.conf
names the Service; the binding covers the Endpoints of that name and every slice labelled
with it. The class of a difference comes from the *ready* addresses:

* ``pick``        every ready address is a declared candidate: normal, written once stable;
* ``undeclared``  a ready address is in no candidate list: loud, never written;
* ``cleared``     no ready address at all: the backend is absent right now (an outage),
                  never written.

The slices of one Service are judged together, as the Service's address set: a Service whose
reconciler moved its address from one slice to another is a ``pick`` in both slices, and it is
``cleared`` only when no slice has a ready endpoint. Slices that the control plane mirrors from
an Endpoints (``endpointslice.kubernetes.io/managed-by: endpointslicemirroring-controller.k8s.io``)
are a copy of that Endpoints: when git declares the Endpoints too, the Endpoints speaks for them.

Only the address part of an object is classified. A port change is a difference of its own
(class ``value``), never carried inside a ``pick`` whose message names addresses only.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

from syncer.detect.diff import FieldDiff
from syncer.kinds import ENDPOINTS_FAMILY
from syncer.cache import Caches, by_identity
from syncer.model import JSON, DriftClass, ObjectRef, Path
from syncer.detect.normalize import is_ignored
from syncer.detect.values import address_list

SLICE = "EndpointSlice"
ENDPOINTS = "Endpoints"
FAMILY = ENDPOINTS_FAMILY
SERVICE_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MIRROR_CONTROLLER = "endpointslicemirroring-controller.k8s.io"

_HOSTNAME_KEY = "kubernetes.io/hostname"
_ZONE_KEY = "topology.kubernetes.io/zone"


def is_family(kind: str) -> bool:
    return kind in FAMILY


def address_root(kind: str) -> Path:
    """Where an object of the family keeps its addresses."""
    return ("endpoints",) if kind == SLICE else ("subsets",)


def _labels(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    meta = (obj or {}).get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return labels if isinstance(labels, dict) else {}


def service_of(kind: str, obj: Mapping[str, Any] | None) -> str | None:
    """The Service an Endpoints (its own name) or a slice (its service-name label) belongs to."""
    if kind == ENDPOINTS:
        meta = (obj or {}).get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        return str(name) if name else None
    if kind == SLICE:
        name = _labels(obj).get(SERVICE_LABEL)
        return str(name) if isinstance(name, str) and name else None
    return None


def declared_services(objects: Mapping[ObjectRef, Any], *, caches: Caches | None = None) -> frozenset[tuple[str, str]]:
    """(namespace, Service) of every Endpoints and EndpointSlice among git's ``objects``
    (ObjectRef -> GitObject): where candidate bindings without a namespace bind. Remembered in
    ``caches.declared`` while the same (read-only) objects come back: a sidecar pass asks
    twice, 5,000 objects each (None: computed each time)."""
    def compute() -> frozenset[tuple[str, str]]:
        return frozenset((ref.namespace, service) for ref, obj in objects.items()
                         if ref.kind in (ENDPOINTS, SLICE) and (service := service_of(ref.kind, obj.data)) is not None)

    return compute() if caches is None else by_identity(caches.declared, (objects,), None, compute)


def is_mirrored(obj: Mapping[str, Any] | None) -> bool:
    """A slice the control plane mirrors from an Endpoints object."""
    return _labels(obj).get(MANAGED_BY_LABEL) == MIRROR_CONTROLLER


def canonical(address: str) -> str:
    """One spelling per address: IPs compressed (``2001:db8::1``), names lower-case without a final dot.

    Remembered by string (every pass of the sidecar spells the same addresses again), for an
    address as long as a DNS name can be: a pure function of a short string, so at most
    65,536 entries of ``_SHORT_ADDRESS`` characters whatever a snapshot or a manifest holds."""
    return _canonical(address) if len(address) <= _SHORT_ADDRESS else _canonical.__wrapped__(address)


#: The longest address remembered: a DNS name is at most 253 characters (and a little space around it).
_SHORT_ADDRESS = 256


@functools.lru_cache(maxsize=65_536)
def _canonical(address: str) -> str:
    text = address.strip()
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return text.lower().rstrip(".")


def endpoint_ready(endpoint: Mapping[str, Any]) -> bool:
    """Is a slice endpoint ready to take traffic?

    ``conditions.ready`` absent means ready (the API defines nil as "unknown, treat as
    ready"). A ``terminating`` endpoint is leaving and never counts, even while it still
    serves; an endpoint that states ``serving: false`` and no ``ready`` does not count either.
    """
    conditions = endpoint.get("conditions")
    cond = conditions if isinstance(conditions, dict) else {}
    if cond.get("terminating") is True:
        return False
    ready = cond.get("ready")
    if ready is None:
        return cond.get("serving") is not False
    return ready is True


def ready_addresses(kind: str, obj: Mapping[str, Any] | None) -> list[str]:
    """Ready addresses of an Endpoints (``subsets[].addresses``) or a slice, in order, canonical."""
    out: list[str] = []
    if not obj:
        return out
    if kind == SLICE:
        endpoints = obj.get("endpoints")
        for ep in endpoints if isinstance(endpoints, list) else []:
            if not isinstance(ep, dict) or not endpoint_ready(ep):
                continue
            addresses = ep.get("addresses")
            for addr in addresses if isinstance(addresses, list) else []:
                if isinstance(addr, str) and addr.strip():
                    out.append(canonical(addr))
        return out
    subsets = obj.get("subsets")
    for subset in subsets if isinstance(subsets, list) else []:
        addresses = subset.get("addresses") if isinstance(subset, dict) else None
        for addr in addresses if isinstance(addresses, list) else []:
            ip = (addr.get("ip") or addr.get("hostname")) if isinstance(addr, dict) else None
            if ip:
                out.append(canonical(str(ip)))
    return out


def all_addresses(kind: str, obj: Mapping[str, Any] | None) -> set[str]:
    """Every address an Endpoints or slice names, ready or not (``notReadyAddresses`` too), canonical."""
    out: set[str] = set()
    if not obj:
        return out
    if kind == SLICE:
        eps = obj.get("endpoints")
        for ep in eps if isinstance(eps, list) else []:
            out |= address_set(ep)
        return out
    subsets = obj.get("subsets")
    for subset in subsets if isinstance(subsets, list) else []:
        for key in ("addresses", "notReadyAddresses"):
            addresses = subset.get(key) if isinstance(subset, dict) else None
            for addr in addresses if isinstance(addresses, list) else []:
                ip = (addr.get("ip") or addr.get("hostname")) if isinstance(addr, dict) else None  # as ready_addresses
                if ip:
                    out.add(canonical(str(ip)))
    return out


def candidate_hosts(value: Any) -> set[str]:
    """Host part of every address in a candidate list value (``host``, ``host:port``, ``[v6]:port``)."""
    if not isinstance(value, str):
        return set()
    if len(value) > _REMEMBERED_LIST:  # a live value can be a megabyte: never hold many of them
        return set(_parse_candidate_hosts(value))
    return set(_candidate_hosts(value))  # a copy: the caller owns its set


#: Candidate lists up to this many characters are remembered (real ones hold a few addresses).
_REMEMBERED_LIST = 4096


@functools.lru_cache(maxsize=1024)
def _candidate_hosts(value: str) -> frozenset[str]:
    """``candidate_hosts`` of one string, remembered: every Endpoints bound to a ConfigMap key
    reads the same list, pass after pass."""
    return _parse_candidate_hosts(value)


def _parse_candidate_hosts(value: str) -> frozenset[str]:
    tokens = address_list(value)
    hosts = set()
    for token in tokens or []:
        if token.startswith("["):
            hosts.add(canonical(token[1 : token.index("]")]))
        else:
            hosts.add(canonical(token.rsplit(":", 1)[0] if token.count(":") == 1 else token))
    return frozenset(hosts)


def address_class(addresses: Iterable[str], candidates: set[str] | None) -> DriftClass:
    """``cleared`` / ``pick`` / ``undeclared`` for a set of ready addresses (``value`` when unbound)."""
    found = list(addresses)
    if not found:
        return DriftClass.CLEARED
    if candidates is None:
        return DriftClass.VALUE
    return DriftClass.PICK if all(a in candidates for a in found) else DriftClass.UNDECLARED


def is_port_path(kind: str, path: Path) -> bool:
    """Does a difference at ``path`` concern ports (its own ``value`` drift) rather than addresses?"""
    if kind == SLICE:
        return path[:1] == ("ports",)
    return path[:1] == ("subsets",) and "ports" in path[1:]


def is_address_path(kind: str, path: Path) -> bool:
    """Is ``path`` inside the part of the object that says where the Service points?"""
    root = address_root(kind)
    return path[: len(root)] == root and not is_port_path(kind, path)


def with_git_ports(git_subsets: Any, live_subsets: Any) -> Any:
    """Live ``subsets`` carrying git's ports where git has a subset at the same index.

    When whole subsets differ (the reconciler replaced the list), the address change is
    written with git's ports, so a port change stays a drift of its own.
    """
    if not isinstance(live_subsets, list):
        return live_subsets
    git_list = git_subsets if isinstance(git_subsets, list) else []
    out = []
    for i, subset in enumerate(live_subsets):
        if isinstance(subset, dict) and i < len(git_list) and isinstance(git_list[i], dict):
            subset = dict(subset)
            if "ports" in git_list[i]:
                subset["ports"] = git_list[i]["ports"]
            else:
                subset.pop("ports", None)
        out.append(subset)
    return out


def subset_port_changes(git_subsets: Any, live_subsets: Any) -> list[tuple[Path, Any, Any]]:
    """(path, git, live) for each subset whose ports differ, where whole subsets were replaced."""
    if not isinstance(git_subsets, list) or not isinstance(live_subsets, list):
        return []
    out: list[tuple[Path, Any, Any]] = []
    for i, (g, l) in enumerate(zip(git_subsets, live_subsets)):
        if isinstance(g, dict) and isinstance(l, dict) and "ports" in g and g.get("ports") != l.get("ports"):
            out.append((("subsets", i, "ports"), g.get("ports"), l.get("ports")))
    return out


def as_v1(obj: JSON) -> JSON:
    """A live EndpointSlice in the shape a manifest declares: ``endpoints: null`` (how the API
    server sends an empty list) as ``[]``, and a ``discovery.k8s.io/v1beta1`` slice in the v1
    shape (``topology`` becomes ``nodeName``/``zone``/``deprecatedTopology``, as the API server
    converts it)."""
    endpoints = obj.get("endpoints")
    if "endpoints" in obj and endpoints is None:
        return {**obj, "endpoints": []}  # the API server writes an empty list as null
    if not isinstance(endpoints, list) or not any(isinstance(e, dict) and "topology" in e for e in endpoints):
        return obj
    converted = []
    for ep in endpoints:
        if isinstance(ep, dict) and isinstance(ep.get("topology"), dict):
            ep = dict(ep)
            topology = dict(ep.pop("topology"))
            if _HOSTNAME_KEY in topology and "nodeName" not in ep:
                ep["nodeName"] = topology.pop(_HOSTNAME_KEY)
            if _ZONE_KEY in topology and "zone" not in ep:
                ep["zone"] = topology.pop(_ZONE_KEY)
            if topology:
                ep["deprecatedTopology"] = topology
        converted.append(ep)
    return {**obj, "endpoints": converted}


# -- one object's differences, split and classified -----------------------------------


def split(kind: str, git: Mapping[str, Any], diffs: list[FieldDiff]) -> tuple[list[FieldDiff], list[FieldDiff]]:
    """(differences in where the Service points, every other difference).

    Port differences go to the second list. When whole ``subsets`` were replaced, the port
    part is taken out of the address change (which then carries git's ports) and becomes a
    difference of its own at ``subsets[i].ports``.
    """
    addresses: list[FieldDiff] = []
    rest: list[FieldDiff] = []
    for fd in diffs:
        if not is_address_path(kind, fd.path):
            rest.append(fd)
        elif kind == ENDPOINTS and fd.path == ("subsets",) and fd.cls is DriftClass.VALUE:
            git_subsets = git.get("subsets")
            addresses.append(FieldDiff(fd.path, fd.git, with_git_ports(git_subsets, fd.live), fd.cls))
            rest += [FieldDiff(p, g, l, DriftClass.VALUE) for p, g, l in subset_port_changes(git_subsets, fd.live)]
        else:
            addresses.append(fd)
    return addresses, rest


def readiness_diff(kind: str, git: Mapping[str, Any], live: Mapping[str, Any], diffs: list[FieldDiff],
                   ignore: tuple[str, ...] = ()) -> list[FieldDiff]:
    """The address part as one difference when only readiness changed where git says nothing.

    A manifest may leave ``conditions`` out (absent means ready); the manager then marks the
    endpoint ``ready: false``. No declared field differs, yet the Service has lost its
    address: that is an outage to report, so it must not pass as "in sync".
    """
    root = address_root(kind)
    if any(is_address_path(kind, fd.path) for fd in diffs) or is_ignored(root, ignore):
        return []
    if set(ready_addresses(kind, git)) == set(ready_addresses(kind, live)):
        return []  # the order of addresses carries no meaning
    key = "endpoints" if kind == SLICE else "subsets"
    return [FieldDiff(root, git.get(key), live.get(key), DriftClass.VALUE)]


def address_set(endpoint: Any) -> frozenset[str]:
    addresses = endpoint.get("addresses") if isinstance(endpoint, dict) else None
    return frozenset(canonical(a) for a in addresses if isinstance(a, str)) if isinstance(addresses, list) else frozenset()
