"""Unit and property tests for syncer.yamledit: exact text before and after every edit."""

from __future__ import annotations

import copy
import difflib
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from syncer.errors import ConfigError
from syncer.yamledit import YamlEditError, YamlFile
from syncer.yamledit import block_body, double_quoted, plain_ok


def safe_load_all(text: str) -> list[Any]:
    return list(YAML(typ="safe", pure=True).load_all(text))


def edit(text: str, *ops: tuple[Any, ...]) -> str:
    """Apply ``(method, *args)`` edits in order and return the rendered text."""
    f = YamlFile.parse(text, "t.yaml")
    for name, *args in ops:
        getattr(f, name)(*args)
    out = f.render()
    assert YamlFile.parse(out).documents == f.documents == safe_load_all(out)
    return out


def changed(before: str, after: str) -> list[tuple[str, list[str], list[str]]]:
    """The differing line groups: (tag, old lines, new lines)."""
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    return [(tag, a[i1:i2], b[j1:j2]) for tag, i1, i2, j1, j2 in ops if tag != "equal"]


MANIFEST = """\
# Deployed by hand; syncer keeps it in step.
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: "web"   # quoted on purpose
  labels: {app: web, tier: 'front'}
spec:
  replicas: 3
  template:
    spec:
      containers:
      - name: web
        image: nginx:1.25
        args: ["--port", "8080"]
        env:
          - name: MODE
            value: 'fast'
---
apiVersion: v1
kind: ConfigMap
data:
  config.yaml: |
    listen: 8080
    workers: 4

  motd: >-
    Welcome to
    the server
  empty:
"""


# -- parsing -----------------------------------------------------------------------------


def test_documents_match_safe_loader() -> None:
    texts = [
        MANIFEST,
        "",
        "# only a comment\n",
        "---\n# nothing here\n---\na: 1\n",
        "a: &x {b: 1}\nc: *x\nd:\n  <<: *x\n  e: 2\n",
        "when: 2024-01-02\nyes: no\non: off\noctal: 0o17\nf: 1.5e3\nn: ~\n",
        "- a\n- b: [1, 2.0, true, null]\n...\n---\nlast\n",
        "k: !!str 12\nb: !!binary aGVsbG8=\n",
    ]
    for text in texts:
        assert YamlFile.parse(text).documents == safe_load_all(text)


def test_parse_error_names_file_line_and_column() -> None:
    with pytest.raises(YamlEditError) as info:
        YamlFile.parse("a: 1\nb: [1, 2\nc: 3\n", "deploy.yaml")
    message = str(info.value)
    assert message.startswith("deploy.yaml:3:") and "\n" not in message
    assert isinstance(info.value, ConfigError)


def test_render_without_edits_returns_the_original_object() -> None:
    f = YamlFile.parse(MANIFEST, "m.yaml")
    assert f.render() is MANIFEST and not f.changed
    f.set_value(0, ("spec", "replicas"), 3)  # same value: nothing to do
    assert f.render() is MANIFEST and not f.changed
    assert f.name == "m.yaml"


def test_get_returns_copies() -> None:
    f = YamlFile.parse(MANIFEST)
    labels = f.get(0, ("metadata", "labels"))
    assert labels == {"app": "web", "tier": "front"}
    labels["x"] = 1
    assert f.get(0, ("metadata", "labels")) == {"app": "web", "tier": "front"}
    assert f.get(0, ("spec", "template", "spec", "containers", 0, "args", 1)) == "8080"
    with pytest.raises(YamlEditError, match="spec.nope"):
        f.get(0, ("spec", "nope"))


# -- scalars keep their style ------------------------------------------------------------


def test_plain_stays_plain_and_only_its_line_changes() -> None:
    out = edit(MANIFEST, ("set_value", 0, ("spec", "template", "spec", "containers", 0, "image"), "nginx:1.27"))
    assert changed(MANIFEST, out) == [
        ("replace", ["        image: nginx:1.25\n"], ["        image: nginx:1.27\n"])
    ]


