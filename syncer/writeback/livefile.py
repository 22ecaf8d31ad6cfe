"""A live object as the manifest file of its own (``untracked: propose``). Pure.

``clean`` drops what the server wrote (status, server metadata, the last-applied annotation,
allocated fields, defaults where the value tells); ``render`` writes the result as block-style
YAML that kubectl reads back as exactly that object, or refuses.
"""

from __future__ import annotations

import copy
from typing import Any

from syncer.yamlread import parse_documents
from syncer.detect.normalize import LAST_APPLIED
from syncer.yamledit import double_quoted, plain_ok
from syncer.model import JSON



#: metadata keys the server sets (never part of a manifest).
_SERVER_META = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink",
                "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences")
#: annotations written by the server or by tools, not by the object's author.
_SERVER_ANNOTATIONS = (LAST_APPLIED, "deployment.kubernetes.io/revision", "endpoints.kubernetes.io/last-change-trigger-time")
#: (kind, path, value) of fields the API server fills in when they are absent: dropped when they
#: hold exactly that value (kubectl-neat's idea, for the kinds syncer tracks most).
_DEFAULTS: tuple[tuple[str, tuple[str, ...], Any], ...] = (
    ("Service", ("spec", "sessionAffinity"), "None"),
    ("Service", ("spec", "type"), "ClusterIP"),
    ("Service", ("spec", "ipFamilyPolicy"), "SingleStack"),
    ("Deployment", ("spec", "progressDeadlineSeconds"), 600),
    ("Deployment", ("spec", "revisionHistoryLimit"), 10),
)
#: (kind, path) of fields the server allocates: never part of what a person wrote.
_ALLOCATED: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Service", ("spec", "clusterIP")),
    ("Service", ("spec", "clusterIPs")),
    ("Service", ("spec", "ipFamilies")),
)


def _pop(doc: Any, path: tuple[str, ...], only: Any = ...) -> None:
    *parents, last = path
    for part in parents:
        doc = doc.get(part) if isinstance(doc, dict) else None
    if isinstance(doc, dict) and last in doc and (only is ... or doc[last] == only):
        del doc[last]


def clean(obj: JSON) -> JSON:
    """The object as a manifest: no status, no server metadata, no last-applied annotation, no
    allocated or defaulted fields where the value tells (a Service port's ``protocol: TCP``,
    ``targetPort`` equal to ``port``)."""
    out = copy.deepcopy(obj)
    kind = str(out.get("kind", ""))
    out.pop("status", None)
    meta = out.get("metadata")
    if isinstance(meta, dict):
        for key in _SERVER_META:
            meta.pop(key, None)
        notes = meta.get("annotations")
        if isinstance(notes, dict):
            for key in _SERVER_ANNOTATIONS:
                notes.pop(key, None)
            if not notes:
                meta.pop("annotations")
    for k, path, value in _DEFAULTS:
        if k == kind:
            _pop(out, path, value)
    for k, path in _ALLOCATED:
        if k == kind:
            _pop(out, path)
    spec = out.get("spec")
    if kind == "Service" and isinstance(spec, dict):
        for port in spec.get("ports") or []:
            if isinstance(port, dict):
                if port.get("protocol") == "TCP":
                    del port["protocol"]
                if "targetPort" in port and port["targetPort"] == port.get("port"):
                    del port["targetPort"]
    return out


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value)
    # plain only where kubectl reads it back as this same string (not ``on``, ``0755``, ``1e3``)
    return text if plain_ok(text) else double_quoted(text)


def _emit(value: Any, indent: int, out: list[str]) -> None:
    pad = " " * indent
    if isinstance(value, dict):
        for key, item in value.items():
            head = f"{pad}{_scalar(str(key))}:"
            if isinstance(item, (dict, list)) and item:
                out.append(head)
                _emit(item, indent + 2, out)
            else:
                out.append(f"{head} {_empty(item) if isinstance(item, (dict, list)) else _scalar(item)}")
        return
    for item in value:
        if isinstance(item, (dict, list)) and item:
            inner: list[str] = []
            _emit(item, indent + 2, inner)
            if isinstance(item, dict):  # "- key: value", the other keys under it
                out.append(f"{pad}- {inner[0][indent + 2:]}")
                out.extend(inner[1:])
            else:  # a list in a list: "-" alone, the inner items below it
                out.append(f"{pad}-")
                out.extend(inner)
        else:
            out.append(f"{pad}- {_empty(item) if isinstance(item, (dict, list)) else _scalar(item)}")


def _empty(value: Any) -> str:
    return "{}" if isinstance(value, dict) else "[]"


def render(obj: JSON) -> str:
    """The cleaned object as the YAML text of its new file (block style, apiVersion, kind and
    metadata first), verified: kubectl reads it back as exactly ``obj``, else ValueError."""
    ordered: JSON = {k: obj[k] for k in ("apiVersion", "kind", "metadata") if k in obj}
    ordered.update({k: v for k, v in obj.items() if k not in ordered})
    lines: list[str] = []
    _emit(ordered, 0, lines)
    text = "\n".join(lines) + "\n"
    docs = parse_documents(text, "new file")
    if docs != [ordered]:
        raise ValueError("the new file does not read back as the live object")
    return text
