"""Live edits of real public kustomize layouts, on the REAL kube-apiserver, written back by syncer.

For each layout of ``tests/data/kustomize-corpus/`` (public trees copied byte for byte, see its
SOURCES.md), on a fresh kube-apiserver + etcd (tests/realapi/cluster.py):

1. the tree is ``hosts/<layout>/`` of a git repository pushed to a bare remote, with the
   installation's own top ``kustomization.yaml`` where the layout names one (which overlay or
   components the installation applies, as its user would write it) and a ``syncer.conf``;
2. ``kubectl apply -k`` (the CRDs a layout's custom resources need are made first, schemaless);
3. ``syncer diff -o json``: any drift is **false drift**, exit 2 an **error exit**;
4. each edit of the layout's table is made live with the real kubectl (``kubectl edit`` driven by
   a scripted ``KUBE_EDITOR``, ``kubectl patch``, ``set image``, ``set env``, ``scale``); its
   expected place -- a file and the one line that must change -- is **proven** first: a copy of
   the tree with only that line changed, rendered by ``kubectl kustomize``, shows the live value
   at the drifted field and nothing else differs from the unchanged render (generated names
   re-hashed aside); an edit whose expected place is "no line" must then be reported, never written;
5. ``syncer diff -o json``: an edit not shown is **missed**, shown with another file **wrong
   file**, any drift beyond the edits **false drift**;
6. ``syncer sync --mode commit``: the pushed commit must change exactly the proven lines (a line
   not written is **missed**, a line changed that no edit proves is a **wrong write**); ``syncer
   diff`` of the new commit against the cluster then shows only the generated names' renames.

    python -m bench.kustomizecorpus [--only NAME,...] [--written] [--keep]

Prints one row per layout and the totals (paste them into bench/RESULTS.md with the command).
"""

from __future__ import annotations

import argparse
import difflib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench.common import ROOT
from bench.kubediff import apiserver_binary
from syncer.cli import main as syncer
from syncer.yamlread import parse_documents
from tests.realapi.cluster import ClusterError, RealCluster

KUBECTL = os.environ.get("SYNCER_KUBECTL", "/usr/local/bin/kubectl")
CORPUS = ROOT / "tests" / "data" / "kustomize-corpus"
#: Trees we wrote for the classes no public tree was found for (its README.md): measured apart, never counted as corpus.
WRITTEN = ROOT / "tests" / "data" / "kustomize-written"
HASH = re.compile(r"-[2456789bcdfghkmt]{10}$")  # kustomize's hash alphabet (no vowels)
KEYS = ("edits", "proven", "false drift", "missed", "wrong file", "wrong writes", "error exits", "reported as expected")


@dataclass(frozen=True)
class Edit:
    """One live edit and where it must land. ``name`` without a generated hash suffix;
    ``how``: ``("edit", old, new)`` (text replaced in ``kubectl edit``'s buffer) or kubectl
    arguments after the verb's object; ``line``: (file in the layout, old line, new line), or
    None when no single line sets the value (then it must be reported, not written)."""

    kind: str
    name: str
    how: tuple[str, ...]
    path: str
    line: tuple[str, str, str] | None
    nth: int | None = None  # which of the lines equal to the old line (None: it must be the only one)


@dataclass(frozen=True)
class Layout:
    name: str
    tree: str  # directory of tests/data/kustomize-corpus
    namespace: str  # the config's default namespace
    top: str = ""  # the installation's own kustomization.yaml ("" = the tree's root is the kustomization)
    track: tuple[tuple[str, str], ...] = ()
    crds: tuple[tuple[str, str, str, str], ...] = ()  # (group, "version[,version...]", kind, plural), namespaced
    namespaces: tuple[str, ...] = ()
    edits: tuple[Edit, ...] = ()
    written: bool = False  # a tree of tests/data/kustomize-written/ (ours), not of the public corpus


WB = (("ConfigMap", "writeback"), ("Deployment", "writeback"), ("Service", "report"), ("Secret", "report"))
#: CRDs are cluster-wide, shared by every layout of a run: each serves every version a layout uses (the first stores)
ISTIO = (("networking.istio.io", "v1alpha3,v1beta1", "VirtualService", "virtualservices"),
         ("security.istio.io", "v1beta1", "AuthorizationPolicy", "authorizationpolicies"))
C0 = "spec.template.spec.containers[0]"