@pytest.mark.parametrize(
    "value, text",
    [
        ("true", '"true"'), ("yes", '"yes"'), ("y", '"y"'), ("1.0", '"1.0"'), ("0777", '"0777"'),
        ("1:20", '"1:20"'), ("", '""'), ("a: b", '"a: b"'), ("*star", '"*star"'), ("#x", '"#x"'),
        ("a #b", '"a #b"'), ("- x", '"- x"'), ("null", '"null"'), ("2024-01-02", '"2024-01-02"'),
        (" pad", '" pad"'), ("tab\there", '"tab\\there"'), ("---", '"---"'), ("ends:", '"ends:"'),
        ("it's", "it's"), ("a:b", "a:b"), ("-x", "-x"), ("ünïcode", "ünïcode"), ("v1.2.3", "v1.2.3"),
    ],
)
def test_plain_is_quoted_only_when_it_would_be_misread(value: str, text: str) -> None:
    out = edit("a: old\nb: 2\n", ("set_value", 0, ("a",), value))
    assert out == f"a: {text}\nb: 2\n"


def test_quotes_are_kept() -> None:
    text = "a: \"x\"\nb: 'y'\nc: 'z'\n"
    out = edit(text, ("set_value", 0, ("a",), "new"), ("set_value", 0, ("b",), "it's"),
               ("set_value", 0, ("c",), "tab\there"))
    assert out == "a: \"new\"\nb: 'it''s'\nc: \"tab\\there\"\n"


def test_non_strings_render_as_yaml_plain() -> None:
    text = "a: x\nb: x\nc: x\nd: x\ne: x\nf: '8080'\ng: x\n"
    out = edit(text, ("set_value", 0, ("a",), True), ("set_value", 0, ("b",), None), ("set_value", 0, ("c",), 1.5),
               ("set_value", 0, ("d",), -7), ("set_value", 0, ("e",), 1e20), ("set_value", 0, ("f",), 9090),
               ("set_value", 0, ("g",), float("-inf")))
    assert out == "a: true\nb: null\nc: 1.5\nd: -7\ne: 1.0e+20\nf: 9090\ng: -.inf\n"
    nan = YamlFile.parse("a: 1\n")
    nan.set_value(0, ("a",), float("nan"))
    assert nan.render() == "a: .nan\n" and math.isnan(nan.documents[0]["a"])


def test_trailing_comment_and_anchor_are_kept() -> None:
    text = "a: &port 80  # the port\nb: x # note\n"
    out = edit(text, ("set_value", 0, ("a",), 443), ("set_value", 0, ("b",), "z"))
    assert out == "a: &port 443  # the port\nb: z # note\n"


def test_quoted_key_names_and_int_keys() -> None:
    text = '"app.kubernetes.io/name": web\n80: http\n\'k y\': 1\n'
    out = edit(text, ("set_value", 0, ("app.kubernetes.io/name",), "api"), ("set_value", 0, (80,), "https"),
               ("set_value", 0, ("k y",), 2))
    assert out == '"app.kubernetes.io/name": api\n80: https\n\'k y\': 2\n'
    out = edit("a: x\n", ("set_value", 0, ("a",), {80: "http", "443": "https"}))
    assert out == 'a:\n  80: http\n  "443": https\n'


def test_very_long_string_is_never_folded() -> None:
    long = "word " * 400 + "end"
    out = edit("a: short\nb: 1\n", ("set_value", 0, ("a",), long))
    assert out == f"a: {long}\nb: 1\n"


def test_values_in_flow_collections() -> None:
    text = "a: {x: 1, y: [p, q]}  # c\n"
    out = edit(text, ("set_value", 0, ("a", "x"), "has, comma"), ("set_value", 0, ("a", "y", 1), {"k": [1]}),
               ("set_value", 0, ("a", "y", 0), "multi\nline"))
    assert out == 'a: {x: "has, comma", y: ["multi\\nline", {k: [1]}]}  # c\n'


