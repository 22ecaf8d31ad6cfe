"""``nameSuffix`` layers: Skaffold's getting-started-kustomize (two suffixed overlays, each with its
own ``deployment.yaml`` patch; tests/data/kustomize-corpus), and a small written tree for what no
permissive public tree had (SOURCES.md): blue/green overlays of one base, each with an inline
strategic-merge patch carrying several values in its kustomization.yaml, the green one merging a
literal into the base's generator. The real kustomize renders the trees; no API server.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_kustomize import KUBECTL, _real_kubectl  # noqa: F401  (the fixture: the real kubectl)
from tests.test_kustomize_graph import C0, layout, load, obj, placed, tree, written

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl (kustomize) not installed")


def _overlay(color: str, replicas: int, tag: str, extra: str = "") -> str:
    return f"""\
        resources: [../../base]
        nameSuffix: -{color}
        patches:
          - patch: |-
              apiVersion: apps/v1
              kind: Deployment
              metadata:
                name: web
              spec:
                replicas: {replicas}
                template:
                  spec:
                    containers:
                      - name: web
                        image: nginx:{tag}
                        env:
                          - name: COLOR
                            value: {color}
{extra}"""


BLUE_GREEN = {
    "base/kustomization.yaml": """\
        resources: [web.yaml]
        configMapGenerator:
          - name: web-conf
            literals:
              - MODE=fast
              - LEVEL=1
        """,
    "base/web.yaml": """\
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: web
        spec:
          replicas: 1
          selector: {matchLabels: {app: web}}
          template:
            metadata: {labels: {app: web}}
            spec:
              containers:
                - name: web
                  image: nginx:1.26
                  env:
                    - name: COLOR
                      value: none
              volumes:
                - name: conf
                  configMap: {name: web-conf}
        """,
    "overlays/blue/kustomization.yaml": _overlay("blue", 2, "1.27"),
    "overlays/green/kustomization.yaml": _overlay("green", 3, "1.28", """\
        configMapGenerator:
          - name: web-conf
            behavior: merge
            literals:
              - LEVEL=2
        """),
    "kustomization.yaml": "resources: [overlays/blue, overlays/green]\n",
}


def test_each_value_of_an_inline_patch_under_a_name_suffix_is_written_into_its_own_line(tmp_path: Path) -> None:
    repo = tree(tmp_path, BLUE_GREEN)
    m = load(repo, "default")
    green, blue = obj(m, "Deployment", "web-green"), obj(m, "Deployment", "web-blue")
    conf = obj(m, "ConfigMap", "web-conf-green")  # the suffix comes before kustomize's hash
    drifts = [placed(m, green, ("spec", "replicas"), 4),
              placed(m, green, C0 + ("image",), "nginx:1.29"),
              placed(m, green, C0 + ("env", 0, "value"), "teal"),
              placed(m, blue, ("spec", "replicas"), 5),
              placed(m, conf, ("data", "LEVEL"), "3")]
    assert [d.file for d in drifts] == ["hosts/t/overlays/green/kustomization.yaml"] * 3 + [
        "hosts/t/overlays/blue/kustomization.yaml", "hosts/t/overlays/green/kustomization.yaml"]
    lines, refused = written(repo, m, drifts)
    assert refused == []
    assert lines == {
        "hosts/t/overlays/green/kustomization.yaml": [
            "-        replicas: 3", "+        replicas: 4",
            "-                image: nginx:1.28", "+                image: nginx:1.29",
            "-                    value: green", "+                    value: teal",
            "-      - LEVEL=2", "+      - LEVEL=3"],
        "hosts/t/overlays/blue/kustomization.yaml": ["-        replicas: 2", "+        replicas: 5"]}


def test_a_base_literal_both_suffixed_variants_share_is_reported_not_written(tmp_path: Path) -> None:
    repo = tree(tmp_path, BLUE_GREEN)
    m = load(repo, "default")
    mode = placed(m, obj(m, "ConfigMap", "web-conf-blue"), ("data", "MODE"), "slow")
    lines, refused = written(repo, m, [mode])
    assert lines == {}
    [(path, why)] = refused
    assert path == "data.MODE" and "web-conf-green" in why, why


def test_skaffolds_suffixed_overlays_each_patch_file_of_the_same_name_takes_its_own_edits(tmp_path: Path) -> None:
    """Skaffold's getting-started-kustomize (tests/data/kustomize-corpus/skaffold-kustomize): prod and staging
    each patch the base through their own deployment.yaml under their own nameSuffix."""
    repo = layout(tmp_path, "skaffold-kustomize", "resources:\n  - overlays/prod\n  - overlays/staging\n")
    m = load(repo, "default")
    prod, staging = obj(m, "Deployment", "skaffold-kustomize-prod"), obj(m, "Deployment", "skaffold-kustomize-staging")
    drifts = [placed(m, prod, ("spec", "replicas"), 5),
              placed(m, prod, ("metadata", "labels", "env"), "production"),
              placed(m, staging, ("metadata", "labels", "env"), "stage")]
    assert [d.file for d in drifts] == ["hosts/t/overlays/prod/deployment.yaml"] * 2 + [
        "hosts/t/overlays/staging/deployment.yaml"]
    lines, refused = written(repo, m, drifts)
    assert refused == []
    assert lines == {"hosts/t/overlays/prod/deployment.yaml": ["-    env: prod", "+    env: production",
                                                               "-  replicas: 3", "+  replicas: 5"],
                     "hosts/t/overlays/staging/deployment.yaml": ["-    env: staging", "+    env: stage"]}
