"""``syncer init``: infer an installation's config from its manifests and the live cluster.

Pure: ``infer`` takes the objects git declares and the live objects syncer could read and
returns an ``Inference`` -- the config's values, each with the reason it was chosen -- and
``render`` turns that into the text of ``hosts/<installation>/syncer.conf``. Reading git and
the cluster, and writing the file, is the CLI's job.

What is inferred:

* ``namespace``: kubectl's: ``-n``, else the kubeconfig context's (or ``default``); the one every
  namespaced manifest names, or a snapshot holds those naming none in, when there is one.
* ``track``: ConfigMap ``writeback``; Endpoints and EndpointSlice ``stable`` (a reconciler
  moves them, so only a value that held is written); every other kind present ``report``.
* ``candidates``: an Endpoints (or the EndpointSlices of its Service) is bound to a ConfigMap
  value when its addresses -- git's and the cluster's -- appear in exactly one ConfigMap value
  that is an address list (git's or the cluster's). Zero or several such values: no binding,
  and the reason says which. A Service git declares neither an Endpoints nor a slice of is
  not bound (syncer reads only what git declares): the reason names its live slices to declare.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from syncer.kinds import CLUSTER_SCOPED
from syncer.model import ObjectRef
from syncer.detect.values import address_list

#: Kinds a reconciler typically moves: written only after a value held for stableFor.
STABLE_KINDS = ("Endpoints", "EndpointSlice")
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_./-]*$")
_YAML_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"}


@dataclass(frozen=True)
class Binding:
    endpoints: str
    config_map: str
    key: str
    namespace: str


@dataclass
class Inference:
    installation: str
    namespace: str = "default"
    track: dict[str, str] = field(default_factory=dict)
    candidates: list[Binding] = field(default_factory=list)
    #: One line per decision, in the order they were made: what was chosen and why.
    reasons: list[str] = field(default_factory=list)


def _host(token: str) -> str:
    """The host part of an address-list token (``10.0.0.1:80`` -> ``10.0.0.1``, ``[::1]:80`` -> ``::1``)."""
    if token.startswith("[") and "]" in token:
        return token[1 : token.index("]")]
    if token.count(":") == 1:
        return token.split(":")[0]
    return token


def _same(a: str, b: str) -> bool:
    try:
        return ipaddress.ip_address(a) == ipaddress.ip_address(b)
    except ValueError:
        return a.lower().rstrip(".") == b.lower().rstrip(".")  # names: without their final dot


def endpoint_addresses(obj: Mapping[str, Any] | None) -> list[str]:
    """Every address an Endpoints or EndpointSlice holds (ready or not), in order, once each."""
    out: list[str] = []
    if not isinstance(obj, Mapping):
        return out
    if obj.get("kind") == "EndpointSlice":
        for ep in obj.get("endpoints") or []:
            if isinstance(ep, Mapping):
                out += [str(a) for a in ep.get("addresses") or []]
    else:
        for subset in obj.get("subsets") or []:
            if isinstance(subset, Mapping):
                for group in ("addresses", "notReadyAddresses"):
                    out += [str(a.get("ip")) for a in subset.get(group) or [] if isinstance(a, Mapping) and a.get("ip")]
    return list(dict.fromkeys(out))


def infer_namespace(declared: Iterable[ObjectRef], override: str | None, snapshot: Iterable[ObjectRef] = (),
                    context: tuple[str, str] | None = None) -> tuple[str, str]:
    """(namespace, why), as kubectl would pick the namespace of the manifests that name none
    (``ref.namespace`` ``""``): ``-n``; else, when every namespaced manifest names one and the
    same, that one; else the namespace the live ``snapshot`` holds those manifests in (when
    one); else kubectl's own default, the kubeconfig ``context``'s namespace (``context_namespace``),
    else ``default``. What most manifests name never decides: kubectl put the others elsewhere."""
    if override:
        return override, f"namespace {override}: given with -n"
    declared = list(declared)
    unnamed = {(r.kind, r.name) for r in declared if not r.namespace and r.kind not in CLUSTER_SCOPED}
    named = Counter(r.namespace for r in declared if r.namespace)
    if not unnamed and len(named) == 1:
        ns = next(iter(named))
        return ns, f"namespace {ns}: named by every namespaced manifest"
    aside = (f" ({len(unnamed)} manifests name none; others name their own: "
             f"{', '.join(f'{k} ({n})' for k, n in sorted(named.items()))})") if named else ""
    held = Counter(r.namespace for r in snapshot if r.namespace and (r.kind, r.name) in unnamed)
    if len(held) == 1:
        ns, n = next(iter(held.items()))
        return ns, f"namespace {ns}: the live snapshot holds {n} of the {len(unnamed)} manifests naming none there{aside}"
    if len(held) > 1:
        aside += f"; the snapshot holds them in several namespaces: {', '.join(sorted(held))}"
    if context is not None:
        ns, where = context
        return ns, f"namespace {ns}: {where}, as kubectl apply would use{aside}"
    return "default", f"namespace default: kubectl's default (no -n, no kubeconfig context){aside}"


def _track(kinds: Iterable[str], reasons: list[str]) -> dict[str, str]:
    present = sorted(set(kinds))
    track: dict[str, str] = {}
    if "ConfigMap" in present:
        track["ConfigMap"] = "writeback"
        reasons.append("track ConfigMap: writeback -- people kubectl edit them; copy their values back as seen")
    for kind in STABLE_KINDS:
        if kind in present:
            track[kind] = "stable"
            reasons.append(f"track {kind}: stable -- a reconciler repoints them; write a value only once it held")
    rest = [k for k in present if k not in track]
    for kind in rest:
        track[kind] = "report"
    if rest:
        reasons.append(f"track {', '.join(rest)}: report -- shown by diff, never written")
    return track


def infer(installation: str, git: Mapping[ObjectRef, Mapping[str, Any]], live: Mapping[ObjectRef, Mapping[str, Any]],
          namespace: tuple[str, str] | None = None) -> Inference:
    """The config for ``installation`` from the objects git declares (``git``) and the live objects
    syncer could read (``live``: the declared ones plus any EndpointSlices of their Services).
    ``namespace`` is ``infer_namespace``'s answer when the caller resolved it before loading ``git``."""
    out = Inference(installation)
    out.namespace, why = namespace or infer_namespace(git, None)
    out.reasons.append(why)
    kinds = [ref.kind for ref in git]
    if any(ref.kind == "EndpointSlice" for ref in live):
        kinds.append("EndpointSlice")
    out.track = _track(kinds, out.reasons)

    # Address lists: (namespace, ConfigMap, key) -> tokens, git's and the cluster's together.
    lists: dict[tuple[str, str, str], list[str]] = {}
    for source in (git, live):
        for ref, obj in source.items():
            if ref.kind != "ConfigMap":
                continue
            for key, value in (obj.get("data") or {}).items():
                tokens = address_list(value) if isinstance(value, str) else None
                if tokens:
                    have = lists.setdefault((ref.namespace, ref.name, str(key)), [])
                    have += [t for t in tokens if t not in have]

    # What each Service's endpoints hold: (namespace, name) -> addresses, git's and live's together.
    held: dict[tuple[str, str], list[str]] = {}
    # Which Services git declares an Endpoints or a slice of (syncer reads only those), and the
    # live slices git does not declare: (namespace, Service) -> slice names.
    declared: set[tuple[str, str]] = set()
    in_git = {(ref.namespace, ref.name) for ref in git if ref.kind == "EndpointSlice"}
    live_only: dict[tuple[str, str], list[str]] = {}
    for source in (git, live):
        for ref, obj in source.items():
            if ref.kind == "Endpoints":
                name = ref.name
            elif ref.kind == "EndpointSlice":
                name = str(((obj.get("metadata") or {}).get("labels") or {}).get(SERVICE_NAME_LABEL) or "")
                if not name:
                    continue
                if source is live and (ref.namespace, ref.name) not in in_git:
                    live_only.setdefault((ref.namespace, name), []).append(ref.name)
            else:
                continue
            if source is git:
                declared.add((ref.namespace, name))
            have = held.setdefault((ref.namespace, name), [])
            have += [a for a in endpoint_addresses(obj) if a not in have]

    for (ns, name), addresses in sorted(held.items()):
        if not addresses:
            out.reasons.append(f"endpoints {name}: no binding -- it holds no address in git or live to match")
            continue
        matches = [(k, [a for a in addresses if any(_same(a, _host(t)) for t in tokens)])
                   for k, tokens in sorted(lists.items()) if k[0] == ns]
        matches = [(k, found) for k, found in matches if found]
        shown = " ".join(addresses)
        if not matches:
            out.reasons.append(f"endpoints {name}: no binding -- no ConfigMap address list holds {shown}")
        elif len(matches) > 1:
            where = ", ".join(f"{cm}/{key}" for (_, cm, key), _ in matches)
            out.reasons.append(f"endpoints {name}: no binding -- {shown} {_are(addresses)} in several address lists ({where}); "
                               "add the right one by hand")
        elif (ns, name) not in declared:
            # syncer reads only the slices git declares: a binding now would watch nothing
            (_, cm, key), found = matches[0]
            unread = sorted(live_only.get((ns, name), []))
            out.reasons.append(f"endpoints {name}: no binding -- its {_slices(unread)} {_are(unread)} live only and "
                               f"syncer reads only what git declares: declare {_them(unread)} in git (hosts/"
                               f"{installation}/), then run init again to bind it to {cm}/{key} "
                               f"({' '.join(found)} {_are(found)} in that list)")
        else:
            (_, cm, key), found = matches[0]
            out.candidates.append(Binding(name, cm, key, ns))
            missing = [a for a in addresses if a not in found]
            note = f"; {' '.join(missing)} in no list (would be undeclared)" if missing else ""
            if ns != out.namespace:
                note += f" (namespace {ns})"
            out.reasons.append(f"candidates {name} -> {cm}/{key}: {' '.join(found)} {_are(found)} in that address list "
                               f"and in no other{note}")
            unread = sorted(live_only.get((ns, name), []))
            if unread:  # bound by what git declares; these are not read
                out.reasons.append(f"  {name}: its {_slices(unread)} {_are(unread)} live only: syncer does not read "
                                   f"{_them(unread)} until git declares {_them(unread)}")
    return out