def test_kind_list_items_by_path() -> None:
    text = "apiVersion: v1\nkind: List\nitems:\n- kind: ConfigMap\n  data:\n    X: '1'\n- kind: Secret\n"
    out = edit(text, ("set_value", 0, ("items", 0, "data", "X"), "2"))
    assert out == text.replace("X: '1'", "X: '2'")


# -- block scalars -------------------------------------------------------------------------


def test_block_scalar_keeps_header_and_indentation() -> None:
    out = edit(MANIFEST, ("set_value", 1, ("data", "config.yaml"), "listen: 9090\nworkers: 8\n"))
    assert changed(MANIFEST, out) == [
        ("replace", ["    listen: 8080\n", "    workers: 4\n"], ["    listen: 9090\n", "    workers: 8\n"])
    ]


def test_block_scalar_line_count_may_change_and_blank_line_after_stays() -> None:
    out = edit(MANIFEST, ("set_value", 1, ("data", "config.yaml"), "a: 1\n"))
    assert "  config.yaml: |\n    a: 1\n\n  motd: >-\n" in out


def test_folded_block_scalar() -> None:
    out = edit(MANIFEST, ("set_value", 1, ("data", "motd"), "Hello\nthere"))
    assert changed(MANIFEST, out) == [
        ("replace", ["    Welcome to\n", "    the server\n"], ["    Hello\n", "\n", "    there\n"])
    ]


def test_block_scalar_chomping_follows_the_value() -> None:
    text = "a: |\n  x\nb: 1\n"
    assert edit(text, ("set_value", 0, ("a",), "y")) == "a: |-\n  y\nb: 1\n"
    assert edit(text, ("set_value", 0, ("a",), "y\n\n")) == "a: |+\n  y\n\nb: 1\n"
    text = "a: |+\n  x\n\n\nb: 1\n"
    assert edit(text, ("set_value", 0, ("a",), "y\n")) == "a: |\n  y\nb: 1\n"


def test_block_scalar_with_indent_indicator_and_deeper_indent() -> None:
    text = "a:\n  b: |2\n      lead\n    x\n  c: |\n        eight\n"
    out = edit(text, ("set_value", 0, ("a", "b"), "  new\ny\n"), ("set_value", 0, ("a", "c"), "nine\n"))
    assert out == "a:\n  b: |2\n      new\n    y\n  c: |\n        nine\n"


def test_multiline_into_plain_becomes_literal_block() -> None:
    text = "a:\n  key: value  # note\n  next: 1\n"
    out = edit(text, ("set_value", 0, ("a", "key"), "one\ntwo\n"))
    assert out == "a:\n  key: |  # note\n    one\n    two\n  next: 1\n"
    out = edit("- x\n- y\n", ("set_value", 0, (0,), " lead\nz"))
    assert out == "- |2-\n   lead\n  z\n- y\n"


def test_multiline_into_quoted_stays_quoted() -> None:
    out = edit("a: 'x'\nb: \"y\"\n", ("set_value", 0, ("a",), "1\n2"), ("set_value", 0, ("b",), "3\n"))
    assert out == 'a: "1\\n2"\nb: "3\\n"\n'


def test_block_scalar_to_other_types() -> None:
    text = "a: |  # script\n  echo hi\nb: 1\n"
    assert edit(text, ("set_value", 0, ("a",), 5)) == "a: 5  # script\nb: 1\n"
    assert edit(text, ("set_value", 0, ("a",), "one line\n")) == "a: |  # script\n  one line\nb: 1\n"
    assert edit(text, ("set_value", 0, ("a",), "no newline")) == "a: |-  # script\n  no newline\nb: 1\n"


# -- mappings and sequences as values ------------------------------------------------------


def test_set_dict_and_list_follow_the_sequence_style_nearby() -> None:
    indented = "spec:\n  ports:\n    - 80\n  hosts: x\n"
    out = edit(indented, ("set_value", 0, ("spec", "hosts"), ["a", {"b": 1, "c": [2]}]))
    assert out == "spec:\n  ports:\n    - 80\n  hosts:\n    - a\n    - b: 1\n      c:\n        - 2\n"
    flat = "spec:\n  ports:\n  - 80\n  hosts: x\n"
    out = edit(flat, ("set_value", 0, ("spec", "hosts"), ["a", {"b": 1}]))
    assert out == "spec:\n  ports:\n  - 80\n  hosts:\n  - a\n  - b: 1\n"


