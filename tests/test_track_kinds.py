"""Kinds named in syncer.conf are checked (a typo there would quietly make an installation
report-only), ``optional:`` is read strictly, and an installation that declares nothing is an
error naming its directory, never "in sync (0 objects checked)"."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.conftest import EXAMPLE_LIVE, ROOT
from tests.helpers import run
from tests.test_live_api import load_asgard_as_applied

from tests.fakes.kube_api import FakeKubeAPI
from syncer.config import parse_config
from syncer.errors import ConfigError
from syncer.gather.trackcheck import near_match


def asgard_with(tmp_path: Path, config_edit: tuple[str, str] | None = None, extra: str = "") -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "hosts" / "asgard", repo / "hosts" / "asgard")
    conf = repo / "hosts" / "asgard" / "syncer.conf"
    text = conf.read_text()
    if config_edit:
        assert config_edit[0] in text
        text = text.replace(*config_edit)
    conf.write_text(text + extra)
    return repo


def test_a_misspelt_kind_without_a_cluster_names_the_near_match(tmp_path: Path) -> None:
    repo = asgard_with(tmp_path, ("ConfigMap: writeback", "Configmap: writeback"))
    code, out, err = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert (code, out) == (2, "")
    assert err == ("syncer: error: hosts/asgard/syncer.conf: track.Configmap: no manifest declares kind Configmap, and "
                   "Kubernetes has no kind of that name (did you mean ConfigMap?); kinds are spelt as in a "
                   "manifest's `kind:`\n")


def test_a_misspelt_kind_against_the_cluster_is_checked_by_discovery(fake_kube: FakeKubeAPI, tmp_path: Path) -> None:
    load_asgard_as_applied(fake_kube)
    kc = str(fake_kube.kubeconfig(tmp_path / "kc"))
    repo = asgard_with(tmp_path, ("Endpoints: stable", "Endpoint: stable"))
    code, out, err = run("diff", "asgard", "--repo", str(repo), "--kubeconfig", kc)
    assert (code, out) == (2, "")
    assert err.startswith("syncer: error: hosts/asgard/syncer.conf: track.Endpoint: no manifest declares kind Endpoint "
                          "and the API server serves no kind of that name (did you mean Endpoints?)"), err


def test_a_kind_no_manifest_declares_but_the_cluster_serves_is_fine(fake_kube: FakeKubeAPI, tmp_path: Path) -> None:
    """``untracked:`` looks for live objects of the tracked kinds: tracking a kind git has none of yet is no typo."""
    load_asgard_as_applied(fake_kube)
    kc = str(fake_kube.kubeconfig(tmp_path / "kc"))
    repo = asgard_with(tmp_path, extra="optional: [Secret]\n")
    (repo / "hosts" / "asgard" / "syncer.conf").write_text(
        (repo / "hosts" / "asgard" / "syncer.conf").read_text().replace("  Deployment: report\n",
                                                                        "  Deployment: report\n  Secret: report\n"))
    code, out, err = run("diff", "asgard", "--repo", str(repo), "--kubeconfig", kc)
    assert code == 1 and err == "", err


def test_an_unknown_kind_without_a_cluster_is_a_note_not_a_guess(tmp_path: Path) -> None:
    repo = asgard_with(tmp_path, ("  Deployment: report\n", "  Deployment: report\n  Certificate: report\n"))
    code, out, err = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert code == 1 and err == ""
    assert ("note: hosts/asgard/syncer.conf: track.Certificate: no manifest declares kind Certificate, and snapshot "
            in out)


@pytest.mark.parametrize("kind,meant", [("Configmap", "ConfigMap"), ("configmap", "ConfigMap"),
                                        ("Deploymnet", "Deployment"), ("Endpoint", "Endpoints"),
                                        ("Certificate", None)])
def test_near_match(kind: str, meant: str | None) -> None:
    assert near_match(kind, {"ConfigMap", "Deployment", "Endpoints", "Service"}) == meant


def test_optional_is_read_strictly() -> None:
    conf = "track:\n  ConfigMap: writeback\noptional: [Role, ServiceAccount]\n"
    assert parse_config(conf, "c", "x").optional == {"Role", "ServiceAccount"}
    with pytest.raises(ConfigError, match=r"c: optional\[0\]: ConfigMap is tracked writeback: a kind syncer writes "
                                          r"back cannot be optional"):
        parse_config("track:\n  ConfigMap: writeback\noptional: [ConfigMap]\n", "c", "x")
    with pytest.raises(ConfigError, match=r"c: optional: expected a list of kinds"):
        parse_config("optional: Role\n", "c", "x")


def test_an_installation_without_objects_is_an_error_naming_its_directory(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "hosts" / "empty").mkdir(parents=True)
    code, out, err = run("diff", "empty", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert (code, out) == (2, "")
    assert err == (f"syncer: error: hosts/empty/ ({repo / 'hosts' / 'empty'}) declares no Kubernetes objects: nothing "
                   "to compare; add its manifests, or pass the installation that has them\n")
    (repo / "hosts" / "empty" / "values.yaml").write_text("replicas: 3\n")  # a file, but no object in it
    code, out, err = run("diff", "empty", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE), "-o", "json")
    assert code == 2 and "declares no Kubernetes objects (1 file(s) skipped" in err
    assert '"in_sync": false' in out