def _are(items: list[str]) -> str:
    return "is" if len(items) == 1 else "are"


def _slices(names: list[str]) -> str:
    return ("EndpointSlice " if len(names) == 1 else "EndpointSlices ") + ", ".join(names)


def _them(items: list[str]) -> str:
    return "it" if len(items) == 1 else "them"


def _scalar(text: str) -> str:
    if _PLAIN.match(text) and text.lower() not in _YAML_WORDS:
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render(inf: Inference, command: str) -> str:
    """The text of ``syncer.conf`` for ``inf``; ``command`` is how it was produced (for the header)."""
    lines = [
        f"# syncer settings for {inf.installation}, inferred by `{command}`; review, then commit.",
        "# YAML, named syncer.conf so that kubectl apply -f, Argo CD and Flux leave it alone.  vim: set ft=yaml:",
        f"installation: {_scalar(inf.installation)}",
        f"namespace: {_scalar(inf.namespace)}",
    ]
    if inf.track:
        lines.append("track:                        # per kind: writeback | stable | report | ignore (unlisted: report)")
        lines += [f"  {_scalar(kind)}: {mode}" for kind, mode in inf.track.items()]
    else:
        lines.append("track: {}")
    lines.append("stableFor: 10m                # a stable value is written only after holding this long")
    if inf.candidates:
        lines.append("candidates:                   # which addresses an Endpoints may legitimately hold")
        for b in inf.candidates:
            lines += [f"  - endpoints: {_scalar(b.endpoints)}", f"    configMap: {_scalar(b.config_map)}",
                      f"    key: {_scalar(b.key)}"]
            if b.namespace != inf.namespace:
                lines.append(f"    namespace: {_scalar(b.namespace)}")
    return "\n".join(lines) + "\n"
