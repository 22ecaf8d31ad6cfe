"""``syncer init``: the config inferred from manifests and live objects, with the reasons printed,
and never written over an existing one without ``--force``."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from tests.conftest import EXAMPLE_LIVE, ROOT
from tests.helpers import make_repo, run

from syncer.config import load_config
from syncer.model import ObjectRef
from syncer.commands.onboard import infer

CONF = Path("hosts/asgard/syncer.conf")


def bare_repo(tmp_path: Path) -> Path:
    """asgard's manifests without a config."""
    repo = make_repo(tmp_path)
    (repo / CONF).unlink()
    return repo


def test_init_from_the_asgard_snapshot_rebuilds_the_hand_written_config(tmp_path: Path) -> None:
    repo = bare_repo(tmp_path)
    code, out, err = run("init", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert (code, err) == (0, "")
    made = load_config(repo / "hosts" / "asgard", "asgard")
    shipped = load_config(ROOT / "hosts" / "asgard", "asgard")
    assert made.namespace == shipped.namespace == "ai"
    assert sorted(made.candidates, key=str) == sorted(shipped.candidates, key=str)
    assert {k: v.value for k, v in made.track.items() if v.value != "report"} == {
        "ConfigMap": "writeback", "Endpoints": "stable"}
    assert made.stable_for == 600
    # What it inferred and why, one line each.
    assert "namespace ai: named by every namespaced manifest" in out
    assert ("candidates mac-ollama -> ollama-endpoint-manager/MAC_ADDRS: 192.168.68.58 192.168.68.75 are in "
            "that address list and in no other") in out
    assert "candidates m1-ollama -> ollama-endpoint-manager/M1_ADDRS: 100.127.6.20 192.168.68.89" in out
    assert "wrote hosts/asgard/syncer.conf" in out
    # The written config gives the same verdict as the hand-written one.
    _, with_made, _ = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE), "-o", "json")
    _, with_shipped, _ = run("diff", "asgard", "--repo", str(ROOT), "--live-file", str(EXAMPLE_LIVE), "-o", "json")
    assert with_made.count('"class": "pick"') == with_shipped.count('"class": "pick"') == 2


def test_never_overwrites_without_force(tmp_path: Path) -> None:
    repo = bare_repo(tmp_path)
    conf = repo / CONF
    conf.write_text("# mine\ninstallation: asgard\n")
    code, out, err = run("init", "asgard", "--repo", str(repo), "--git-only")
    assert (code, out) == (2, "")
    assert err == "syncer: error: hosts/asgard/syncer.conf exists; not overwritten (--force replaces it)\n"
    assert conf.read_text() == "# mine\ninstallation: asgard\n"
    code, out, _ = run("init", "asgard", "--repo", str(repo), "--git-only", "--force")
    assert code == 0 and "  - endpoints: mac-ollama\n" in conf.read_text()


def test_the_deprecated_file_counts_as_existing_and_force_replaces_it(tmp_path: Path) -> None:
    repo = bare_repo(tmp_path)
    legacy = repo / "hosts" / "asgard" / "syncer.yaml"
    shutil.copy(ROOT / CONF, legacy)
    code, _, err = run("init", "asgard", "--repo", str(repo), "--git-only")
    assert code == 2 and "hosts/asgard/syncer.yaml exists; not overwritten" in err
    code, out, _ = run("init", "asgard", "--repo", str(repo), "--git-only", "--force")
    assert code == 0 and not legacy.exists() and (repo / CONF).exists()
    assert "removed hosts/asgard/syncer.yaml (replaced by syncer.conf)" in out


def test_git_only_binds_from_the_committed_lists(tmp_path: Path) -> None:
    repo = bare_repo(tmp_path)
    code, out, _ = run("init", "asgard", "--repo", str(repo), "--git-only")
    assert code == 0
    assert "candidates mac-ollama -> ollama-endpoint-manager/MAC_ADDRS: 192.168.68.58 is in" in out
    assert "candidates m1-ollama -> ollama-endpoint-manager/M1_ADDRS: 100.127.6.20 is in" in out