LAYOUTS: tuple[Layout, ...] = (
    Layout("kubeflow-dashboard-kserve", "kubeflow-centraldashboard", "kubeflow",
           top="resources:\n  - overlays/kserve\n", crds=ISTIO, namespaces=("kubeflow",),
           track=WB + (("ServiceAccount", "report"), ("Role", "report"), ("RoleBinding", "report"),
                       ("ClusterRole", "report"), ("ClusterRoleBinding", "report"), ("NetworkPolicy", "report"),
                       ("VirtualService", "report"), ("AuthorizationPolicy", "report")),
           edits=(
               # the overlay's patch repeats the base's text: the overlay's line is the one applied last
               Edit("ConfigMap", "dashboard-config", ("edit", '"DASHBOARD_FORCE_IFRAME": true', '"DASHBOARD_FORCE_IFRAME": false'),
                    "data.settings", ("overlays/kserve/patches/configmap.yaml", '      "DASHBOARD_FORCE_IFRAME": true',
                                      '      "DASHBOARD_FORCE_IFRAME": false')),
               Edit("ConfigMap", "dashboard-parameters", ("patch", "--type", "merge", "-p", '{"data":{"COLLECT_METRICS":"false"}}'),
                    "data.COLLECT_METRICS", ("base/params.env", "COLLECT_METRICS=true", "COLLECT_METRICS=false")),
               Edit("Deployment", "dashboard", ("set", "image", "dashboard=ghcr.io/kubeflow/dashboard/dashboard:v2.0.1"),
                    f"{C0}.image", ("base/kustomization.yaml", "  newTag: v2.0.0-rc.0", "  newTag: v2.0.1")),
               Edit("Deployment", "dashboard", ("scale", "--replicas=2"), "spec.replicas",
                    ("base/deployment.yaml", "  replicas: 1", "  replicas: 2")),
               Edit("Deployment", "dashboard", ("set", "env", "LOGOUT_URL=/logout"), f"{C0}.env[2].value",
                    ("base/deployment.yaml", '              value: "/oauth2/sign_out"', '              value: "/logout"')),
           )),
    # v1.20 serves no policy/v1 PodDisruptionBudget, and refuses the APIService (its service has no namespace in
    # this tree): the installation's own top deletes both (the tree itself is kept byte for byte)
    Layout("metrics-server-release-ha", "metrics-server", "kube-system",
           top=("resources:\n  - overlays/release-ha\npatches:\n"
                "  - patch: |-\n      apiVersion: policy/v1\n      kind: PodDisruptionBudget\n      metadata:\n"
                "        name: metrics-server\n        namespace: kube-system\n      $patch: delete\n"
                "  - patch: |-\n      apiVersion: apiregistration.k8s.io/v1\n      kind: APIService\n      metadata:\n"
                "        name: v1beta1.metrics.k8s.io\n      $patch: delete\n"),
           track=(("Deployment", "writeback"), ("Service", "report"), ("ServiceAccount", "report"),
                  ("ClusterRole", "report"), ("ClusterRoleBinding", "report"), ("RoleBinding", "report"),
                  ("APIService", "ignore"), ("PodDisruptionBudget", "ignore")),
           edits=(
               # the component's patch computes the replicas and the strategy; its images: the image
               Edit("Deployment", "metrics-server", ("scale", "--replicas=3"), "spec.replicas",
                    ("components/high-availability/patch.yaml", "  replicas: 2", "  replicas: 3")),
               Edit("Deployment", "metrics-server", ("set", "image", "metrics-server=registry.k8s.io/metrics-server/metrics-server:v0.8.2"),
                    f"{C0}.image", ("components/release/kustomization.yaml", "  newTag: v0.8.1", "  newTag: v0.8.2")),
               Edit("Deployment", "metrics-server", ("edit", "--metric-resolution=15s", "--metric-resolution=30s"),
                    f"{C0}.args[4]", ("base/deployment.yaml", "          - --metric-resolution=15s",
                                      "          - --metric-resolution=30s")),
               Edit("Deployment", "metrics-server", ("patch", "--type", "merge", "-p",
                                                    '{"spec":{"strategy":{"rollingUpdate":{"maxUnavailable":0}}}}'),
                    "spec.strategy.rollingUpdate.maxUnavailable",
                    ("components/high-availability/patch.yaml", "      maxUnavailable: 1", "      maxUnavailable: 0")),
           )),
    Layout("kustomize-helloworld-two-overlays", "kustomize-helloworld", "default",
           top="resources:\n  - overlays/dev\n  - overlays/stg-secondary\n", track=WB,
           edits=(
               # two overlays, each with its own map.yaml: each edit goes into its own overlay's file
               Edit("ConfigMap", "dev-the-map", ("edit", "Welcome to dev!", "Welcome to dev, again!"), "data.altGreeting",
                    ("overlays/dev/map.yaml", '  altGreeting: "Welcome to dev!"', '  altGreeting: "Welcome to dev, again!"')),
               Edit("ConfigMap", "stg-secondary-the-map", ("patch", "--type", "merge", "-p", '{"data":{"enableRisky":"false"}}'),
                    "data.enableRisky", ("overlays/stg-secondary/map.yaml", '  enableRisky: "true"', '  enableRisky: "false"')),
               # the base is shared by both overlays: its line would change the other variant too
               Edit("Deployment", "dev-the-deployment", ("scale", "--replicas=2"), "spec.replicas", None),
               Edit("Deployment", "stg-secondary-the-deployment", ("set", "image", "the-container=monopole/hello:2"),
                    f"{C0}.image", None),
           )),
    Layout("podinfo-secret-from-file", "podinfo", "default",
           track=WB + (("HorizontalPodAutoscaler", "writeback"),),
           edits=(
               # the file-generated Secret (line-wrapped base64 as kustomize renders it) is no drift
               Edit("Deployment", "podinfo", ("set", "image", "podinfod=ghcr.io/stefanprodan/podinfo:6.2.0"), f"{C0}.image",
                    ("deployment.yaml", "        image: ghcr.io/stefanprodan/podinfo:6.1.1",
                     "        image: ghcr.io/stefanprodan/podinfo:6.2.0")),
               Edit("Deployment", "podinfo", ("edit", "- --level=info", "- --level=debug"), f"{C0}.command[5]",
                    ("deployment.yaml", "        - --level=info", "        - --level=debug")),
               Edit("Deployment", "podinfo", ("set", "env", "PODINFO_UI_COLOR=#ff0000"), f"{C0}.env[0].value",
                    ("deployment.yaml", '          value: "#34577c"', '          value: "#ff0000"')),
               Edit("HorizontalPodAutoscaler", "podinfo", ("patch", "--type", "merge", "-p", '{"spec":{"maxReplicas":4}}'),
                    "spec.maxReplicas", ("hpa.yaml", "  maxReplicas: 3", "  maxReplicas: 4")),
           )),
    Layout("microservices-demo-components", "microservices-demo", "default",
           top=("resources:\n- base/frontend.yaml\n- base/loadgenerator.yaml\ncomponents:\n- components/custom-base-url\n"
                "- components/blackfriday-week1-loadtest\n"), track=WB,
           edits=(
               Edit("Deployment", "loadgenerator", ("set", "env", "-c", "main", "USERS=500"), f"{C0}.env[0].value",
                    ("components/blackfriday-week1-loadtest/set-loadgenerator-1k.patch.yaml", '          value: "1000"',
                     '          value: "500"')),
               Edit("Deployment", "frontend", ("edit", "value: /online-boutique\n", "value: /shop\n"), f"{C0}.env[10].value",
                    ("components/custom-base-url/kustomization.yaml", "        value: /online-boutique",
                     "        value: /shop")),
               Edit("Deployment", "frontend", ("patch", "--type", "json", "-p",
                                              '[{"op":"replace","path":"/spec/template/spec/containers/0/readinessProbe/httpGet/path","value":"/shop/_healthz"}]'),
                    f"{C0}.readinessProbe.httpGet.path",
                    ("components/custom-base-url/kustomization.yaml", "      value: /online-boutique/_healthz",
                     "      value: /shop/_healthz"), nth=-1),
               Edit("Deployment", "loadgenerator", ("set", "env", "-c", "frontend-check", "FRONTEND_ADDR=frontend:8080"),
                    "spec.template.spec.initContainers[0].env[0].value",
                    ("base/loadgenerator.yaml", '          value: "frontend:80"', '          value: "frontend:8080"'), nth=0),
               Edit("Deployment", "frontend", ("set", "image", "server=gcr.io/google-samples/microservices-demo/frontend:v0.10.0"),
                    f"{C0}.image", ("base/frontend.yaml", "          image: gcr.io/google-samples/microservices-demo/frontend:v0.9.0",
                                    "          image: gcr.io/google-samples/microservices-demo/frontend:v0.10.0")),
               Edit("Deployment", "frontend", ("set", "env", "ENABLE_PROFILER=1"), f"{C0}.env[9].value",
                    ("base/frontend.yaml", '            value: "0"', '            value: "1"')),
           )),
    Layout("podinfo-cache-redis-conf", "podinfo-cache", "default", track=WB,
           edits=(
               # a line of a generator's files: source (redis.conf), not the kustomization naming it
               Edit("ConfigMap", "redis-config", ("edit", "maxmemory 64mb", "maxmemory 128mb"), "data.redis.conf",
                    ("redis.conf", "maxmemory 64mb", "maxmemory 128mb")),
               Edit("Deployment", "cache", ("set", "image", "redis=docker.io/redis:8.6.4"), f"{C0}.image",
                    ("deployment.yaml", "          image: docker.io/redis:8.6.3", "          image: docker.io/redis:8.6.4")),
               Edit("Deployment", "cache", ("patch", "--type", "json", "-p",
                                           '[{"op":"replace","path":"/spec/template/spec/containers/0/resources/limits/memory","value":"256Mi"}]'),
                    f"{C0}.resources.limits.memory",
                    ("deployment.yaml", "              memory: 128Mi", "              memory: 256Mi")),
           )),
    # the API server refuses the overlay as it is (6 replicas on a read-write GCE PD): the installation's own top
    # marks the disk read-only, as a user applying it must; the overlay's lines still set what the edits change
    Layout("kustomize-ldap-production", "kustomize-ldap", "default",
           top=("resources:\n  - overlays/production\npatches:\n  - patch: |-\n      apiVersion: apps/v1\n"
                "      kind: Deployment\n      metadata:\n        name: production-ldap\n      spec:\n        template:\n"
                "          spec:\n            volumes:\n              - name: ldap-data\n                gcePersistentDisk:\n"
                "                  readOnly: true\n"), track=WB,
           edits=(
               # the overlay's patch file computes the replicas and the volume; the base's files: source the config
               Edit("Deployment", "production-ldap", ("scale", "--replicas=3"), "spec.replicas",
                    ("overlays/production/deployment.yaml", "  replicas: 6", "  replicas: 3")),
               Edit("Deployment", "production-ldap", ("edit", "pdName: ldap-persistent-storage", "pdName: ldap-disk-2"),
                    "spec.template.spec.volumes[0].gcePersistentDisk.pdName",
                    ("overlays/production/deployment.yaml", "            pdName: ldap-persistent-storage",
                     "            pdName: ldap-disk-2")),
               Edit("Deployment", "production-ldap", ("set", "image", "ldap=osixia/openldap:1.2.0"), f"{C0}.image",
                    ("base/deployment.yaml", "          image: osixia/openldap:1.1.11", "          image: osixia/openldap:1.2.0")),
               # the file holds unchanged password lines: they must not block the one line that changed
               Edit("ConfigMap", "production-ldap-configmap", ("edit", "LDAP_ORGANISATION: Example Inc.",
                                                              "LDAP_ORGANISATION: Example Corp."),
                    "data.env.startup.txt", ("base/env.startup.txt", "LDAP_ORGANISATION: Example Inc.",
                                             "LDAP_ORGANISATION: Example Corp.")),
           )),
    Layout("skaffold-kustomize-two-suffixed-overlays", "skaffold-kustomize", "default",
           top="resources:\n  - overlays/prod\n  - overlays/staging\n", track=WB,
           edits=(
               # nameSuffix layers; both overlays patch the base through a file named deployment.yaml
               Edit("Deployment", "skaffold-kustomize-prod", ("scale", "--replicas=5"), "spec.replicas",
                    ("overlays/prod/deployment.yaml", "  replicas: 3", "  replicas: 5")),
               Edit("Deployment", "skaffold-kustomize-prod", ("patch", "--type", "merge", "-p",
                                                             '{"metadata":{"labels":{"env":"production"}}}'),
                    "metadata.labels.env", ("overlays/prod/deployment.yaml", "    env: prod", "    env: production")),
               Edit("Deployment", "skaffold-kustomize-staging", ("patch", "--type", "merge", "-p",
                                                                '{"metadata":{"labels":{"env":"stage"}}}'),
                    "metadata.labels.env", ("overlays/staging/deployment.yaml", "    env: staging", "    env: stage")),
               # the base's image is shared by both variants: no single line may change
               Edit("Deployment", "skaffold-kustomize-staging", ("set", "image", "skaffold-kustomize=skaffold-kustomize:v2"),
                    f"{C0}.image", None),
           )),
    # v1.20 serves neither batch/v1 CronJob nor autoscaling/v2, and its StatefulSet has no minReadySeconds: the
    # installation's own top deletes the base's three CronJobs, its HPA and its StatefulSet (the tree is kept byte for byte)
    Layout("podinfo-database-scripts", "podinfo-database", "default",
           top=("resources:\n  - bases/database\npatches:\n"
                + "".join(f"  - patch: |-\n      apiVersion: {api}\n      kind: {kind}\n      metadata:\n"
                          f"        name: {name}\n      $patch: delete\n"
                          for api, kind, name in (("batch/v1", "CronJob", "rollup-daily"),
                                                  ("batch/v1", "CronJob", "rollup-weekly"),
                                                  ("batch/v1", "CronJob", "backup-daily"),
                                                  ("autoscaling/v2", "HorizontalPodAutoscaler", "database-replica"),
                                                  ("apps/v1", "StatefulSet", "database-primary")))),
           track=WB + (("ServiceAccount", "report"), ("PersistentVolumeClaim", "ignore")),
           edits=(
               # disableNameSuffixHash + files: a line of the shell script (which holds ${BACKUP_EXIT:-0}: text, not a template)
               Edit("ConfigMap", "backup-script", ("edit", "sleep 60", "sleep 90"), "data.backup.sh",
                    ("bases/database/scripts/backup.sh", "sleep 60", "sleep 90")),
               Edit("ConfigMap", "rollup-script", ("edit", "  sleep 10", "  sleep 20"), "data.rollup.sh",
                    ("bases/database/scripts/rollup.sh", "  sleep 10", "  sleep 20")),
               Edit("Deployment", "database-replica", ("set", "image", "database=ghcr.io/stefanprodan/podinfo:6.11.1"),
                    f"{C0}.image", ("bases/database/deployment-replica.yaml",
                                    "        image: ghcr.io/stefanprodan/podinfo:6.10.2",
                                    "        image: ghcr.io/stefanprodan/podinfo:6.11.1")),
               Edit("Deployment", "database-replica", ("patch", "--type", "json", "-p",
                                                      '[{"op":"replace","path":"/spec/template/spec/containers/0/resources/limits/memory","value":"1Gi"}]'),
                    f"{C0}.resources.limits.memory",
                    ("bases/database/deployment-replica.yaml", "            memory: 512Mi", "            memory: 1Gi")),
           )),
    # a chain of two overlays (fargate/enabling, then fargate/sizing on top of it), each patching the base's Deployment
    # through its own file named deployment.yaml: a value set by each is written into that overlay's file
    Layout("eks-workshop-fargate-chained-overlays", "eks-workshop-fargate", "checkout",
           top="resources:\n  - modules/fundamentals/fargate/sizing\n",
           track=WB + (("ServiceAccount", "report"), ("Namespace", "ignore")),
           edits=(
               Edit("Deployment", "checkout", ("patch", "--type", "json", "-p",
                                              '[{"op":"replace","path":"/spec/template/spec/containers/0/resources/requests/memory","value":"2G"}]'),
                    f"{C0}.resources.requests.memory",
                    ("modules/fundamentals/fargate/sizing/deployment.yaml", "              memory: 2.5G",
                     "              memory: 2G"), nth=0),
               Edit("Deployment", "checkout", ("patch", "--type", "json", "-p",
                                              '[{"op":"replace","path":"/spec/template/spec/containers/0/resources/requests/cpu","value":"2"}]'),
                    f"{C0}.resources.requests.cpu",
                    ("modules/fundamentals/fargate/sizing/deployment.yaml", "              cpu: '1'",
                     "              cpu: '2'")),
               Edit("Deployment", "checkout", ("edit", 'fargate: "yes"', 'fargate: "no"'),
                    "spec.template.metadata.labels.fargate",
                    ("modules/fundamentals/fargate/enabling/deployment.yaml", '        fargate: "yes"', '        fargate: "no"')),
               Edit("Deployment", "checkout", ("set", "image", "checkout=public.ecr.aws/aws-containers/retail-store-sample-checkout:1.3.0"),
                    f"{C0}.image", ("base-application/checkout/deployment.yaml",
                                    '          image: "public.ecr.aws/aws-containers/retail-store-sample-checkout:1.2.1"',
                                    '          image: "public.ecr.aws/aws-containers/retail-store-sample-checkout:1.3.0"')),
               Edit("Deployment", "checkout", ("scale", "--replicas=2"), "spec.replicas",
                    ("base-application/checkout/deployment.yaml", "  replicas: 1", "  replicas: 2")),
               Edit("Deployment", "checkout-redis", ("set", "image", "redis=public.ecr.aws/docker/library/redis:6.2-alpine"),
                    f"{C0}.image", ("base-application/checkout/deployment-redis.yaml",
                                    '          image: "public.ecr.aws/docker/library/redis:6.0-alpine"',
                                    '          image: "public.ecr.aws/docker/library/redis:6.2-alpine"')),
               Edit("ConfigMap", "checkout", ("patch", "--type", "merge", "-p",
                                             '{"data":{"ENDPOINTS_ORDERS":"http://orders.orders.svc:8080"}}'),
                    "data.ENDPOINTS_ORDERS", ("base-application/checkout/configMap.yaml",
                                              "  ENDPOINTS_ORDERS: http://orders.orders.svc:80",
                                              "  ENDPOINTS_ORDERS: http://orders.orders.svc:8080")),
           )),
    # the tree's test-ha overlay: base + the high-availability component + the test component, whose inline JSON 6902
    # patch (patchesJson6902 in the component's kustomization.yaml) sets four values: each edit is one line of it
    Layout("metrics-server-test-ha-inline-patch", "metrics-server", "kube-system",
           top=("resources:\n  - overlays/test-ha\npatches:\n"
                "  - patch: |-\n      apiVersion: policy/v1\n      kind: PodDisruptionBudget\n      metadata:\n"
                "        name: metrics-server\n        namespace: kube-system\n      $patch: delete\n"
                "  - patch: |-\n      apiVersion: apiregistration.k8s.io/v1\n      kind: APIService\n      metadata:\n"
                "        name: v1beta1.metrics.k8s.io\n      $patch: delete\n"),
           track=(("Deployment", "writeback"), ("Service", "report"), ("ServiceAccount", "report"),
                  ("ClusterRole", "report"), ("ClusterRoleBinding", "report"), ("RoleBinding", "report"),
                  ("APIService", "ignore"), ("PodDisruptionBudget", "ignore")),
           edits=(
               Edit("Deployment", "metrics-server", ("edit", "- --v=4", "- --v=2"), f"{C0}.args[6]",
                    ("components/test/kustomization.yaml", "      value: --v=4", "      value: --v=2")),
               Edit("Deployment", "metrics-server", ("edit", "- --logtostderr", "- --logtostderr=false"), f"{C0}.args[7]",
                    ("components/test/kustomization.yaml", "      value: --logtostderr", "      value: --logtostderr=false")),
               Edit("Deployment", "metrics-server", ("patch", "--type", "json", "-p",
                                                    '[{"op":"replace","path":"/spec/template/spec/containers/0/imagePullPolicy","value":"IfNotPresent"}]'),
                    f"{C0}.imagePullPolicy",
                    ("components/test/kustomization.yaml", "      value: Never", "      value: IfNotPresent")),
               # an arg of the base before the appended ones is still the base file's line
               Edit("Deployment", "metrics-server", ("edit", "--metric-resolution=15s", "--metric-resolution=30s"),
                    f"{C0}.args[4]", ("base/deployment.yaml", "          - --metric-resolution=15s",
                                      "          - --metric-resolution=30s")),
               Edit("Deployment", "metrics-server", ("scale", "--replicas=4"), "spec.replicas",
                    ("components/high-availability/patch.yaml", "  replicas: 2", "  replicas: 4")),
               Edit("Deployment", "metrics-server", ("set", "image", "metrics-server=gcr.io/k8s-staging-metrics-server/metrics-server:v0.8.0"),
                    f"{C0}.image", ("base/deployment.yaml", "        image: gcr.io/k8s-staging-metrics-server/metrics-server:master",
                                    "        image: gcr.io/k8s-staging-metrics-server/metrics-server:v0.8.0")),
           )),
    # the google-cloud-operations component: eight inline strategic-merge patches (patches: - patch: |-) in one file, the
    # frontend's setting four env values; v1.20 refuses the grpc probes of five of the patched Deployments, so the
    # installation's own top deletes those five after the component has patched them (the tree is kept byte for byte)
    Layout("microservices-demo-cloud-operations", "microservices-demo", "default",
           top=("resources:\n"
                + "".join(f"- base/{s}.yaml\n" for s in ("frontend", "checkoutservice", "currencyservice", "emailservice",
                                                         "paymentservice", "productcatalogservice",
                                                         "recommendationservice", "shippingservice"))
                + "components:\n- components/google-cloud-operations\npatches:\n"
                + "".join(f"- patch: |-\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata:\n      name: {n}\n"
                          "    $patch: delete\n"
                          for n in ("checkoutservice", "currencyservice", "emailservice", "paymentservice",
                                    "productcatalogservice"))),
           track=WB + (("ServiceAccount", "report"),),
           edits=(
               # four values of one inline patch (the frontend's), each its own line of the component's kustomization.yaml
               Edit("Deployment", "frontend", ("set", "env", "ENABLE_TRACING=0"), f"{C0}.env[0].value",
                    ("components/google-cloud-operations/kustomization.yaml", '                value: "1"',
                     '                value: "0"'), nth=4),
               Edit("Deployment", "frontend", ("set", "env", "COLLECTOR_SERVICE_ADDR=otel-gateway:4317"), f"{C0}.env[1].value",
                    ("components/google-cloud-operations/kustomization.yaml",
                     '                value: "opentelemetrycollector:4317"', '                value: "otel-gateway:4317"'),
                    nth=3),
               Edit("Deployment", "frontend", ("edit", "value: frontend\n", "value: boutique-frontend\n"), f"{C0}.env[2].value",
                    ("components/google-cloud-operations/kustomization.yaml", '                value: "frontend"',
                     '                value: "boutique-frontend"')),
               # ENABLE_PROFILER is "0" in base/frontend.yaml: the component's patch is applied last
               Edit("Deployment", "frontend", ("set", "env", "ENABLE_PROFILER=0"), f"{C0}.env[3].value",
                    ("components/google-cloud-operations/kustomization.yaml", '                value: "1"',
                     '                value: "0"'), nth=5),
               # another inline patch of the same file, and the base file of the same object
               Edit("Deployment", "recommendationservice", ("edit", "value: recommendationservice\n", "value: recs\n"),
                    f"{C0}.env[1].value", ("components/google-cloud-operations/kustomization.yaml",
                                           '                value: "recommendationservice"', '                value: "recs"')),
               Edit("Deployment", "recommendationservice", ("set", "image",
                                                           "server=gcr.io/google-samples/microservices-demo/recommendationservice:v0.4.1"),
                    f"{C0}.image", ("base/recommendationservice.yaml",
                                    "        image: gcr.io/google-samples/microservices-demo/recommendationservice:v0.4.0",
                                    "        image: gcr.io/google-samples/microservices-demo/recommendationservice:v0.4.1")),
               Edit("Deployment", "shippingservice", ("patch", "--type", "json", "-p",
                                                     '[{"op":"replace","path":"/spec/template/spec/containers/0/resources/limits/memory","value":"256Mi"}]'),
                    f"{C0}.resources.limits.memory",
                    ("base/shippingservice.yaml", "            memory: 128Mi", "            memory: 256Mi")),
           )),
    # kubeflow's models web app: the overlay's configMapGenerator replaces the base's generated map (behavior: replace,
    # disableNameSuffixHash): a literal is written into the overlay's line, never into the base's (which sets
    # GRAFANA_PREFIX too, quoted); a component patches the base's Deployment; the overlay's JSON 6902 patch of the
    # VirtualService replaces /spec/gateways twice, with the same text: the second is the one applied last
    Layout("kubeflow-models-web-app-replace", "kubeflow-models-web-app", "kubeflow",
           top="resources:\n  - overlays/kubeflow\n", namespaces=("kubeflow",), crds=ISTIO,
           track=WB + (("ServiceAccount", "report"), ("ClusterRole", "report"), ("ClusterRoleBinding", "report"),
                       ("VirtualService", "writeback"), ("AuthorizationPolicy", "report")),
           edits=(
               Edit("ConfigMap", "kserve-models-web-application-config",
                    ("patch", "--type", "merge", "-p", '{"data":{"APP_PREFIX":"/models"}}'), "data.APP_PREFIX",
                    ("overlays/kubeflow/kustomization.yaml", "  - APP_PREFIX=/kserve-endpoints", "  - APP_PREFIX=/models")),
               Edit("ConfigMap", "kserve-models-web-application-config",
                    ("edit", "GRAFANA_PREFIX: /grafana", "GRAFANA_PREFIX: /dashboards"), "data.GRAFANA_PREFIX",
                    ("overlays/kubeflow/kustomization.yaml", "  - GRAFANA_PREFIX=/grafana",
                     "  - GRAFANA_PREFIX=/dashboards")),
               Edit("ConfigMap", "kserve-models-web-application-config",
                    ("patch", "--type", "merge", "-p", '{"data":{"USERID_HEADER":"x-user"}}'), "data.USERID_HEADER",
                    ("overlays/kubeflow/kustomization.yaml", "  - USERID_HEADER=kubeflow-userid", "  - USERID_HEADER=x-user")),
               Edit("Deployment", "kserve-models-web-application",
                    ("set", "image", "kserve-models-web-application=ghcr.io/kserve/models-web-app:0.16.2"), f"{C0}.image",
                    ("base/kustomization.yaml", "  newTag: 0.16.1", "  newTag: 0.16.2")),
               Edit("Deployment", "kserve-models-web-application",
                    ("set", "env", "GUNICORN_CMD_ARGS=--limit-request-field_size 64000"), f"{C0}.env[0].value",
                    ("base/deployment.yaml", "            value: --limit-request-field_size 32000",
                     "            value: --limit-request-field_size 64000")),
               Edit("Deployment", "kserve-models-web-application", ("scale", "--replicas=2"), "spec.replicas",
                    ("base/deployment.yaml", "  replicas: 1", "  replicas: 2")),
               Edit("VirtualService", "kserve-models-web-application",
                    ("patch", "--type", "json", "-p",
                     '[{"op":"replace","path":"/spec/gateways/0","value":"kubeflow/models-gateway"}]'),
                    "spec.gateways[0]", ("overlays/kubeflow/patches/web-application-vsvc.yaml",
                                         "    - kubeflow/kubeflow-gateway", "    - kubeflow/models-gateway"), nth=1),
           )),
    # an nginx.conf as a configMapGenerator files: source (name hashed; it holds ``server_tokens off;``, no secret), its
    # Deployment and Service; the tree's own kustomization.yml is the installation's
    Layout("saleor-nginx-conf", "saleor-nginx", "default", track=WB,
           edits=(
               Edit("ConfigMap", "nginx-conf", ("edit", "worker_connections 1024;", "worker_connections 4096;"),
                    "data.nginx.conf", ("nginx.conf", "   worker_connections 1024;", "   worker_connections 4096;")),
               Edit("Deployment", "nginx", ("set", "image", "nginx=nginx:1.27"), f"{C0}.image",
                    ("nginx.yml", "        image: nginx:latest", "        image: nginx:1.27")),
               Edit("Deployment", "nginx", ("patch", "--type", "json", "-p",
                                           '[{"op":"replace","path":"/spec/template/spec/containers/0/resources/requests/memory","value":"256M"}]'),
                    f"{C0}.resources.requests.memory",
                    ("nginx.yml", '            memory: "128M"', '            memory: "256M"')),
           )),
    # two sibling overlays (namePrefix production-/staging-) over one base, each with a deployment-patch.yaml setting
    # replicas (3 and 2) and a configmap-patch.yaml (both setting the same URI text); the base's Secret holds text that
    # is not base64 in data:, which no API server accepts: the installation's top deletes both variants' Secrets
    Layout("sureshdsk-sibling-overlays-replicas", "sureshdsk-django", "default",
           top=("resources:\n  - overlays/production\n  - overlays/staging\npatches:\n"
                + "".join(f"  - patch: |-\n      apiVersion: v1\n      kind: Secret\n      metadata:\n        name: {n}\n"
                          "      $patch: delete\n" for n in ("production-django-secret", "staging-django-secret"))),
           track=WB,
           edits=(
               Edit("Deployment", "production-django-app", ("scale", "--replicas=4"), "spec.replicas",
                    ("overlays/production/deployment-patch.yaml", "  replicas: 3", "  replicas: 4")),
               Edit("Deployment", "staging-django-app", ("scale", "--replicas=1"), "spec.replicas",
                    ("overlays/staging/deployment-patch.yaml", "  replicas: 2", "  replicas: 1")),
               Edit("ConfigMap", "production-django-configmap", ("patch", "--type", "merge", "-p", '{"data":{"DEBUG":"True"}}'),
                    "data.DEBUG", ("overlays/production/configmap-patch.yaml", '  DEBUG: "False"', '  DEBUG: "True"')),
               Edit("ConfigMap", "staging-django-configmap",
                    ("edit", "http://staging.192.168.0.139.sslip.io", "http://stage.192.168.0.139.sslip.io"),
                    "data.DJANGO_AUTH_PUBLIC_URI", ("overlays/staging/configmap-patch.yaml",
                                                    '  DJANGO_AUTH_PUBLIC_URI: "http://staging.192.168.0.139.sslip.io"',
                                                    '  DJANGO_AUTH_PUBLIC_URI: "http://stage.192.168.0.139.sslip.io"')),
               # the base's DEBUG line reaches staging only (production's patch sets its own): it is staging's line
               Edit("ConfigMap", "staging-django-configmap", ("patch", "--type", "merge", "-p", '{"data":{"DEBUG":"False"}}'),
                    "data.DEBUG", ("base/configmap.yaml", '  DEBUG: "True"', '  DEBUG: "False"')),
               # the base's image is shared by both variants: no single line may change
               Edit("Deployment", "staging-django-app", ("set", "image", "django-app=kubernetes-django:v2"),
                    f"{C0}.image", None),
           )),
)

