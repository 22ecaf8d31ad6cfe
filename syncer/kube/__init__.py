"""The Kubernetes client: one seam for every request syncer sends to an API server.

* ``errors``     the ``KubeError`` tree, ``api_error`` (a non-2xx answer), ``cause`` (a wire failure in words)
* ``config``     ``Connection``: kubeconfig, credential plugins, in-cluster service account, TLS
* ``transport``  ``Timeouts``, the deadline watchdog, keep-alive pools, the watch stream
* ``http2``      ``H2Conn``: one TLS connection carrying many requests as HTTP/2 streams (the
                 sidecar's watches); imported by its one user, so ``syncer diff`` never loads ``h2``
* ``client``     the ``Kube`` protocol callers see, and ``KubeClient``, the real one
* ``lists``      ``named_items``: the objects of a LIST answer, by name

Callers import from here (``from syncer.kube import Kube, KubeError``).
"""

from syncer import USER_AGENT
from syncer.kube.client import MAX_BODY, Kube, KubeClient, WatchStream, kube_client
from syncer.kube.config import (
    IN_CLUSTER_DIR, SA_NAMESPACE_FILE, Connection, ReadYaml, context_namespace, load_connection,
)
from syncer.kube.errors import (
    REJECTED, ApiError, ClusterUnreachable, Conflict, Gone, KubeError, NoCredentials, Refused, TooLarge, Unauthorized,
    Unparsable, api_error, cause,
)
from syncer.kube.transport import DEFAULT_TIMEOUTS, KEEPALIVE_COUNT, KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, Timeouts
from syncer.model import JSON

__all__ = [
    "DEFAULT_TIMEOUTS", "IN_CLUSTER_DIR", "JSON", "KEEPALIVE_COUNT", "KEEPALIVE_IDLE", "KEEPALIVE_INTERVAL",
    "MAX_BODY", "REJECTED", "SA_NAMESPACE_FILE", "USER_AGENT", "ApiError", "ClusterUnreachable", "Conflict",
    "Connection", "Gone", "Kube", "KubeClient", "KubeError", "NoCredentials", "ReadYaml", "Refused", "TooLarge",
    "Unauthorized", "Unparsable", "WatchStream",
    "api_error", "cause", "context_namespace", "kube_client", "load_connection",
]