def test_an_address_in_two_lists_is_not_bound_and_says_where(tmp_path: Path) -> None:
    repo = bare_repo(tmp_path)
    cm = repo / "hosts" / "asgard" / "ollama-endpoint-manager.yaml"
    cm.write_text(cm.read_text().replace('  PORT: "11434"', '  FALLBACK_ADDRS: "192.168.68.58"\n  PORT: "11434"'))
    code, out, _ = run("init", "asgard", "--repo", str(repo), "--git-only")
    assert code == 0
    assert ("endpoints mac-ollama: no binding -- 192.168.68.58 is in several address lists "
            "(ollama-endpoint-manager/FALLBACK_ADDRS, ollama-endpoint-manager/MAC_ADDRS); add the right one by hand") in out
    cfg = load_config(repo / "hosts" / "asgard", "asgard")
    assert [c.endpoints for c in cfg.candidates] == ["m1-ollama"]


def test_no_list_holds_the_address(tmp_path: Path) -> None:
    repo = bare_repo(tmp_path)
    ep = repo / "hosts" / "asgard" / "ollama-backends.yaml"
    ep.write_text(ep.read_text().replace("192.168.68.58", "10.9.9.9"))
    code, out, _ = run("init", "asgard", "--repo", str(repo), "--git-only")
    assert code == 0 and "endpoints mac-ollama: no binding -- no ConfigMap address list holds 10.9.9.9" in out


def test_endpoint_slices_bind_and_are_tracked_stable() -> None:
    ns = "ai"
    cm = ObjectRef("v1", "ConfigMap", ns, "router")
    svc = ObjectRef("v1", "Service", ns, "gpu")
    git_objs = {
        cm: {"kind": "ConfigMap", "data": {"GPU_HOSTS": "10.0.0.5:11434, 10.0.0.6:11434", "MODE": "fast"}},
        svc: {"kind": "Service", "spec": {}},
    }
    sl = ObjectRef("discovery.k8s.io/v1", "EndpointSlice", ns, "gpu-abcde")
    live = {**git_objs, sl: {"kind": "EndpointSlice", "metadata": {"labels": {"kubernetes.io/service-name": "gpu"}},
                             "endpoints": [{"addresses": ["10.0.0.6"]}]}}
    git_objs[sl] = live[sl]  # declared in git: syncer reads only such slices (a live-only one: see below)
    inf = infer("x", git_objs, live)
    assert inf.track["EndpointSlice"] == "stable" and inf.track["ConfigMap"] == "writeback"
    assert [(b.endpoints, b.config_map, b.key) for b in inf.candidates] == [("gpu", "router", "GPU_HOSTS")]
    assert any(re.search(r"candidates gpu -> router/GPU_HOSTS: 10\.0\.0\.6 is in", r) for r in inf.reasons)


def test_init_refuses_unknown_installation(tmp_path: Path) -> None:
    repo = bare_repo(tmp_path)
    code, out, err = run("init", "midgard", "--repo", str(repo), "--git-only")
    assert code == 2 and err.startswith("syncer: error: unknown installation 'midgard'") and err.count("\n") == 1


