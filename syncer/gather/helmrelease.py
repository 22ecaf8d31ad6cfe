"""What the cluster says of Helm releases: the manifest of a release's deployed revision (a base
for who moved), and the version and APIs ``helm install`` saw (``capabilities_of``).

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
from collections.abc import Callable
from typing import Any

from syncer.errors import ClusterError, ConfigError, SyncerError
from syncer.gather.live import KubeSource, LiveSource, SnapshotSource
from syncer.kube.lists import named_items
from syncer.model import ObjectRef
from syncer.sources.manifests import Manifests, object_ref
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
    if isinstance(source, SnapshotSource):
        return [o for r, o in source.objects.items() if r.kind == "Secret" and r.namespace == namespace
                and ((o.get("metadata") or {}).get("labels") or {}).get("name") == release
                and ((o.get("metadata") or {}).get("labels") or {}).get("owner") == "helm"]
    lister = source if isinstance(source, KubeSource) else getattr(source, "lister", None)
    if not isinstance(lister, KubeSource):
        return []
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


def release_bases(source: LiveSource, manifests: Manifests) -> dict[ObjectRef, dict[str, Any]]:
    """The declared objects of each Helm release a source loaded (``Manifests.releases``) as
    Helm last deployed them; {} without releases, or when the account may not list their records."""
    out: dict[ObjectRef, dict[str, Any]] = {}
    for storage, name, namespace in manifests.releases:
        found = deployed(source, storage, name, namespace)
        out.update({ref: obj for ref, obj in found.items() if ref in manifests.objects})
    return out


def capabilities_of(source: object) -> Callable[[], tuple[str, tuple[str, ...]]]:
    """A reader, run once at most, of what ``helm install`` would learn from the cluster: its
    version (``--kube-version``) and API group versions (``--api-versions``); ("", ()) without an
    API server (a snapshot) or when it does not answer."""
    kube_source = source if isinstance(source, KubeSource) else getattr(source, "lister", None)
    found: list[tuple[str, tuple[str, ...]]] = []

    def read() -> tuple[str, tuple[str, ...]]:
        if found:
            return found[0]
        answer: tuple[str, tuple[str, ...]] = ("", ())
        if isinstance(kube_source, KubeSource):
            kube = kube_source.kube
            try:
                version = kube.call("GET", "/version", what="the API server's version") or {}
                core = kube.call("GET", "/api", what="discovery of the core API") or {}
                groups = kube.call("GET", "/apis", what="discovery of API groups") or {}
                apis = [str(v) for v in core.get("versions") or []] + [
                    str(v.get("groupVersion")) for g in groups.get("groups") or [] if isinstance(g, dict)
                    for v in g.get("versions") or [] if isinstance(v, dict) and v.get("groupVersion")]
                answer = (str(version.get("gitVersion") or ""), tuple(apis))
            except SyncerError:
                pass
        found.append(answer)
        return answer

    return read