def test_replace_a_block_mapping() -> None:
    text = "a:\n  b: 1  # old\n  c: 2\nd: 3\n"
    assert edit(text, ("set_value", 0, ("a",), {"x": {"w": "z"}})) == "a:\n  x:\n    w: z\nd: 3\n"
    assert edit(text, ("set_value", 0, ("a",), "flat")) == "a: flat\nd: 3\n"
    assert edit(text, ("set_value", 0, ("a",), {})) == "a: {}\nd: 3\n"
    assert edit("a: [1, 2]\n", ("set_value", 0, ("a",), [])) == "a: []\n"


def test_set_dict_into_sequence_item_uses_compact_form() -> None:
    text = "- name: a\n  v: 1\n- b\n"
    out = edit(text, ("set_value", 0, (1,), {"name": "b", "v": 2}), ("set_value", 0, (0,), ["x", "z"]))
    assert out == "- - x\n  - z\n- name: b\n  v: 2\n"


def test_set_whole_document() -> None:
    out = edit("---\n# empty\n---\na: 1\n", ("set_value", 0, (), {"k": "v"}))
    assert out == "---\n# empty\nk: v\n---\na: 1\n"


# -- add_key / delete_key ----------------------------------------------------------------


def test_add_key_after_nested_block_and_block_scalar() -> None:
    out = edit(MANIFEST, ("add_key", 1, ("data",), "extra", "1"), ("add_key", 0, ("spec",), "paused", True))
    assert changed(MANIFEST, out) == [
        ("insert", [], ["  paused: true\n"]),
        ("insert", [], ['  extra: "1"\n']),
    ]
    assert out.index("  extra:") > out.index("  empty:")


def test_add_key_after_keep_block_scalar() -> None:
    text = "a:\n  s: |+\n    x\n\n# c\nb: 1\n"
    assert edit(text, ("add_key", 0, ("a",), "t", 2)) == "a:\n  s: |+\n    x\n\n  t: 2\n# c\nb: 1\n"


def test_add_key_renders_nested_values() -> None:
    out = edit("m:\n  a: 1\n", ("add_key", 0, ("m",), "new", {"l": [1, {"x": "multi\nline\n"}], "e": {}}))
    assert out == "m:\n  a: 1\n  new:\n    l:\n    - 1\n    - x: |\n        multi\n        line\n    e: {}\n"


def test_add_key_to_flow_and_empty_mappings() -> None:
    assert edit("a: {x: 1}\n", ("add_key", 0, ("a",), "z", "two")) == "a: {x: 1, z: two}\n"
    assert edit("a: {\n  x: 1\n}\n", ("add_key", 0, ("a",), "z", 2)) == "a: {\n  x: 1, z: 2\n}\n"
    assert edit("a: {x: 1}\n", ("add_key", 0, ("a",), "y", 2)) == 'a: {x: 1, "y": 2}\n'
    assert edit("data: {}\nb: 1\n", ("add_key", 0, ("data",), "k", "v")) == "data:\n  k: v\nb: 1\n"
    assert edit("data:\nb: 1\n", ("add_key", 0, ("data",), "k", "v")) == "data:\n  k: v\nb: 1\n"
    assert edit("data: ~  # none\n", ("add_key", 0, ("data",), "k", "v")) == "data:  # none\n  k: v\n"
    assert edit("l: [{}]\n", ("add_key", 0, ("l", 0), "k", "v")) == "l: [{k: v}]\n"


def test_add_key_in_sequence_item_and_root_without_final_newline() -> None:
    text = "items:\n- a: 1\n  b: 2\n- c: 3"
    out = edit(text, ("add_key", 0, ("items", 0), "z", 0), ("add_key", 0, (), "top", "x"))
    assert out == "items:\n- a: 1\n  b: 2\n  z: 0\n- c: 3\ntop: x"


