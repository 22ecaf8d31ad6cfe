"""Where the config lives: ``hosts/<inst>/syncer.conf`` (no applier reads it), the old
``hosts/<inst>/syncer.yaml`` still read with a one-line deprecation warning, both at once an error,
and ``-n`` overriding the config's namespace as kubectl's ``-n`` does.

The real ``kubectl apply -f hosts/<inst>/`` proof is in tests/realapi/test_realapi_kubectl.py.
"""

from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path

import pytest
from tests.conftest import EXAMPLE_LIVE, ROOT
from tests.helpers import make_repo, run

from syncer import config as config_mod
from syncer.config import CONFIG_NAME, LEGACY_CONFIG_NAME, load_config
from syncer.errors import ConfigError
from syncer.sources.manifests import load_manifests, manifest_files


@pytest.fixture(autouse=True)
def _fresh_warnings() -> None:
    config_mod._warned.clear()  # the warning is once per process; each test starts afresh


def test_asgard_config_lives_where_no_applier_reads() -> None:
    host = ROOT / "hosts" / "asgard"
    assert (host / CONFIG_NAME).is_file() and not (host / LEGACY_CONFIG_NAME).exists()
    # kubectl, Argo CD and Flux read only these extensions in a directory.
    assert Path(CONFIG_NAME).suffix not in (".yaml", ".yml", ".json", ".jsonnet")
    cfg = load_config(host, "asgard")
    assert cfg.source == "hosts/asgard/syncer.conf" and cfg.namespace == "ai" and len(cfg.candidates) == 2


def test_every_installation_uses_the_new_place() -> None:
    for host in sorted(p for p in (ROOT / "hosts").iterdir() if p.is_dir()):
        assert not (host / LEGACY_CONFIG_NAME).exists(), f"{host}: move syncer.yaml to {CONFIG_NAME}"


def test_old_location_still_read_with_one_line_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    repo = make_repo(tmp_path)
    host = repo / "hosts" / "asgard"
    _, new_out, _ = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    (host / CONFIG_NAME).rename(host / LEGACY_CONFIG_NAME)
    caplog.set_level(logging.WARNING, logger="syncer.config")
    code, out, err = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert code == 1 and out == new_out  # same config, same verdict
    warnings = [r.getMessage() for r in caplog.records if r.name == "syncer.config"]
    assert warnings == ["hosts/asgard/syncer.yaml: deprecated location (kubectl apply -f hosts/asgard/ fails on it);"
                        " git mv it to hosts/asgard/syncer.conf"]
    # The old file is a config, not a manifest.
    assert host / LEGACY_CONFIG_NAME not in manifest_files(repo, "asgard")
    # Once per process: a sidecar re-reading it every pass does not repeat itself.
    run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert len([r for r in caplog.records if r.name == "syncer.config"]) == 1


def test_both_locations_is_an_error_naming_both(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    host = repo / "hosts" / "asgard"
    shutil.copy(host / CONFIG_NAME, host / LEGACY_CONFIG_NAME)
    code, out, err = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert (code, out) == (2, "")
    assert err == ("syncer: error: hosts/asgard/: both syncer.conf and syncer.yaml exist; keep only syncer.conf\n")


def test_no_config_means_defaults(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "hosts" / "asgard" / CONFIG_NAME).unlink()
    with pytest.raises(ConfigError):  # sanity: a broken one is not silently skipped
        (repo / "hosts" / "asgard" / CONFIG_NAME).write_text("stablefor: 1m\n")
        load_config(repo / "hosts" / "asgard", "asgard")
    (repo / "hosts" / "asgard" / CONFIG_NAME).unlink()
    cfg = load_config(repo / "hosts" / "asgard", "asgard")
    assert (cfg.namespace, cfg.candidates, cfg.track) == ("default", (), {})


def test_namespace_flag_is_the_default_for_manifests_without_one(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    host = repo / "hosts" / "asgard"
    for f in host.glob("*.yaml"):
        f.write_text(re.sub(r"(?m)^  namespace: ai\n", "", f.read_text()))
    cfg = host / CONFIG_NAME
    cfg.write_text(cfg.read_text().replace("namespace: ai", "namespace: elsewhere"))
    assert all(r.namespace == "elsewhere" for r in load_manifests(repo, "asgard", "elsewhere").objects)
    # Without -n nothing matches the snapshot (all in ai): every object is missing live.
    code, out, _ = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert code == 1 and "ConfigMap/elsewhere/ollama-endpoint-manager" in out and "error" not in out
    code, out, err = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE), "-n", "ai")
    assert (code, err) == (1, "")
    assert "elsewhere" not in out and "Endpoints/ai/mac-ollama" in out and "4 difference(s)" in out
    # The candidate bindings follow -n too (mac-ollama's pick is judged against MAC_ADDRS).
    assert "pick, cluster moved" in out
