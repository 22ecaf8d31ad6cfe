"""The sidecar does not re-read what did not change: files by (size, mtime, ctime, inode),
comparisons by the identity of the (read-only) git and live objects."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.conftest import EXAMPLE_LIVE, NOW, ROOT

from syncer.sources import manifests
from syncer.cache import Caches
from syncer.config import load_config
from syncer.gather.collect import detect_live
from syncer.gather.live import SnapshotSource
from syncer.sources.manifests import host_dir, load_manifests
from syncer.sidecar.livecache import LiveCache


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "hosts" / "asgard", tmp_path / "hosts" / "asgard")
    return tmp_path


def test_unchanged_files_are_not_parsed_again(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manifests, "RACY_NS", 0)
    caches = Caches()

    def parsed() -> int:  # files read and parsed: the misses of the per-file map
        return caches.counters()["files"][1]

    first = load_manifests(repo, "asgard", "ai", caches=caches)
    n = parsed()
    assert n == 2
    second = load_manifests(repo, "asgard", "ai", caches=caches)
    assert parsed() == n and second.objects == first.objects  # nothing parsed the second time
    assert second is first  # nor indexed again: the sidecar's in-sync skip keys on this object
    assert caches.counters()["indexes"][0] == 1
    [changed] = [p for p in (repo / "hosts" / "asgard").glob("*.yaml") if "ollama-endpoint-manager" in p.read_text()
                 and "kind: ConfigMap" in p.read_text()][:1]
    changed.write_text(changed.read_text().replace("INTERVAL_SECONDS", "INTERVAL_SECS"))
    third = load_manifests(repo, "asgard", "ai", caches=caches)
    assert parsed() == n + 1  # only the changed file, again
    assert any(o.file == changed.relative_to(repo).as_posix() and "INTERVAL_SECS" in str(o.data)
               for o in third.objects.values())
    assert third.objects != first.objects and third is not first
    load_manifests(repo, "asgard", "ai", caches=caches)
    assert parsed() == n + 1
    # A file written within the racy window (its timestamps could be shared with a later
    # write of the same size) is parsed again at every load until it is older.
    monkeypatch.setattr(manifests, "RACY_NS", 10**12)
    changed.write_text(changed.read_text().replace("INTERVAL_SECS", "INTERVAL_SECZ"))
    for _ in range(2):
        fourth = load_manifests(repo, "asgard", "ai", caches=caches)
    assert parsed() == n + 3 and fourth.objects != third.objects
    changed.unlink()
    after = load_manifests(repo, "asgard", "ai", caches=caches)
    assert all(o.file != changed.relative_to(repo).as_posix() for o in after.objects.values())
    assert len(caches.files) == n - 1  # the deleted file is forgotten


def test_without_caches_nothing_is_remembered(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manifests, "RACY_NS", 0)
    first = load_manifests(repo, "asgard", "ai")
    again = load_manifests(repo, "asgard", "ai")
    assert again.objects == first.objects and again is not first


def test_comparisons_are_remembered_only_for_a_source_of_unmodified_objects(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manifests, "RACY_NS", 0)
    config = load_config(host_dir(repo, "asgard"), "asgard", "hosts/asgard/syncer.conf")
    snapshot = SnapshotSource([EXAMPLE_LIVE], config.namespace)
    cache = LiveCache()
    for ref, obj in snapshot.objects.items():
        cache.put(ref, obj)
    caches = Caches()
    found = load_manifests(repo, "asgard", config.namespace, caches=caches)

    def compared() -> tuple[int, int]:  # (hits, misses) of the remembered comparisons
        hits, misses, _ = caches.counters()["compared"]
        return hits, misses

    a = detect_live(config, found, cache, NOW, caches=caches)
    tracked = len(a.checked)
    assert compared() == (0, tracked)
    b = detect_live(config, load_manifests(repo, "asgard", config.namespace, caches=caches), cache, NOW, caches=caches)
    assert b == a and compared() == (tracked, tracked)  # nothing compared again
    # One live change: one comparison again.
    ref = next(r for r in a.checked if r.kind == "ConfigMap")
    changed = dict(snapshot.objects[ref], data={**snapshot.objects[ref].get("data", {}), "NEW": "1"})
    cache.put(ref, changed)
    _, misses = compared()
    c = detect_live(config, load_manifests(repo, "asgard", config.namespace, caches=caches), cache, NOW, caches=caches)
    assert compared()[1] - misses == 1 and c != a
    # A snapshot (objects a test may modify in place) is never remembered.
    before = compared()
    detect_live(config, found, snapshot, NOW, caches=caches)
    assert compared() == before
