"""Narrowing ``diff`` and ``sync`` to some objects: kubectl's label selector (``-l``) and
``--object KIND/NAME``.

The selector is matched against the labels git declares (what ``kubectl diff -l`` matches: the
objects of the files), in kubectl's syntax::

    app=web    app==web    tier!=db    env in (prod,staging)    env notin (dev)    release    !canary

Requirements separated by commas must all hold; ``!=`` and ``notin`` also hold for an object
without the key, as in Kubernetes. ``--object`` takes ``KIND/NAME`` or ``KIND/NAMESPACE/NAME``
(as syncer prints objects), the kind as kubectl spells it too (``ConfigMap``, ``configmap``,
``configmaps``, ``cm``). A selection that matches nothing is an error: a typo must not pass as
"in sync".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from syncer.errors import ConfigError
from syncer.sources.manifests import GitObject, Manifests
from syncer.model import ObjectRef

#: kubectl's short names of the built-in kinds syncer reads.
SHORT_NAMES = {
    "cm": "ConfigMap", "ep": "Endpoints", "svc": "Service", "sa": "ServiceAccount", "deploy": "Deployment",
    "sts": "StatefulSet", "ds": "DaemonSet", "cj": "CronJob", "ing": "Ingress", "netpol": "NetworkPolicy",
    "hpa": "HorizontalPodAutoscaler", "pdb": "PodDisruptionBudget", "pvc": "PersistentVolumeClaim", "po": "Pod",
    "rs": "ReplicaSet", "ns": "Namespace", "pv": "PersistentVolume", "sc": "StorageClass", "crd":
    "CustomResourceDefinition", "quota": "ResourceQuota", "limits": "LimitRange",
}

_KEY = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                  r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
_SET = re.compile(r"^\s*(?P<key>[^\s!=()]+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)\s*$")
_BINARY = re.compile(r"^\s*(?P<key>[^\s!=()]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^\s=!(),]*)\s*$")
_EXISTS = re.compile(r"^\s*(?P<not>!?)\s*(?P<key>[^\s!=()]+)\s*$")


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "in" | "notin" | "exists" | "!exists"  (= and == are "in", != is "notin")
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!exists":
            return not present
        if self.op == "in":
            return present and labels[self.key] in self.values
        return not present or labels[self.key] not in self.values


def _split(text: str) -> list[str]:
    """The selector's requirements: commas outside parentheses separate them."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _check(selector: str, key: str, values: Sequence[str] = ()) -> None:
    if not _KEY.match(key) or len(key.rpartition("/")[2]) > 63:
        raise ConfigError(f"-l {selector!r}: {key!r} is not a label key")
    for value in values:
        if not _VALUE.match(value):
            raise ConfigError(f"-l {selector!r}: {value!r} is not a label value")


def parse_selector(selector: str) -> tuple[Requirement, ...]:
    """kubectl's label selector as requirements; a malformed one is one line naming the part."""
    if not selector.strip():
        raise ConfigError("-l: the selector is empty")
    reqs: list[Requirement] = []
    for part in _split(selector):
        if m := _SET.match(part):
            values = [v.strip() for v in m["values"].split(",")]
            if values == [""]:
                raise ConfigError(f"-l {selector!r}: {m['op']} () needs at least one value")
            _check(selector, m["key"], values)
            reqs.append(Requirement(m["key"], m["op"], frozenset(values)))
        elif m := _BINARY.match(part):
            _check(selector, m["key"], [m["value"]])
            reqs.append(Requirement(m["key"], "notin" if m["op"] == "!=" else "in", frozenset([m["value"]])))
        elif m := _EXISTS.match(part):
            _check(selector, m["key"])
            reqs.append(Requirement(m["key"], "!exists" if m["not"] else "exists"))
        else:
            raise ConfigError(f"-l {selector!r}: cannot read {part.strip()!r} (use key=value, key!=value, "
                              "key in (a,b), key notin (a,b), key or !key)")
    return tuple(reqs)


def _plural(kind: str) -> str:
    low = kind.lower()
    if low.endswith("y"):
        return low[:-1] + "ies"
    if low.endswith("s"):
        return low if low == "endpoints" else low + "es"
    return low + "s"


def kind_matches(word: str, kind: str) -> bool:
    """Is ``word`` (``ConfigMap``, ``configmap``, ``configmaps``, ``cm``, ``deployments.apps``)
    a spelling of ``kind``?"""
    low = word.lower().split(".", 1)[0]
    return low in (kind.lower(), _plural(kind)) or SHORT_NAMES.get(low) == kind


@dataclass(frozen=True)
class ObjectName:
    kind: str
    name: str
    namespace: str | None = None

    def matches(self, ref: ObjectRef) -> bool:
        return (kind_matches(self.kind, ref.kind) and self.name == ref.name
                and (self.namespace is None or self.namespace == ref.namespace))

    def __str__(self) -> str:
        return "/".join(p for p in (self.kind, self.namespace, self.name) if p is not None)


def parse_object(text: str) -> ObjectName:
    parts = text.strip().split("/")
    if len(parts) not in (2, 3) or not all(parts):
        raise ConfigError(f"--object {text!r}: not KIND/NAME or KIND/NAMESPACE/NAME")
    if len(parts) == 2:
        return ObjectName(parts[0], parts[1])
    return ObjectName(parts[0], parts[2], parts[1])


@dataclass(frozen=True)
class Selection:
    """The objects ``-l`` and ``--object`` leave in (both given: an object must match both)."""

    selector: str | None
    requirements: tuple[Requirement, ...]
    objects: tuple[ObjectName, ...]

    def keeps(self, obj: GitObject) -> bool:
        if self.objects and not any(o.matches(obj.ref) for o in self.objects):
            return False
        labels = _labels(obj.data)
        return all(r.matches(labels) for r in self.requirements)

    def describe(self) -> str:
        parts = [f"-l {self.selector!r}"] if self.selector else []
        parts += [f"--object {o}" for o in self.objects]
        return " ".join(parts)

    def apply(self, manifests: Manifests, installation: str) -> Manifests:
        """``manifests`` with only the selected objects. Nothing selected, or an ``--object``
        that names no declared object, is a ``ConfigError``."""
        kept = {ref: obj for ref, obj in manifests.objects.items() if self.keeps(obj)}
        for o in self.objects:
            if not any(o.matches(ref) for ref in manifests.objects):
                raise ConfigError(f"--object {o}: hosts/{installation}/ declares no such object")
        if not kept:
            raise ConfigError(f"{self.describe()}: no object declared under hosts/{installation}/ matches")
        # A file's errors stay: what cannot be read cannot be said to be left out.
        return replace(manifests, objects=kept)


def _labels(data: Mapping[str, Any]) -> dict[str, str]:
    meta = data.get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def selection(selector: str | None, objects: Sequence[str]) -> Selection | None:
    """The selection of ``-l`` and ``--object`` (None: every object)."""
    if not selector and not objects:
        return None
    return Selection(selector, parse_selector(selector) if selector else (), tuple(parse_object(o) for o in objects))


#: What ``sync.load_installation`` takes to narrow an installation's objects.
Narrow = Callable[[Manifests, str], Manifests]