_WB = (("Deployment", "writeback"), ("ConfigMap", "writeback"), ("Service", "writeback"), ("Secret", "report"))
_TOP = "resources:\n  - {}\n"

#: The written trees (``--written``): the shapes of the classes SOURCES.md lists as not covered by a public tree.
WRITTEN_LAYOUTS: tuple[Layout, ...] = (
    Layout("written-nested-components", "nested-components", "default", top=_TOP.format("overlays/prod"), track=_WB,
           written=True, edits=(
               # a component listing another: its images: and its inline patch; the outer one's inline patch
               Edit("Deployment", "web", ("set", "image", "app=nginx:1.27.1"), f"{C0}.image",
                    ("components/sidecar/kustomization.yaml", "    newTag: 1.27.0", "    newTag: 1.27.1")),
               Edit("Deployment", "web", ("scale", "--replicas=4"), "spec.replicas",
                    ("components/monitoring/kustomization.yaml", "        replicas: 3", "        replicas: 4")),
               Edit("Deployment", "web", ("set", "env", "METRICS_PATH=/stats"), f"{C0}.env[1].value",
                    ("components/monitoring/kustomization.yaml", "                    value: /metrics",
                     "                    value: /stats")),
               Edit("Deployment", "web", ("set", "env", "SIDECAR_MODE=direct"), f"{C0}.env[2].value",
                    ("components/sidecar/kustomization.yaml", "                    value: proxy",
                     "                    value: direct")),
               Edit("Deployment", "web", ("set", "env", "LOG_LEVEL=debug"), f"{C0}.env[3].value",
                    ("base/deployment.yaml", "              value: info", "              value: debug")),
           )),
    Layout("written-generator-merge", "generator-merge", "default", top=_TOP.format("overlays/prod"), track=_WB,
           written=True, edits=(
               # behavior: merge in the overlay (an envs: file and a literal), the base's envs: file with an
               # unchanged password line, an nginx.conf files: source with proxy_pass
               Edit("ConfigMap", "app-config", ("patch", "--type", "merge", "-p", '{"data":{"LOG_LEVEL":"error"}}'),
                    "data.LOG_LEVEL", ("overlays/prod/prod.env", "LOG_LEVEL=warn", "LOG_LEVEL=error")),
               Edit("ConfigMap", "app-config", ("patch", "--type", "merge", "-p", '{"data":{"WORKERS":"16"}}'),
                    "data.WORKERS", ("overlays/prod/kustomization.yaml", "      - WORKERS=8", "      - WORKERS=16")),
               Edit("ConfigMap", "app-config", ("patch", "--type", "merge", "-p", '{"data":{"DB_HOST":"db2.internal"}}'),
                    "data.DB_HOST", ("base/app.env", "DB_HOST=db.internal", "DB_HOST=db2.internal")),
               Edit("ConfigMap", "nginx-conf", ("edit", "proxy_read_timeout 30s;", "proxy_read_timeout 60s;"),
                    "data.nginx.conf", ("base/nginx.conf", "      proxy_read_timeout 30s;", "      proxy_read_timeout 60s;")),
           )),
    Layout("written-sibling-envs-version", "sibling-envs-version", "default", top=_TOP.format("envs/production"),
           track=_WB, written=True, edits=(
               # two sibling envs with same-named replicas.yaml and version.yml; the base has trailing tabs
               Edit("Deployment", "api", ("scale", "--replicas=7"), "spec.replicas",
                    ("envs/production/replicas.yaml", "  replicas: 5", "  replicas: 7")),
               Edit("Deployment", "api", ("set", "image", "api=ghcr.io/example/api:1.0.5"), f"{C0}.image",
                    ("envs/production/version.yml", "          image: ghcr.io/example/api:1.0.4",
                     "          image: ghcr.io/example/api:1.0.5")),
               Edit("Deployment", "api", ("patch", "--type", "json", "-p",
                                          '[{"op":"replace","path":"/spec/template/spec/containers/0/ports/0/containerPort",'
                                          '"value":8081}]'),
                    f"{C0}.ports[0].containerPort",
                    ("base/deployment.yaml", "            - containerPort: 8080", "            - containerPort: 8081")),
           )),
    Layout("written-prefix-replicas-images", "prefix-replicas-images", "default", top=_TOP.format("overlays/prod"),
           track=_WB, written=True, edits=(
               Edit("Deployment", "prod-shop", ("scale", "--replicas=5"), "spec.replicas",
                    ("overlays/prod/kustomization.yaml", "    count: 3", "    count: 5")),
               Edit("Deployment", "prod-shop", ("set", "image", "shop=registry.example.com/shop-prod:2.4.2"), f"{C0}.image",
                    ("overlays/prod/kustomization.yaml", '    newTag: "2.4.1"', '    newTag: "2.4.2"')),
               Edit("Deployment", "prod-shop", ("edit", "--cache-size=512", "--cache-size=1024"), f"{C0}.args[1]",
                    ("overlays/prod/args.yaml", "  value: --cache-size=512", "  value: --cache-size=1024")),
               Edit("Deployment", "prod-shop", ("edit", "--region=eu-west", "--region=eu-central"), f"{C0}.args[2]",
                    ("overlays/prod/args.yaml", "  value: --region=eu-west", "  value: --region=eu-central")),
               Edit("Deployment", "prod-shop", ("set", "resources", "-c", "shop", "--requests=cpu=750m"),
                    f"{C0}.resources.requests.cpu",
                    ("overlays/prod/resources.yaml", "              cpu: 500m", "              cpu: 750m")),
               Edit("ConfigMap", "prod-shop-settings", ("patch", "--type", "merge", "-p", '{"data":{"CART_TTL":"9000"}}'),
                    "data.CART_TTL", ("overlays/prod/kustomization.yaml", "      - CART_TTL=7200", "      - CART_TTL=9000")),
               Edit("ConfigMap", "prod-shop-settings", ("patch", "--type", "merge", "-p", '{"data":{"CURRENCY":"USD"}}'),
                    "data.CURRENCY", ("base/kustomization.yaml", "      - CURRENCY=EUR", "      - CURRENCY=USD")),
               Edit("Service", "prod-shop", ("patch", "--type", "merge", "-p",
                                             '{"spec":{"ports":[{"port":80,"targetPort":9090}]}}'),
                    "spec.ports[0].targetPort", ("base/service.yaml", "      targetPort: 8080", "      targetPort: 9090")),
           )),
    Layout("written-replacements-selector", "replacements-selector", "default", top=_TOP.format("env"), track=_WB,
           written=True, edits=(
               # one JSON 6902 patch line sets both Deployments' replicas (a labelSelector target): reported
               Edit("Deployment", "worker-email", ("scale", "--replicas=4"), "spec.replicas", None),
               Edit("Deployment", "worker-resize", ("set", "env", "JOB=thumbnails"), f"{C0}.env[1].value",
                    ("app/workers.yaml", "              value: resize", "              value: thumbnails")),
               Edit("ConfigMap", "queue", ("patch", "--type", "merge", "-p", '{"data":{"QUEUE_PORT":"5673"}}'),
                    "data.QUEUE_PORT", ("app/kustomization.yaml", "      - QUEUE_PORT=5672", "      - QUEUE_PORT=5673")),
               Edit("Deployment", "worker-email", ("set", "image", "worker=ghcr.io/example/worker:3.1.1"), f"{C0}.image",
                    ("app/workers.yaml", "          image: ghcr.io/example/worker:3.1.0",
                     "          image: ghcr.io/example/worker:3.1.1"), nth=0),
           )),
    Layout("written-files-multidoc-patch", "files-multidoc-patch", "default", top=_TOP.format("prod"), track=_WB,
           written=True, edits=(
               # kustomization.yml; one patch file of two documents; files: renamed (config.json=app-config.json)
               Edit("Deployment", "ledger", ("scale", "--replicas=3"), "spec.replicas",
                    ("prod/scale.yaml", "  replicas: 2", "  replicas: 3")),
               Edit("Deployment", "api", ("scale", "--replicas=6"), "spec.replicas",
                    ("prod/scale.yaml", "  replicas: 4", "  replicas: 6")),
               Edit("ConfigMap", "api-files", ("edit", '"timeoutMs": 2500', '"timeoutMs": 4000'), "data.config.json",
                    ("base/app-config.json", '  "timeoutMs": 2500,', '  "timeoutMs": 4000,')),
               Edit("ConfigMap", "api-files", ("edit", "log.level=INFO", "log.level=DEBUG"), "data.logging.properties",
                    ("base/logging.properties", "log.level=INFO", "log.level=DEBUG")),
               # commonAnnotations sets every object from one line: reported, not written
               Edit("Deployment", "api", ("annotate", "--overwrite", "owner=platform@example.com"),
                    "metadata.annotations.owner", None),
           )),
)


