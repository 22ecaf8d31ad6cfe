from __future__ import annotations

from syncer.detect.values import address_list, describe_change, kv_lines


def test_address_lists() -> None:
    assert address_list("192.168.68.75 100.115.97.90") == ["192.168.68.75", "100.115.97.90"]
    assert address_list("host.lan:11434, [fd00::1]:80") == ["host.lan:11434", "[fd00::1]:80"]
    assert address_list("hello world") is None
    assert describe_change("192.168.68.58 100.115.97.90", "192.168.68.75 100.115.97.90") == "+192.168.68.75 -192.168.68.58"
    assert describe_change("a.lan b.lan", "b.lan a.lan") == "reordered: a.lan b.lan → b.lan a.lan"


def test_kv_lines() -> None:
    assert kv_lines("# c\nA=1\nexport B = 2\n") == {"A": "1", "B": "2"}
    assert kv_lines("not kv") is None
    assert describe_change("A=1\nB=2", "A=1\nB=3\nC=4") == "+C=4, B: 2 → 3"


def test_plain_values() -> None:
    assert describe_change("15", "30") == "15 → 30"
    assert describe_change(None, "x") == "added: x"
    assert describe_change("x", None) == "removed (was x)"


def test_a_fully_qualified_name_with_its_final_dot_is_an_address() -> None:
    """Was: ``m1-laptop.tail4a2b.ts.net.`` made the whole value "not an address list"."""
    assert address_list("m1-laptop.tail4a2b.ts.net. 100.127.6.20") == ["m1-laptop.tail4a2b.ts.net.", "100.127.6.20"]
    assert address_list("m1-laptop.tail4a2b.ts.net.:11434") == ["m1-laptop.tail4a2b.ts.net.:11434"]
    assert describe_change("a.example.", "a.example. b.example.") == "+b.example."
    for not_a_list in ("m1-laptop..ts.net", "end.with.two..", ".leading.dot", "word."):
        assert address_list(not_a_list) is None, not_a_list
