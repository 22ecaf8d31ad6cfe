"""A one-shot ``syncer diff`` begins the LISTs its files plainly need before it parses them
(``syncer.gather.oneshot``, ``KubeSource.expect``), and reads the same as without."""

from __future__ import annotations

import gc
import io
import json
from pathlib import Path

import pytest
from tests.conftest import NOW, ROOT

from tests.fakes.kube_api import FakeKubeAPI
from syncer.cli import main
from syncer.kube import kube_client
from syncer.gather.live import KubeSource
from syncer.sources.manifests import parse_documents
from syncer.model import ObjectRef
from syncer.gather.oneshot import EARLY_FROM, collection_paused, likely_lists

NS = "shop"


def _configmap(i: int, ns_line: bool = True) -> str:
    meta = f"  name: app-{i:04}\n" + (f"  namespace: {NS}\n" if ns_line else "")
    return f"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n{meta}data:\n  LOG_LEVEL: info\n"


def _installation(repo: Path, configmaps: int, endpoints: int = 3, ns_lines: int = 2) -> None:
    """ConfigMaps 25 to a file (every ``ns_lines``-th file with ``namespace:`` lines; 0: none) and a few Endpoints."""
    base = repo / "hosts" / "shop"
    base.mkdir(parents=True)
    (base / "syncer.conf").write_text(f"installation: shop\nnamespace: {NS}\ntrack:\n  ConfigMap: writeback\n"
                                      "  Endpoints: stable\n")
    for f in range(0, configmaps, 25):
        named = ns_lines > 0 and (f // 25) % ns_lines == 0
        (base / f"apps-{f:04}.yaml").write_text("".join(_configmap(i, ns_line=named)
                                                         for i in range(f, min(f + 25, configmaps))))
    (base / "backends.yaml").write_text("".join(
        f"---\napiVersion: v1\nkind: Endpoints\nmetadata:\n  name: be-{i}\n  namespace: {NS}\nsubsets:\n"
        f"  - addresses:\n      - ip: 10.0.0.{i}\n" for i in range(endpoints)))


def test_the_kinds_plain_files_declare_many_of_are_named_before_parsing(tmp_path: Path) -> None:
    _installation(tmp_path, EARLY_FROM + 25)
    # files with and without `namespace:` lines: the default namespace is the config's
    assert likely_lists(tmp_path, "shop") == [("v1", "ConfigMap", NS)]
    # -n moves the default, not what a file names
    assert likely_lists(tmp_path, "shop", "other") == []
    _installation(tmp_path / "plain", EARLY_FROM, ns_lines=0)
    assert likely_lists(tmp_path / "plain", "shop", "other") == [("v1", "ConfigMap", "other")]
    assert likely_lists(ROOT, "asgard") == []  # ten objects: read as before
    assert likely_lists(ROOT, "midgard") == []  # a kustomization renders its objects: no guess
    assert likely_lists(tmp_path, "nowhere") == []  # the command itself says what is wrong


def test_prefetch_takes_a_list_begun_early_and_drops_a_wrong_guess(fake_kube: FakeKubeAPI, tmp_path: Path) -> None:
    refs = []
    for i in range(10):
        fake_kube.put({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}", "namespace": "ai"},
                       "data": {"i": str(i)}})
        refs.append(ObjectRef("v1", "ConfigMap", "ai", f"cm-{i}"))
    source = KubeSource(kube_client(str(fake_kube.kubeconfig(tmp_path / "kubeconfig")), None, read_yaml=parse_documents))
    fake_kube.clear_requests()
    source.expect([("v1", "ConfigMap", "ai"), ("v1", "Endpoints", "ai"), ("v1", "Secret", "ai")])
    source.prefetch(refs)
    assert [source.get(r)["data"] for r in refs] == [{"i": str(i)} for i in range(10)]  # type: ignore[index]
    assert fake_kube.count("GET", "/namespaces/ai/configmaps", watch=False) == 1  # the early LIST, not a second
    assert fake_kube.count("GET", "/namespaces/ai/secrets", watch=False) == 0  # never listed, even on a guess
    fake_kube.clear_requests()
    source.prefetch(refs)  # nothing begun any more: read afresh
    assert fake_kube.count("GET", "/namespaces/ai/configmaps", watch=False) == 1


def test_diff_with_lists_begun_early_equals_diff_without(fake_kube: FakeKubeAPI, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _installation(tmp_path, EARLY_FROM + 10)
    for part in sorted((tmp_path / "hosts" / "shop").glob("*.yaml")):
        for obj in parse_documents(part.read_text(), part.name):
            obj["metadata"]["namespace"] = NS
            fake_kube.put(obj, applied=True, time="2026-06-02T18:40:11Z")
    fake_kube.patch("v1", "ConfigMap", NS, "app-0007", {"data": {"LOG_LEVEL": "debug"}}, manager="kubectl-edit",
                    time="2026-08-20T09:14:00Z")
    kubeconfig = fake_kube.kubeconfig(tmp_path / "kubeconfig")
    outputs = []
    for early_from in (EARLY_FROM, 10**9):  # with the early LISTs, then without any
        monkeypatch.setattr("syncer.gather.oneshot.EARLY_FROM", early_from)
        fake_kube.clear_requests()
        out, err = io.StringIO(), io.StringIO()
        code = main(["diff", "shop", "--repo", str(tmp_path), "--kubeconfig", str(kubeconfig), "-o", "json"],
                    now=NOW, stdout=out, stderr=err)
        outputs.append((code, out.getvalue(), err.getvalue()))
        assert fake_kube.count("GET", f"/namespaces/{NS}/configmaps", watch=False) == 1  # one LIST either way
    assert outputs[0] == outputs[1]
    assert outputs[0][0] == 1 and [d["name"] for d in json.loads(outputs[0][1])["drifts"]] == ["app-0007"]


def test_the_collector_is_paused_only_while_the_command_runs() -> None:
    assert gc.isenabled()
    with collection_paused():
        assert not gc.isenabled()
        made = [[i] for i in range(10_000)]  # what a command builds
    assert gc.isenabled()
    # handed to the oldest generation: no young collection walks all of it (a real command
    # holds millions of objects by then)
    assert any(o is made for o in gc.get_objects(generation=2))