#: The scripted KUBE_EDITOR: replaces the first occurrence in the object's own fields, as a person
#: would, never in the JSON of the last-applied annotation.
EDITOR = """import sys
path = sys.argv[1]
text = open(path).read()
old, new = {old!r}, {new!r}
at = 0
while True:
    at = text.index(old, at)
    line = text[text.rfind("\\n", 0, at) + 1:text.find("\\n", at)]
    if '{{"apiVersion"' not in line:
        break
    at += 1
open(path, "w").write(text[:at] + new + text[at + len(old):])
"""


def sh(*args: str, env: dict[str, str] | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, check=False,
                          env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)


def git(cwd: Path, *args: str) -> str:
    out = sh("git", "-C", str(cwd), "-c", "user.name=Bench", "-c", "user.email=bench@example.invalid", *args)
    assert out.returncode == 0, out.stderr
    return out.stdout


def parse_path(text: str) -> list[str | int]:
    if text.startswith("data."):  # a ConfigMap's key may hold dots (a file name: redis.conf)
        return ["data", text[len("data."):]]
    out: list[str | int] = []
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", text):
        out.append(int(part[1:-1]) if part.startswith("[") else part)
    return out


def get(obj: Any, path: list[str | int]) -> Any:
    for p in path:
        if isinstance(p, int):
            obj = obj[p] if isinstance(obj, list) and p < len(obj) else None
        else:
            obj = obj.get(p) if isinstance(obj, dict) else None
    return obj


