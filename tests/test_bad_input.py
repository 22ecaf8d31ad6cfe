"""Bad input: one clear line naming the culprit, exit 2, and nothing written."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import EXAMPLE_LIVE, NOW, ROOT, git
from tests.helpers import make_repo, run

from syncer.cli import main


def test_malformed_yaml_names_file_and_line_and_the_rest_still_diffs(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "hosts" / "asgard" / "broken.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: [\n")
    code, out, _ = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert code == 2
    errors = [ln for ln in out.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: hosts/asgard/broken.yaml:4:")
    assert "data.MAC_ADDRS" in out  # the other files were compared


def test_unknown_key_in_syncer_yaml(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    cfg = repo / "hosts" / "asgard" / "syncer.conf"
    cfg.write_text(cfg.read_text().replace("stableFor:", "stablefor:"))
    code, out, err = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert (code, out) == (2, "")
    assert err == ("syncer: error: hosts/asgard/syncer.conf: unknown key 'stablefor' (allowed: appliers, candidates, "
                   "ignore, installation, namespace, secretKeys, stableFor, track, untracked)\n")


def test_unknown_installation(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    code, _, err = run("diff", "midgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("syncer: error: unknown installation 'midgard'") and "(known: asgard)" in err


def test_path_traversal_installation_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    code, _, err = run("diff", "../..", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert code == 2 and "not a valid name" in err


def test_duplicate_object_names_both_files(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    shutil.copy(repo / "hosts" / "asgard" / "ollama-backends.yaml", repo / "hosts" / "asgard" / "zz-copy.yaml")
    code, out, _ = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert code == 2
    assert ("error: Service/ai/mac-ollama is declared twice: in hosts/asgard/ollama-backends.yaml and in "
            "hosts/asgard/zz-copy.yaml") in out


def test_document_without_kind(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "hosts" / "asgard" / "nokind.yaml").write_text("apiVersion: v1\nmetadata: {name: x}\n")
    code, out, _ = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert code == 2 and "error: hosts/asgard/nokind.yaml (document 1): document has no kind" in out


def test_non_utf8_file(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "hosts" / "asgard" / "latin1.yaml").write_bytes(b"apiVersion: v1\nkind: ConfigMap\n# caf\xe9\n")
    code, out, _ = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert code == 2 and "error: hosts/asgard/latin1.yaml: not UTF-8 text" in out


def test_symlink_out_of_the_repo_is_not_read(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    outside = tmp_path / "outside.yaml"
    outside.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stolen}\n")
    (repo / "hosts" / "asgard" / "link.yaml").symlink_to(outside)
    code, out, _ = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert code == 2 and "link.yaml: symlink points outside the repository" in out


def test_secret_in_hosts_is_never_written_back(asgard_repo: Path, tmp_path: Path) -> None:
    secret = ("apiVersion: v1\nkind: Secret\nmetadata:\n  name: ollama-auth\n  namespace: ai\n"
              "stringData:\n  TOKEN: old-value\n")
    (asgard_repo / "hosts" / "asgard" / "secret.yaml").write_text(secret)
    cfg = asgard_repo / "hosts" / "asgard" / "syncer.conf"
    cfg.write_text(cfg.read_text().replace("  ConfigMap: writeback", "  ConfigMap: writeback\n  Secret: writeback"))
    git(asgard_repo, "add", ".")
    git(asgard_repo, "commit", "-qm", "add secret")
    git(asgard_repo, "push", "-q", "origin", "main")
    live = tmp_path / "live.yaml"
    live.write_text(EXAMPLE_LIVE.read_text() + (
        "- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: ollama-auth\n    namespace: ai\n"
        "  stringData:\n    TOKEN: new-live-value\n"))
    code, out, _ = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(live), "--mode", "commit")
    assert code == 0, out
    assert "new-live-value" not in out
    git(asgard_repo, "fetch", "-q", "origin")
    assert git(asgard_repo, "show", "origin/main:hosts/asgard/secret.yaml") + "\n" == secret
    code, out, _ = run("diff", "asgard", "--repo", str(asgard_repo), "--live-file", str(live), "-o", "json")
    assert "new-live-value" not in out and "old-value" not in out and '"action": "report"' in out


BOMB = """apiVersion: v1
kind: ConfigMap
metadata: {name: bomb, namespace: ai}
data:
  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
  d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
  e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
  f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
  g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
  h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