def test_add_existing_key_fails() -> None:
    f = YamlFile.parse("a: {b: 1}\n", "f.yaml")
    with pytest.raises(YamlEditError, match=r"^f\.yaml: document 0: a\.b: already exists$"):
        f.add_key(0, ("a",), "b", 2)
    with pytest.raises(YamlEditError, match="not a mapping"):
        f.add_key(0, ("a", "b"), "c", 2)


def test_delete_key() -> None:
    text = "m:\n  a: 1  # gone\n  b:\n    c: 2\n  d: 3\n"
    assert edit(text, ("delete_key", 0, ("m",), "b")) == "m:\n  a: 1  # gone\n  d: 3\n"
    assert edit(text, ("delete_key", 0, ("m",), "a")) == "m:\n  b:\n    c: 2\n  d: 3\n"
    assert edit(text, ("delete_key", 0, ("m", "b"), "c")) == "m:\n  a: 1  # gone\n  b: {}\n  d: 3\n"
    assert edit("- a: 1\n  b: 2\n", ("delete_key", 0, (0,), "a")) == "- b: 2\n"
    assert edit("x: |\n  s\ny: 1\n", ("delete_key", 0, (), "x")) == "y: 1\n"


def test_delete_key_of_a_sequence_item_is_a_clean_error() -> None:
    f = YamlFile.parse("l:\n- a\n- b\n", "f.yaml")
    with pytest.raises(YamlEditError, match=r"f.yaml: document 0: .*not a mapping key"):
        f.delete_key(0, ("l",), 0)  # type: ignore[arg-type]  # an index, as a caller might pass


def test_delete_key_in_flow_mapping() -> None:
    text = "a: {x: 1, y: 2, z: 3}\n"
    assert edit(text, ("delete_key", 0, ("a",), "y")) == "a: {x: 1, z: 3}\n"
    assert edit(text, ("delete_key", 0, ("a",), "z")) == "a: {x: 1, y: 2}\n"
    assert edit("a: {x: 1}\n", ("delete_key", 0, ("a",), "x")) == "a: {}\n"


# -- files: documents, CRLF, final newline ---------------------------------------------------


def test_multi_document_edits_keep_separators_and_other_documents() -> None:
    text = "# header\n---\na: 1\n...\n---\n# only comments\n---\nb: 2\n---\nc: 3\n"
    out = edit(text, ("set_value", 0, ("a",), 5), ("set_value", 2, ("b",), 6), ("add_key", 3, (), "d", 4))
    assert out == "# header\n---\na: 5\n...\n---\n# only comments\n---\nb: 6\n---\nc: 3\nd: 4\n"
    assert YamlFile.parse(out).documents == [{"a": 5}, None, {"b": 6}, {"c": 3, "d": 4}]


def test_crlf_is_kept_and_used_for_new_lines() -> None:
    text = "a: 1\r\nb:\r\n  c: |\r\n    x\r\n  d: 2\r\n"
    out = edit(text, ("set_value", 0, ("a",), 2), ("set_value", 0, ("b", "c"), "y\nz\n"),
               ("add_key", 0, ("b",), "e", [1, {"f": "g"}]), ("delete_key", 0, ("b",), "d"))
    assert out == "a: 2\r\nb:\r\n  c: |\r\n    y\r\n    z\r\n  e:\r\n  - 1\r\n  - f: g\r\n"


def test_missing_final_newline_is_kept() -> None:
    assert edit("a: 1\nb: 2", ("set_value", 0, ("b",), 3)) == "a: 1\nb: 3"
    assert edit("a: |\n  x", ("set_value", 0, ("a",), "y\nz")) == "a: |-\n  y\n  z"
    assert edit("a: 1", ("add_key", 0, (), "b", 2)) == "a: 1\nb: 2"