def render(directory: Path) -> dict[tuple[str, str, str], dict[str, Any]]:
    """``kubectl kustomize`` of ``directory``: objects by (kind, namespace, name without a hash)."""
    done = sh(KUBECTL, "kustomize", str(directory))
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip())
    out = {}
    for doc in parse_documents(done.stdout, f"kubectl kustomize {directory}"):
        if isinstance(doc, dict):
            meta = doc.get("metadata") or {}
            out[(doc["kind"], str(meta.get("namespace") or ""), HASH.sub("", meta["name"]))] = doc
    return out


def _strip_names(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_names(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strip_names(v) for v in value]
    return HASH.sub("", value) if isinstance(value, str) else value


def _differences(a: Any, b: Any, at: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted({*a, *b}) for d in _differences(a.get(k), b.get(k), f"{at}.{k}" if at else k)]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{at}[{i}]")]
    return [] if a == b else [at]


def prove(host: Path, edit: Edit, live: Any, scratch: Path) -> str:
    """"" when changing only the edit's line renders the live value at its path and nothing else; else why not."""
    assert edit.line is not None
    rel, old, new = edit.line
    text = (host / rel).read_text()
    lines = text.split("\n")
    hits = [i for i, ln in enumerate(lines) if ln == old]
    if not hits or (len(hits) != 1 and edit.nth is None):
        return f"{rel}: {len(hits)} lines are {old!r}"
    copy = scratch / "prove"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(host, copy)
    lines[hits[edit.nth or 0]] = new
    (copy / rel).write_text("\n".join(lines))
    before, after = render(host), render(copy)
    key = next((k for k in after if k[0] == edit.kind and k[2] == HASH.sub("", edit.name)), None)
    if key is None:
        return "the object is not rendered"
    got = get(after[key], parse_path(edit.path))
    if str(got) != str(live):
        return f"renders {got!r}, live is {live!r}"
    extra = [f"{k} {d}" for k in sorted(set(before) | set(after)) for d in
             _differences(_strip_names(before.get(k)), _strip_names(after.get(k)))
             if not (k == key and (d == edit.path or edit.path.startswith(d + ".") or d.startswith(edit.path)))]
    return f"also changes {extra[:3]}" if extra else ""


@dataclass
class Result:
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KEYS, 0))
    notes: list[str] = field(default_factory=list)


