"""What Helm last applied: the manifest of a release's deployed revision, as a base for who moved.

Helm keeps each revision of a release in a Secret of the release's namespace
(``sh.helm.release.v1.<release>.v<revision>``, labels ``owner=helm``, ``name=<release>``,
``status=deployed``; its ``release`` key is base64 of gzip of the release as JSON, whose
``manifest`` is every object as helm applied it). That is the last-applied configuration of a
Helm-installed object: a field git and the release agree on that differs live moved in the
cluster, one where git differs from the release is git's change not deployed yet. It matters
where managedFields cannot tell (kube-apiserver before 1.22 records no manager for a write
through ``/scale``: ``kubectl scale`` leaves ``spec.replicas`` owned by helm).

Read with one LIST of the release's Secrets by label; an account that may not list Secrets
(the usual case for a least-privilege Role) gets no such base, and nothing else changes. The
release manifest may hold rendered Secrets: it is held in memory only, never logged, never
written, and only compared.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
from typing import Any

from syncer.errors import ClusterError, ConfigError
from syncer.gather.live import LiveSource
from syncer.sources.manifests import object_ref
from syncer.model import ObjectRef
from syncer.yamlread import parse_documents

#: A release's JSON past this (decompressed) is refused: a gzip bomb is no base.
MAX_RELEASE_BYTES = 32 * 1024 * 1024


def decode(secret: dict[str, Any]) -> dict[str, Any] | None:
    """The release JSON of a Helm release Secret (None when it is not one)."""
    data = secret.get("data")
    raw = data.get("release") if isinstance(data, dict) else None
    if not isinstance(raw, str):
        return None
    try:
        packed = base64.b64decode(base64.b64decode(raw))
        if packed[:2] == b"\x1f\x8b":
            with gzip.GzipFile(fileobj=io.BytesIO(packed)) as fh:
                packed = fh.read(MAX_RELEASE_BYTES + 1)
        if len(packed) > MAX_RELEASE_BYTES:
            return None
        release = json.loads(packed)
    except (ValueError, OSError, EOFError):
        return None
    return release if isinstance(release, dict) else None


def _secrets(source: LiveSource, namespace: str, release: str) -> list[dict[str, Any]]:
    """The release's Secrets as the source can list them ([] when it cannot)."""
    from syncer.gather.live import KubeSource, SnapshotSource

    if isinstance(source, SnapshotSource):
        return [o for r, o in source.objects.items() if r.kind == "Secret" and r.namespace == namespace
                and ((o.get("metadata") or {}).get("labels") or {}).get("name") == release
                and ((o.get("metadata") or {}).get("labels") or {}).get("owner") == "helm"]
    lister = source if isinstance(source, KubeSource) else getattr(source, "lister", None)
    if not isinstance(lister, KubeSource):
        return []
    from syncer.kube.lists import named_items

    try:
        found = lister.kube.call("GET", f"/api/v1/namespaces/{namespace}/secrets",
                                 query=[("labelSelector", f"owner=helm,name={release}")],
                                 what=f"list the Secrets of Helm release {namespace}/{release}")
    except ClusterError:
        return []  # no grant (or no answer): no such base
    return [dict(o, kind="Secret", apiVersion="v1") for _, o in named_items(found)] if found is not None else []


def deployed(source: LiveSource, namespace: str, release: str, default_namespace: str) -> dict[ObjectRef, dict[str, Any]]:
    """Every object of the release's deployed revision as Helm applied it, by ref ({}: unknown)."""
    best: tuple[int, dict[str, Any]] | None = None
    for secret in _secrets(source, namespace, release):
        labels = (secret.get("metadata") or {}).get("labels") or {}
        if labels.get("status") != "deployed":
            continue
        try:
            version = int(str(labels.get("version", "0")))
        except ValueError:
            continue
        if best is None or version > best[0]:
            best = (version, secret)
    if best is None:
        return {}
    release_json = decode(best[1])
    manifest = release_json.get("manifest") if release_json else None
    if not isinstance(manifest, str):
        return {}
    out: dict[ObjectRef, dict[str, Any]] = {}
    try:
        docs = parse_documents(manifest, f"Helm release {namespace}/{release}")
    except ConfigError:
        return {}
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        try:
            out[object_ref(doc, default_namespace, "helm release")] = doc
        except ConfigError:
            continue
    return out
