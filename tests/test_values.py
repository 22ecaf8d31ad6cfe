from __future__ import annotations

from syncer.values import address_list, describe_change, kv_lines


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