def test_no_cluster_says_how_to_do_without(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = bare_repo(tmp_path)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing.kubeconfig"))
    code, out, err = run("init", "asgard", "--repo", str(repo))
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.endswith("(no cluster at hand? --live-file FILE or --git-only)\n")
    assert not (repo / CONF).exists()


@pytest.mark.parametrize("installation", sorted(p.name for p in (ROOT / "hosts").iterdir() if p.is_dir()))
def test_every_bundled_installation_gets_its_hand_written_bindings_back(installation: str, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "hosts" / installation, repo / "hosts" / installation)
    (repo / "hosts" / installation / "syncer.conf").unlink()
    live = ROOT / "examples" / f"{installation}-live.yaml"
    code, out, err = run("init", installation, "--repo", str(repo),
                         *(["--live-file", str(live)] if live.exists() else ["--git-only"]))
    assert (code, err) == (0, ""), err
    made = load_config(repo / "hosts" / installation, installation)
    shipped = load_config(ROOT / "hosts" / installation, installation)
    assert made.namespace == shipped.namespace
    assert sorted(made.candidates, key=str) == sorted(shipped.candidates, key=str), out
    writers = {k for k, v in shipped.track.items() if v.value in ("writeback", "stable")}
    assert {k for k, v in made.track.items() if v.value in ("writeback", "stable")} == writers


def test_a_service_whose_slices_git_does_not_declare_is_not_bound_silently(tmp_path: Path) -> None:
    """Was: ``candidates mac-ollama -> slice-endpoint-manager/MAC_ADDRS`` from live-only slices,
    although syncer reads only the slices git declares: the binding watched nothing."""
    repo = tmp_path / "repo"
    host = repo / "hosts" / "vanaheim"
    shutil.copytree(ROOT / "hosts" / "vanaheim", host)
    (host / "syncer.conf").unlink()
    (host / "ollama-backends-ipv6.yaml").unlink()  # mac-ollama-ipv6 alone
    backends = host / "ollama-backends.yaml"
    docs = backends.read_text().split("\n---\n")
    kept = [d for d in docs if "kind: EndpointSlice" not in d]
    assert len(docs) - len(kept) == 2  # mac-ollama-ipv4, m1-ollama-fqdn
    backends.write_text("\n---\n".join(kept))
    code, out, err = run("init", "vanaheim", "--repo", str(repo), "--live-file",
                         str(ROOT / "examples" / "vanaheim-live.yaml"))
    assert (code, err) == (0, ""), err
    assert "candidates mac-ollama ->" not in out and "candidates m1-ollama ->" not in out, out
    assert re.search(r"endpoints mac-ollama: no binding -- its EndpointSlices mac-ollama-ipv4, mac-ollama-ipv6 "
                     r"are live only.*declare them in git.*slice-endpoint-manager/MAC_ADDRS", out), out
    assert re.search(r"endpoints m1-ollama: no binding -- its EndpointSlice m1-ollama-fqdn is live only", out), out
    assert load_config(host, "vanaheim").candidates == ()
    # declared again in git: bound as before (one slice of two declared is enough; the other is named)
    shutil.copy(ROOT / "hosts" / "vanaheim" / "ollama-backends-ipv6.yaml", host)
    code, out, err = run("init", "vanaheim", "--repo", str(repo), "--force", "--live-file",
                         str(ROOT / "examples" / "vanaheim-live.yaml"))
    assert (code, err) == (0, ""), err
    assert "candidates mac-ollama -> slice-endpoint-manager/MAC_ADDRS" in out, out
    assert re.search(r"mac-ollama: its EndpointSlice mac-ollama-ipv4 is live only: syncer does not read it "
                     r"until git declares it", out), out
    assert [c.endpoints for c in load_config(host, "vanaheim").candidates] == ["mac-ollama"]


def test_namespace_is_kubectls_not_the_one_a_few_manifests_name() -> None:
    from syncer.commands.onboard import infer_namespace

    unnamed = [ObjectRef("v1", "ConfigMap", "", f"cm{i}") for i in range(6)]
    named = [ObjectRef("v1", "ConfigMap", "kube-system", f"sys{i}") for i in range(2)]
    role = [ObjectRef("rbac.authorization.k8s.io/v1", "ClusterRole", "", "r")]
    declared = unnamed + named + role
    ns, why = infer_namespace(declared, None, context=("apps", "the namespace of kubeconfig context prod"))
    assert (ns, why) == ("apps", "namespace apps: the namespace of kubeconfig context prod, as kubectl apply would "
                                 "use (6 manifests name none; others name their own: kube-system (2))")
    assert infer_namespace(declared, None)[0] == "default"
    snapshot = [ObjectRef("v1", "ConfigMap", "web", f"cm{i}") for i in range(4)] + named
    assert infer_namespace(declared, None, snapshot, ("apps", "x"))[0] == "web"
    assert infer_namespace(declared, "ops", snapshot, ("apps", "x")) == ("ops", "namespace ops: given with -n")
    # Every namespaced manifest names the same one: that one (a ClusterRole names none, rightly).
    assert infer_namespace(named + role, None, context=("apps", "x"))[0] == "kube-system"


def test_context_namespace_reads_the_kubeconfig_as_kubectl(tmp_path: Path) -> None:
    from syncer.kube import context_namespace
    from syncer.sources.manifests import parse_documents

    config = tmp_path / "config"
    config.write_text("apiVersion: v1\nkind: Config\ncurrent-context: a\ncontexts:\n"
                      "- name: a\n  context: {cluster: c, user: u, namespace: team-a}\n"
                      "- name: b\n  context: {cluster: c, user: u}\n")
    assert context_namespace(str(config), None, read_yaml=parse_documents) == (
        "team-a", "the namespace of kubeconfig context a")
    assert context_namespace(str(config), "b", read_yaml=parse_documents) == (
        "default", "kubeconfig context b names no namespace: kubectl's default")
    assert context_namespace(str(tmp_path / "missing"), None, read_yaml=parse_documents) is None
