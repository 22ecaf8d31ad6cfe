"""Objects of an API the cluster does not serve: decided from discovery, never from a 404 alone.

In GitOps it is ordinary for git to declare a custom resource whose CRD the cluster does not
serve (yet): the CRD comes from another chart, is installed later, or the object is of an API
this Kubernetes version does not have (``batch/v1`` CronJob on 1.20). Nothing of it can exist
live under that API, so it is not compared: one ``warning:`` naming the object and the API,
never an error that fails the run -- unless its kind is written back (``writeback``,
``stable``) and no other API group serves a kind of that name, then it stays an error: git
asks for live values syncer cannot read. ``track`` names kinds without their group, so
``ServiceAccount: writeback`` means the ``v1`` ServiceAccount the cluster serves; a
``talos.dev/v1alpha1`` ServiceAccount beside it is only warned about.

The decision is discovery's: ``Kube.object_path`` asks discovery alone (no request for the
object), so a 404 there means the group-version or the kind is not served. A 404 when reading
the object of a served kind is something else: the object is absent live, a real drift.

Snapshots (``--live-file``) carry no discovery: an object a snapshot lacks is absent live,
whatever its API (``kubectl get -f`` leaves out what the cluster does not serve, and a snapshot
cannot say which).
"""

from __future__ import annotations

from collections.abc import Callable

from syncer.errors import ClusterError, Unserved
from syncer.kube import ApiError, ClusterUnreachable, Kube
from syncer.model import ObjectRef

__all__ = ["NotServed", "collection_path", "not_served", "object_path"]


def _group(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


class NotServed(ApiError, Unserved):
    """Discovery lacks the object's group-version, or the kind in it. Where else a kind of
    that name is served is asked when it is raised (by the source, which does the reading), so
    detection judges it without a request: ``engine.unserved_outcome``."""

    def __init__(self, ref: ObjectRef, kube: Kube) -> None:
        super().__init__(f"the cluster does not serve {ref.api_version} {ref.kind}", 404, "NotFound",
                         transient=False)
        self.ref = ref
        self.same_group = tuple(_serving(kube, ref, other_groups=False))
        self.other_groups = tuple(_serving(kube, ref, other_groups=True))


def _serving(kube: Kube, ref: ObjectRef, other_groups: bool) -> list[str]:
    own = _group(ref.api_version)
    try:
        candidates = (["v1", *kube.group_versions(None)] if other_groups else kube.group_versions(own))
    except ClusterUnreachable:
        raise
    except ClusterError:
        return []  # discovery itself failed: nothing known elsewhere
    found: list[str] = []
    for gv in dict.fromkeys(candidates):
        if gv == ref.api_version or (_group(gv) == own) is other_groups:
            continue
        try:
            kube.resource(gv, ref.kind)
        except ClusterUnreachable:
            raise
        except ClusterError:
            continue  # not there, or that API's backend is down (an APIService answering 503)
        found.append(gv)
        if other_groups:
            break  # one is enough to know ``track`` means another API
    return found


def not_served(kube: Kube, ref: ObjectRef, exc: ClusterError) -> ClusterError:
    """``exc``, raised while finding ``ref``'s path (discovery only), as ``NotServed`` when it
    is discovery's 404; any other failure (unreachable, a 503 of an aggregated API) as it is."""
    if isinstance(exc, ApiError) and exc.status == 404 and not isinstance(exc, NotServed):
        return NotServed(ref, kube)
    return exc


def collection_path(kube: Kube, ref: ObjectRef) -> str:
    """``kube.collection_path(ref)``; discovery's "not served" raised as ``NotServed``."""
    return _path(kube, ref, kube.collection_path)


def object_path(kube: Kube, ref: ObjectRef) -> str:
    """``kube.object_path(ref)``; discovery's "not served" raised as ``NotServed``."""
    return _path(kube, ref, kube.object_path)


def _path(kube: Kube, ref: ObjectRef, find: Callable[[ObjectRef], str]) -> str:
    try:
        return find(ref)
    except ClusterError as exc:
        found = not_served(kube, ref, exc)
        if found is exc:
            raise
        raise found from exc