"""


def test_alias_bomb_in_git_and_live_is_bounded(tmp_path: Path) -> None:
    import resource
    import time

    repo = make_repo(tmp_path)
    (repo / "hosts" / "asgard" / "bomb.yaml").write_text(BOMB)
    live = tmp_path / "live.yaml"
    live.write_text(EXAMPLE_LIVE.read_text() + "---\n" + BOMB)
    start = time.monotonic()
    code, out, _ = run("diff", "asgard", "--repo", str(repo), "--live-file", str(live))
    assert time.monotonic() - start < 20
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 1024 * 1024  # KiB: under 1 GiB
    assert code == 2 and "error: ConfigMap/ai/bomb: live object: more than 500000 values (an alias bomb?)" in out
    assert "data.MAC_ADDRS" in out  # the rest still compared


def test_deep_nesting_is_refused_quickly(tmp_path: Path) -> None:
    import time

    repo = make_repo(tmp_path)
    deep = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep}\ndata:\n  x: " + "[" * 20000 + "]" * 20000 + "\n"
    (repo / "hosts" / "asgard" / "deep.yaml").write_text(deep)
    start = time.monotonic()
    code, out, _ = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert time.monotonic() - start < 10
    assert code == 2 and "error: hosts/asgard/deep.yaml:5: YAML nested deeper than 128 levels" in out


def test_huge_configmap_value_syncs(asgard_repo: Path, tmp_path: Path) -> None:
    big = "x" * (1024 * 1024 - 200)
    cm = asgard_repo / "hosts" / "asgard" / "big.yaml"
    cm.write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n  namespace: ai\ndata:\n  BLOB: {big}\n")
    git(asgard_repo, "add", ".")
    git(asgard_repo, "commit", "-qm", "big")
    git(asgard_repo, "push", "-q", "origin", "main")
    live = tmp_path / "live.yaml"
    live.write_text(EXAMPLE_LIVE.read_text() + (
        "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: big\n    namespace: ai\n"
        f"  data:\n    BLOB: y{big[1:]}\n"))
    code, out, _ = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(live), "--mode", "pr")
    assert code == 0, out[-2000:]
    git(asgard_repo, "fetch", "-q", "origin")
    changed = git(asgard_repo, "diff", "--stat", "origin/main", "origin/syncer/asgard", "--", "hosts/asgard/big.yaml")
    assert "1 insertion(+), 1 deletion(-)" in changed


def test_live_object_of_unexpected_shape(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    live = tmp_path / "live.yaml"
    text = EXAMPLE_LIVE.read_text().replace("  subsets:\n  - addresses:\n    - ip: 192.168.68.75\n    ports:",
                                            "  subsets: surprise\n  xports:", 1)
    assert "surprise" in text
    live.write_text(text)
    code, out, _ = run("diff", "asgard", "--repo", str(repo), "--live-file", str(live))
    assert code == 1
    line = [ln for ln in out.splitlines() if ln.startswith("  subsets:")][0]
    assert "cleared" in line  # a subsets value that is not a list holds no ready address


def test_live_metadata_of_the_wrong_type_costs_only_that_object() -> None:
    from syncer.config import load_config
    from syncer.gather.collect import detect_live
    from syncer.gather.live import SnapshotSource
    from syncer.sources.manifests import load_manifests
    from syncer.model import ObjectRef

    live = SnapshotSource([EXAMPLE_LIVE], "ai")
    live.objects[ObjectRef("v1", "Endpoints", "ai", "mac-ollama")]["metadata"]["annotations"] = ["odd"]
    config = load_config(ROOT / "hosts" / "asgard", "asgard", "x")
    result = detect_live(config, load_manifests(ROOT, "asgard", "ai"), live, NOW)
    assert [e.message for e in result.errors] == [
        "Endpoints/ai/mac-ollama: live object has an unexpected shape: metadata.annotations is a list, not a mapping"]
    assert {d.ref.name for d in result.drifts} == {"ollama-endpoint-manager", "m1-ollama"}


def test_snapshot_object_without_a_name_is_one_clear_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    live = tmp_path / "live.yaml"
    live.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: [odd]\n")
    code, out, err = run("diff", "asgard", "--repo", str(repo), "--live-file", str(live))
    assert (code, out) == (2, "")
    assert err == f"syncer: error: {live} (document 1): ConfigMap has no metadata.name\n"
