"""syncer.cache: the one LRU class and the per-installation Caches object."""

from __future__ import annotations

from typing import Any

from syncer.cache import ByIdentity, Caches, Lru, by_identity, small_size, text_key


def test_least_recently_used_goes_first_and_counters_count() -> None:
    lru: Lru[str, int] = Lru(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1  # a is now the most recent
    lru.put("c", 3)
    assert lru.get("b") is None
    assert (lru.get("a"), lru.get("c")) == (1, 3)
    assert (lru.hits, lru.misses, len(lru)) == (3, 1, 2)


def test_a_byte_bound_drops_old_entries_and_refuses_a_value_larger_than_the_cache() -> None:
    lru: Lru[str, str] = Lru(100, max_bytes=300, size_of=lambda k, v: len(v))
    lru.put("a", "x" * 200)
    lru.put("b", "y" * 200)
    assert lru.get("a") is None and lru.get("b") == "y" * 200
    lru.put("huge", "z" * 301)
    assert lru.get("huge") is None and lru.held_bytes == 200


def test_get_or_computes_once_and_remembers_a_none_value() -> None:
    calls: list[int] = []
    lru: Lru[str, int | None] = Lru(4)

    def compute() -> None:
        calls.append(1)

    assert lru.get_or("k", compute) is None
    assert lru.get_or("k", compute) is None
    assert calls == [1]


def test_by_identity_misses_for_an_equal_but_different_object() -> None:
    lru: Lru[Any, Any] = Lru(8)
    first, twin = {"a": 1}, {"a": 1}
    calls: list[dict[str, int]] = []

    def compute(obj: dict[str, int]) -> int:
        calls.append(obj)
        return len(calls)

    assert by_identity(lru, (first,), "x", lambda: compute(first)) == 1
    assert by_identity(lru, (first,), "x", lambda: compute(first)) == 1
    assert by_identity(lru, (twin,), "x", lambda: compute(twin)) == 2
    assert calls == [first, twin]


def test_caches_counters_walk_every_map_and_clear_moves_generations() -> None:
    caches = Caches()
    caches.compared.put("k", 1)
    caches.compared.get("k")
    assert caches.counters()["compared"] == (1, 0, 1)
    generation = caches.compared.generation
    caches.clear()
    assert len(caches.compared) == 0 and caches.compared.generation == generation + 1


def test_a_long_text_is_keyed_by_its_digest() -> None:
    assert text_key("short") == "short"
    key = text_key("v" * 10_000)
    assert isinstance(key, bytes) and len(key) == 32
    assert small_size(("k", key), None) < 300


def test_get_fresh_counts_a_stale_entry_as_a_miss_and_drops_it() -> None:
    lru: Lru[str, tuple[int, str]] = Lru(4, max_bytes=100, size_of=lambda k, v: len(v[1]))
    lru.put("file", (1, "parsed at stamp 1"))
    assert lru.get_fresh("file", lambda v: v[0] == 1) == (1, "parsed at stamp 1")
    assert lru.get_fresh("file", lambda v: v[0] == 2) is None  # the file changed
    assert (lru.hits, lru.misses, len(lru), lru.held_bytes) == (1, 1, 0, 0)


def test_discard_where_forgets_the_keys_it_is_told() -> None:
    lru: Lru[tuple[str, str], int] = Lru(8)
    for path in ("/r/hosts/a/x.yaml", "/r/hosts/a/y.yaml", "/r/hosts/b/z.yaml"):
        lru.put((path, "ns"), 1)
    lru.discard_where(lambda key: key[0].startswith("/r/hosts/a/") and key[0] != "/r/hosts/a/x.yaml")
    assert [lru.get((p, "ns")) for p in ("/r/hosts/a/x.yaml", "/r/hosts/a/y.yaml", "/r/hosts/b/z.yaml")] == [1, None, 1]
    assert len(lru) == 2


def test_every_map_of_caches_is_counted() -> None:
    names = set(Caches().counters())
    assert {"files", "indexes", "renders", "planned", "parsed", "versions", "logs", "declared", "tracked",
            "normalized", "judged", "notes", "refusals_said", "configs"} <= names


def test_by_identity_remembers_only_what_keep_keeps() -> None:
    lru: ByIdentity[list[str]] = Lru(8)
    same, other = {"a": 1}, {"a": 2}
    calls: list[object] = []

    def diffs(obj: dict[str, int], found: list[str]) -> list[str]:
        calls.append(obj)
        return found

    assert by_identity(lru, (same,), "x", lambda: diffs(same, []), keep=bool) == []
    assert by_identity(lru, (same,), "x", lambda: diffs(same, []), keep=bool) == []
    assert len(lru) == 0 and calls == [same, same]  # nothing found: nothing held (the engine knows it in sync)
    assert by_identity(lru, (other,), "x", lambda: diffs(other, ["data.A"]), keep=bool) == ["data.A"]
    assert by_identity(lru, (other,), "x", lambda: diffs(other, ["never"]), keep=bool) == ["data.A"]
    assert len(lru) == 1 and calls == [same, same, other]
