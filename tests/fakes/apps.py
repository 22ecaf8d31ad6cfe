"""Generated apps: the asgard pattern repeated, as git declares it (shared by tests and bench).

An installation of ``n`` objects is ``n / 4`` "apps", each a ConfigMap, a selector-less
Service, its Endpoints and a Deployment -- a reconciler config whose address list the
Endpoints follow -- with the kinds of comments people write. ``bench/gen.py`` builds
repositories and live objects from these; tests take ``declared_objects`` as a realistic
sample (bench imports tests' helpers, never the other way round).

Addresses are TEST-NET-style data (10.x); nothing ever connects to them.
"""

from __future__ import annotations

from typing import Any

import yaml  # PyYAML (a dependency of the kubernetes client): fast C loader for big samples

KINDS = ("ConfigMap", "Service", "Endpoints", "Deployment")
_TEAMS = ("payments", "search", "ingest", "billing", "identity", "media", "notify", "ml")

try:
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # PyYAML without libyaml
    _Loader = yaml.SafeLoader


def app_values(i: int) -> dict[str, Any]:
    """App ``i``'s name, team, namespace, addresses, port and image."""
    team = _TEAMS[i % len(_TEAMS)]
    a, b = 16 + (i // 250) % 200, i % 250
    return {
        "name": f"{team}-svc-{i:05d}",
        "team": team,
        "ns": f"team-{team}",
        "addrs": f"10.{a}.{b}.10 10.{a}.{b}.11 10.{a + 1}.{b}.10",
        "ip": f"10.{a}.{b}.10",
        "port": 8000 + i % 1000,
        "image": f"registry.example.invalid/{team}/svc-{i % 40:02d}:1.{i % 17}.{i % 5}",
    }


def _configmap(app: dict[str, Any], i: int) -> str:
    return f"""\
# Settings read by {app['name']} at start-up; the reconciler re-reads UPSTREAM_ADDRS.
# Ops may change LOG_LEVEL live during incidents -- copy it back (syncer does now).
apiVersion: v1
kind: ConfigMap
metadata:
  name: {app['name']}
  namespace: {app['ns']}
  labels:
    app.kubernetes.io/name: {app['name']}
    app.kubernetes.io/part-of: {app['team']}
data:
  LOG_LEVEL: info              # info | debug | warn
  UPSTREAM_ADDRS: "{app['addrs']}"
  TIMEOUT_SECONDS: "{15 + i % 4 * 5}"
  PORT: "{app['port']}"
  FEATURES: |
    cache=on
    retries={1 + i % 3}
    region=eu-{1 + i % 3}
"""


def _service(app: dict[str, Any]) -> str:
    return f"""\
# No selector: {app['name']}'s Endpoints are set by the reconciler (see below).
apiVersion: v1
kind: Service
metadata:
  name: {app['name']}
  namespace: {app['ns']}
spec:
  ports:
    - name: http
      port: 80
      targetPort: {app['port']}
"""


def _endpoints(app: dict[str, Any]) -> str:
    return f"""\
apiVersion: v1
kind: Endpoints
metadata:
  name: {app['name']}
  namespace: {app['ns']}
subsets:
  - addresses:
      - ip: {app['ip']}   # first reachable candidate
    ports:
      - name: http
        port: {app['port']}
"""


def _deployment(app: dict[str, Any], i: int) -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {app['name']}
  namespace: {app['ns']}
  labels:
    app.kubernetes.io/name: {app['name']}
spec:
  replicas: {1 + i % 3}   # HPA owns this live; ignored by syncer.conf
  selector:
    matchLabels:
      app.kubernetes.io/name: {app['name']}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {app['name']}
    spec:
      containers:
        - name: app
          image: {app['image']}
          args: ["--listen=:{app['port']}", "--config=/etc/app"]
          ports:
            - name: http
              containerPort: {app['port']}
          envFrom:
            - configMapRef:
                name: {app['name']}
          resources:
            requests: {{cpu: 50m, memory: 64Mi}}
            limits:
              memory: 256Mi
"""


def objects_text(n: int) -> list[str]:
    """The ``n`` documents, in kind order within each app."""
    out = []
    for k in range(n):
        i, kind = divmod(k, 4)
        app = app_values(i)
        if KINDS[kind] == "ConfigMap":
            out.append(_configmap(app, i))
        elif KINDS[kind] == "Service":
            out.append(_service(app))
        elif KINDS[kind] == "Endpoints":
            out.append(_endpoints(app))
        else:
            out.append(_deployment(app, i))
    return out



def declared_objects(n: int) -> list[dict[str, Any]]:
    """The ``n`` objects of ``objects_text``, parsed."""
    return [yaml.load(text, Loader=_Loader) for text in objects_text(n)]