def test_edits_compose() -> None:
    f = YamlFile.parse(MANIFEST)
    f.set_value(0, ("spec", "replicas"), 5)
    f.add_key(0, ("spec",), "paused", False)
    f.set_value(0, ("spec", "paused"), True)
    f.set_value(0, ("metadata", "labels", "tier"), "back")
    f.delete_key(1, ("data",), "motd")
    f.set_value(1, ("data", "config.yaml"), "listen: 1\n")
    assert f.changed
    out = f.render()
    assert "  replicas: 5\n" in out and "  paused: true\n" in out and "tier: 'back'" in out
    assert "motd" not in out and "    listen: 1\n" in out
    expected = safe_load_all(MANIFEST)
    expected[0]["spec"]["replicas"] = 5
    expected[0]["spec"]["paused"] = True
    expected[0]["metadata"]["labels"]["tier"] = "back"
    del expected[1]["data"]["motd"]
    expected[1]["data"]["config.yaml"] = "listen: 1\n"
    assert safe_load_all(out) == expected == f.documents


# -- refusals ------------------------------------------------------------------------------


def test_aliases_and_merges_are_refused() -> None:
    text = "base: &b {x: 1}\nalias: *b\nport: &p 80\nuse: *p\nm:\n  <<: *b\n  y: 2\n"
    f = YamlFile.parse(text, "a.yaml")
    with pytest.raises(YamlEditError, match=r"^a\.yaml: document 0: alias: goes through alias \*b"):
        f.set_value(0, ("alias", "x"), 2)
    with pytest.raises(YamlEditError, match="is an alias"):
        f.set_value(0, ("use",), 81)
    with pytest.raises(YamlEditError, match="port: holds the anchor &p, and aliases elsewhere"):
        f.set_value(0, ("port",), 81)
    with pytest.raises(YamlEditError, match="holds the anchor &p"):
        f.delete_key(0, (), "port")
    with pytest.raises(YamlEditError, match="merge"):
        f.set_value(0, ("m", "x"), 2)
    with pytest.raises(YamlEditError, match=r"base: holds the anchor &b, and aliases"):
        f.set_value(0, ("base", "x"), 5)  # inside an aliased mapping
    f.set_value(0, ("m", "y"), 3)  # a key of its own is fine
    assert f.render() == text.replace("y: 2", "y: 3")
    assert edit("a: &solo 1\n", ("set_value", 0, ("a",), 2)) == "a: &solo 2\n"


def test_unverifiable_edit_is_refused_and_nothing_changes() -> None:
    f = YamlFile.parse("a: !!str 5\n", "t.yaml")
    with pytest.raises(YamlEditError, match="read back"):
        f.set_value(0, ("a",), 6)
    assert not f.changed


def test_bad_paths_and_values() -> None:
    f = YamlFile.parse("a: [1]\n", "t.yaml")
    with pytest.raises(YamlEditError, match="no such document"):
        f.set_value(1, ("a",), 1)
    with pytest.raises(YamlEditError, match=r"a\[3\]"):
        f.set_value(0, ("a", 3), 1)
    with pytest.raises(YamlEditError, match="cannot write a object"):
        f.set_value(0, ("a", 0), object())
    with pytest.raises(YamlEditError, match="no such path"):
        f.delete_key(0, (), "zz")


# -- plumbing ------------------------------------------------------------------------------


def test_scalar_helpers() -> None:
    assert double_quoted('a"b\\c\n\x00\u2028é') == '"a\\"b\\\\c\\n\\0\\Lé"'
    assert plain_ok("abc") and not plain_ok("on") and not plain_ok("a,b", flow=True)
    assert block_body("a\n b\n") == ("", ["a", " b"], False)
    assert block_body(" x") == ("-", [" x"], True)
    assert block_body("a\n  \nb") is None and block_body("\n") is None