class Bench:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        for attempt in range(3):
            try:
                self.cluster = RealCluster(kube_apiserver=apiserver_binary()).start()
                break
            except ClusterError:
                if attempt == 2:
                    raise
        self.kc = str(self.cluster.kubeconfig(tmp / "admin.kubeconfig"))

    def kubectl(self, *args: str, editor: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {"KUBE_EDITOR": f"{sys.executable} {editor}"} if editor else None
        return sh(KUBECTL, "--kubeconfig", self.kc, *args, env=env)

    def syncer(self, *argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = syncer(list(argv), now=datetime.now(timezone.utc), stdout=out, stderr=err)
        return code, out.getvalue(), err.getvalue()

    def diff(self, repo: Path, inst: str, res: Result, when: str) -> list[dict[str, Any]]:
        code, out, err = self.syncer("diff", inst, "--repo", str(repo), "--kubeconfig", self.kc, "-o", "json")
        try:
            doc = json.loads(out)
        except ValueError:
            doc = {"drifts": [], "errors": [{"message": err.strip()}]}
        if code == 2 or doc.get("errors"):
            res.counts["error exits"] += 1
            res.notes.append(f"{when}: diff exit {code}: {[e.get('message') for e in doc.get('errors', [])] or err.strip()}")
        return list(doc.get("drifts") or [])

    def live_name(self, kind: str, namespace: str, name: str) -> str:
        out = self.kubectl("get", kind.lower(), "-n", namespace, "-o", "name").stdout.split()
        names = [n.split("/", 1)[1] for n in out]
        found = next((n for n in names if n == name), None) or next((n for n in names if HASH.sub("", n) == name), None)
        if found is None:
            raise RuntimeError(f"{kind}/{name} is not live in {namespace} (live: {names}); see the apply -k note above")
        return found

    def run(self, layout: Layout) -> Result:
        res = Result()
        base = self.tmp / layout.name
        work, bare = base / "work", base / "origin.git"
        host = work / "hosts" / layout.name
        shutil.copytree((WRITTEN if layout.written else CORPUS) / layout.tree, host)
        if layout.top:
            (host / "kustomization.yaml").write_text(layout.top)
        track = "".join(f"  {k}: {v}\n" for k, v in layout.track)
        (host / "syncer.conf").write_text(f"installation: {layout.name}\nnamespace: {layout.namespace}\ntrack:\n{track}")
        git(base, "init", "-q", "--bare", "-b", "main", str(bare))
        git(work, "init", "-q", "-b", "main")
        git(work, "add", ".")
        git(work, "commit", "-qm", layout.name)
        git(work, "remote", "add", "origin", str(bare))
        git(work, "push", "-q", "origin", "main")
        for ns in layout.namespaces:
            self.kubectl("create", "namespace", ns)
        for group, version, kind, plural in layout.crds:
            crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                   "metadata": {"name": f"{plural}.{group}"},
                   "spec": {"group": group, "scope": "Namespaced",
                            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
                            "versions": [{"name": v, "served": True, "storage": i == 0, "schema": {"openAPIV3Schema": {
                                "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
                                         for i, v in enumerate(version.split(","))]}}
            path = base / f"crd-{plural}.json"
            path.write_text(json.dumps(crd))
            self.kubectl("apply", "-f", str(path))
        if layout.crds:
            time.sleep(3)
        applied = self.kubectl("apply", "-k", str(host))
        if applied.returncode != 0:
            res.notes.append(f"kubectl apply -k: {applied.stderr.strip()[-300:]}")
        for d in self.diff(work, layout.name, res, "after apply -k"):
            res.counts["false drift"] += 1
            res.notes.append(f"false drift after apply: {d['kind']}/{d['name']} {d['path']}")
        live: dict[int, Any] = {}
        for i, e in enumerate(layout.edits):
            ns = layout.namespace
            try:
                name = self.live_name(e.kind, ns, e.name)
            except RuntimeError as exc:
                raise RuntimeError(f"{layout.name}: {exc}; {res.notes[:1]}") from None
            if e.how[0] == "edit":
                script = base / f"editor-{i}.py"
                script.write_text(EDITOR.format(old=e.how[1], new=e.how[2]))
                done = self.kubectl("edit", f"{e.kind.lower()}/{name}", "-n", ns, editor=str(script))
            elif e.how[0] in ("patch", "scale"):
                done = self.kubectl(e.how[0], f"{e.kind.lower()}/{name}", "-n", ns, *e.how[1:])
            else:  # set image / set env
                done = self.kubectl(e.how[0], e.how[1], f"{e.kind.lower()}/{name}", "-n", ns, *e.how[2:])
            if done.returncode != 0:
                raise RuntimeError(f"{layout.name} edit {i}: {done.stderr}")
            res.counts["edits"] += 1
            obj = json.loads(self.kubectl("get", f"{e.kind.lower()}/{name}", "-n", ns, "-o", "json").stdout)
            live[i] = get(obj, parse_path(e.path))
            if e.line is not None:
                why = prove(host, e, live[i], base)
                if why:
                    res.notes.append(f"edit {i} ({e.kind}/{e.name} {e.path}): expected line not proven: {why}")
                else:
                    res.counts["proven"] += 1
        drifts = self.diff(work, layout.name, res, "after the edits")
        matched: set[int] = set()
        for i, e in enumerate(layout.edits):
            found = [j for j, d in enumerate(drifts) if d["kind"] == e.kind and HASH.sub("", d["name"]) == e.name
                     and d["path"] == e.path]
            if not found:
                res.counts["missed"] += 1
                res.notes.append(f"missed: edit {i} {e.kind}/{e.name} {e.path}")
                continue
            matched.update(found)
            d = drifts[found[0]]
            want = f"hosts/{layout.name}/{e.line[0]}" if e.line else None
            if want is not None and d.get("file") != want:
                res.counts["wrong file"] += 1
                res.notes.append(f"wrong file: edit {i} {e.kind}/{e.name} {e.path}: {d.get('file')} "
                                 f"({d.get('action')}: {d.get('reason', '')}), expected {want}")
            elif want is not None and d.get("action") != "write":
                res.counts["missed"] += 1
                res.notes.append(f"not written: edit {i} {e.kind}/{e.name} {e.path}: {d.get('reason', '')}")
            elif want is None and d.get("action") == "write":  # a wrong write only if it is committed (below)
                res.notes.append(f"planned a write where no line may be: edit {i} {e.path} -> {d.get('file')}")
            elif want is None:
                res.counts["reported as expected"] += 1
        for j, d in enumerate(drifts):
            if j not in matched:
                res.counts["false drift"] += 1
                res.notes.append(f"false drift: {d['kind']}/{d['name']} {d['path']} ({d.get('file')})")
        head = git(work, "rev-parse", "HEAD").strip()
        code, out, err = self.syncer("sync", layout.name, "--repo", str(work), "--kubeconfig", self.kc,
                                     "--mode", "commit")
        if code != 0:
            res.counts["error exits"] += 1
            res.notes.append(f"sync exit {code}: {err.strip()[-300:]}")
        git(work, "fetch", "-q", "origin")
        changed = _changed(work, head, "origin/main")
        want_lines: dict[tuple[str, str], int] = {}
        for i, e in enumerate(layout.edits):
            if e.line is None:
                continue
            new = e.line[2]
            key = (f"hosts/{layout.name}/{e.line[0]}", f"-{e.line[1]}\n+{new}")
            if key not in changed:
                res.notes.append(f"not committed: edit {i} {e.line[0]}: {e.line[1]!r} -> {new!r}")
                res.counts["missed"] += 0 if any(n.startswith(f"not written: edit {i} ") or
                                                 n.startswith(f"wrong file: edit {i} ") or
                                                 n.startswith(f"missed: edit {i} ") for n in res.notes) else 1
            want_lines[key] = i
        for key in changed:
            if key not in want_lines:
                res.counts["wrong writes"] += 1
                res.notes.append(f"wrong write: {key[0]}: {key[1]!r}")
        self.kubectl("delete", "-k", str(host), "--wait=false")
        return res


def _changed(repo: Path, old: str, new: str) -> set[tuple[str, str]]:
    """(file, "-old line\\n+new line") for each changed line between two commits (a block of adjacent replaced lines
    gives one pair per line; other hunks as they are)."""
    out: set[tuple[str, str]] = set()
    files = [f for f in git(repo, "diff", "--name-only", old, new).split("\n") if f]
    for f in files:
        a = git(repo, "show", f"{old}:{f}").split("\n")
        b = git(repo, "show", f"{new}:{f}").split("\n")
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
            if tag == "equal":
                continue
            if tag == "replace" and i2 - i1 == j2 - j1:  # adjacent one-line changes: one pair each, as each edit is
                out.update((f, f"-{x}\n+{y}") for x, y in zip(a[i1:i2], b[j1:j2]))
                continue
            out.add((f, "\n".join([*(f"-{x}" for x in a[i1:i2]), *(f"+{y}" for y in b[j1:j2])])))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.kustomizecorpus")
    ap.add_argument("--only", default="", help="comma-separated layout names")
    ap.add_argument("--written", action="store_true",
                    help="the trees of tests/data/kustomize-written/ (ours, for the classes no public tree covers) instead")
    args = ap.parse_args(argv)
    chosen = [lay for lay in (WRITTEN_LAYOUTS if args.written else LAYOUTS)
              if not args.only or lay.name in args.only.split(",")]
    rows = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kustomizecorpus-") as tmp:
        bench = Bench(Path(tmp))
        try:
            for layout in chosen:
                res = bench.run(layout)
                rows.append((layout.name, res))
                print(f"\n## {layout.name}: {json.dumps(res.counts)}")
                for note in res.notes:
                    print(f"  {note}")
                sys.stdout.flush()
        finally:
            bench.cluster.stop()
    total = dict.fromkeys(KEYS, 0)
    print("\n| layout | " + " | ".join(KEYS) + " |")
    print("|---|" + "---|" * len(KEYS))
    for name, res in rows:
        print(f"| {name} | " + " | ".join(str(res.counts[k]) for k in KEYS) + " |")
        for k in KEYS:
            total[k] += res.counts[k]
    print("| **total** | " + " | ".join(str(total[k]) for k in KEYS) + " |")
    print(f"\n{len(rows)} layouts, {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
