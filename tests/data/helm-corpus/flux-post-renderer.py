#!/usr/bin/env python3
"""helm --post-renderer: what helm-controller's post-renderer does to every object of a
HelmRelease (its origin labels, helm.toolkit.fluxcd.io/name and /namespace), read from the
environment (FLUX_HR_NAME, FLUX_HR_NAMESPACE). stdin: helm's rendered manifests; stdout: them labelled."""

import os
import sys

import yaml

docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
for doc in docs:
    labels = doc.setdefault("metadata", {}).setdefault("labels", {}) or {}
    labels["helm.toolkit.fluxcd.io/name"] = os.environ["FLUX_HR_NAME"]
    labels["helm.toolkit.fluxcd.io/namespace"] = os.environ["FLUX_HR_NAMESPACE"]
    doc["metadata"]["labels"] = labels
sys.stdout.write(yaml.safe_dump_all(docs, sort_keys=False))