def test_large_file_edits_do_not_parse_the_file_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 200 KB file, six edits: none parses the whole text again (each one did once, 0.3 s a
    time at this size: what made a sidecar pass slow). Speed itself is measured in bench/."""
    import syncer.yamledit._file as yfile

    items = "".join(
        f"      - name: item{i}\n        description: \"Item number {i} with some words\"\n"
        f"        value: {i}\n        script: |\n          echo {i}\n          exit 0\n"
        for i in range(1700)
    )
    text = f"apiVersion: v1\nkind: Big\nspec:\n  group:\n    list:\n{items}  tail: end\n"
    assert len(text) > 200_000
    f = YamlFile.parse(text, lazy=False)  # parsed here, once
    loads: list[int] = []
    real_load = yfile._load

    def counting_load(text: str, name: str) -> Any:
        loads.append(len(text))
        return real_load(text, name)

    monkeypatch.setattr(yfile, "_load", counting_load)
    import syncer.yamledit._verify as yverify

    real_verify_load = yverify.load

    def counting_verify_load(text: str) -> Any:
        loads.append(len(text))
        return real_verify_load(text)

    monkeypatch.setattr(yverify, "load", counting_verify_load)
    ops: list[tuple[Any, ...]] = [
        ("set_value", 0, ("kind",), "Bigger"),
        ("set_value", 0, ("spec", "group", "list", 1500, "description"), "changed"),
        ("set_value", 0, ("spec", "group", "list", 900, "script"), "echo new\n"),
        ("add_key", 0, ("spec", "group", "list", 3), "extra", {"a": 1}),
        ("add_key", 0, (), "status", {}),
        ("delete_key", 0, ("spec",), "tail"),
    ]
    for op in ops:
        getattr(f, op[0])(*op[1:])
        assert [n for n in loads if n > 10_000] == [], op  # no whole-file parse (a small fragment may be read)
    expected = (
        text.replace("kind: Big\n", "kind: Bigger\n")
        .replace('"Item number 1500 with some words"', '"changed"')
        .replace("echo 900\n          exit 0\n", "echo new\n")
        .replace("echo 3\n          exit 0\n", "echo 3\n          exit 0\n        extra:\n          a: 1\n")
        .replace("  tail: end\n", "status: {}\n")
    )
    assert f.render() == expected


# -- property test ---------------------------------------------------------------------------

KEYS = st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), min_size=1, max_size=12)
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-10**6, 10**6),
    st.floats(allow_nan=False, width=32),
    st.text(st.characters(codec="utf-8", exclude_categories=["Cs"], exclude_characters="\n\r\x85\u2028\u2029"),
            max_size=30),
)
TREES = st.recursive(
    SCALARS,
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(KEYS, kids, max_size=4)),
    max_leaves=12,
)


def leaves(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(data, dict):
        return [p for k, v in data.items() for p in leaves(v, path + (k,))]
    if isinstance(data, list):
        return [p for i, v in enumerate(data) for p in leaves(v, path + (i,))]
    return [path]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tree=st.dictionaries(KEYS, TREES, min_size=1, max_size=5),
    seq_style=st.sampled_from([(2, 2, 0), (2, 4, 2), (4, 6, 4)]),
    pick=st.integers(0, 10**6),
    new=SCALARS,
)
def test_property_scalar_edit_changes_one_line(tree: dict[str, Any], seq_style: tuple[int, int, int],
                                               pick: int, new: Any) -> None:
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.width = 10**6
    yaml.allow_unicode = True
    yaml.indent(mapping=seq_style[0], sequence=seq_style[1], offset=seq_style[2])
    import io

    buf = io.StringIO()
    yaml.dump(tree, buf)
    text = buf.getvalue()
    data = safe_load_all(text)[0]
    paths = leaves(data)
    assume(paths)
    path = paths[pick % len(paths)]
    f = YamlFile.parse(text)
    f.set_value(0, path, new)
    out = f.render()
    expected = copy.deepcopy(data)
    if path:
        holder = expected
        for part in path[:-1]:
            holder = holder[part]
        holder[path[-1]] = new
    else:
        expected = new
    assert safe_load_all(out) == [expected]
    old = _walk_value(data, path)
    if type(old) is type(new) and old == new:
        assert out is text
    else:
        a, b = text.splitlines(keepends=True), out.splitlines(keepends=True)
        assert len(a) == len(b) and sum(x != y for x, y in zip(a, b)) == 1, (text, out)


def _walk_value(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        data = data[part]
    return data
