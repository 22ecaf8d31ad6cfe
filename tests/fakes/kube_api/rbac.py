"""Authentication (bearer token) and RBAC-style denials."""

from __future__ import annotations


from .http import _Handler
from .resources import Resource
from .status import _ApiError


DEFAULT_USER = "system:serviceaccount:ai:syncer"

#: The name of a denial that applies only to requests naming no object (see ``names_only``).
UNNAMED = "\0unnamed"


class RBACMixin:
    """Bearer-token authentication (401) and RBAC-style denials (403) with the real wording."""

    def forbid(self, verb: str, resource: str, name: str = "") -> None:
        """Deny ``verb`` on ``resource`` (``configmaps``, ``deployments.apps`` or ``*``) [for ``name``]."""
        with self._lock:
            self._forbidden.append((verb, resource, name))

    def names_only(self, resource: str) -> None:
        """A Role limited by ``resourceNames`` on ``resource``: a list or watch must pin one name
        (``fieldSelector=metadata.name=X``); the whole collection is forbidden, as kube-apiserver
        authorizes it (tests/realapi/test_realapi_sidecar.py)."""
        with self._lock:
            self._forbidden += [("list", resource, UNNAMED), ("watch", resource, UNNAMED)]

    def _authenticate(self, h: _Handler, path: str) -> None:
        auth = h.headers.get("Authorization")
        public = path in ("/version", "/version/", "/healthz", "/livez", "/readyz")
        if auth is None and public:
            return  # system:anonymous may read these (system:public-info-viewer)
        if auth != f"Bearer {self.token}":
            raise _ApiError(401, "Unauthorized", "Unauthorized")

    def _forbidden_message(self, res: Resource, verb: str, name: str, ns: str, sub: str) -> str:
        resource = f"{res.plural}/{sub}" if sub else res.plural
        who = f'{res.qualified} "{name}"' if name else res.qualified
        scope = f'in the namespace "{ns}"' if ns else "at the cluster scope"
        return (f'{who} is forbidden: User "{self.user}" cannot {verb} resource "{resource}" '
                f'in API group "{res.group}" {scope}')

    def _check_forbidden(self, res: Resource, verb: str, name: str, ns: str, sub: str) -> None:
        with self._lock:
            rules = list(self._forbidden)
        for r_verb, r_res, r_name in rules:
            if r_verb not in ("*", verb):
                continue
            if r_res not in ("*", res.plural, res.qualified, f"{res.plural}/{sub}" if sub else res.plural):
                continue
            if r_name == UNNAMED:
                if name:
                    continue
            elif r_name and r_name != name:
                continue
            raise _ApiError(403, "Forbidden", self._forbidden_message(res, verb, name, ns, sub),
                            res.details(name))
