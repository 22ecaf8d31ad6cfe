"""The state record's text made entry by entry (syncer/sidecar/recordtext.py) is byte for byte
what ``json.dumps`` + ``state.pack`` made of the whole record: the store compares the text it
wrote with the text it reads to skip a parse, and older records must compare equal."""

from __future__ import annotations

import json
from typing import Any

from syncer.sidecar.recordtext import encode
from syncer.sidecar.state import COMPRESS_OVER, pack, unpack


def _record(n: int) -> dict[str, Any]:
    doc: dict[str, Any] = {
        f"v1/ConfigMap/scale/app-{i:05}": {"apiVersion": "v1", "kind": "ConfigMap",
                                           "metadata": {"name": f"app-{i:05}", "namespace": "scale",
                                                        "labels": {"team": f"team-{i % 8}", "é": "ünïcode"}},
                                           "data": {"PORT": str(8000 + i), "LOG_LEVEL": "info", "N": i}}
        for i in range(n)}
    doc["~proposed"] = {"v1/ConfigMap/scale/app-00001": {'["data","PORT"]': ["8001", "8002"]}}
    doc["~pushed"] = ["0123abcd"]
    return doc


def test_a_small_record_is_its_json() -> None:
    doc = _record(3)
    text, packed = encode(doc, COMPRESS_OVER)
    assert not packed and text == json.dumps(doc, sort_keys=True, separators=(",", ":"))


def test_a_large_record_is_the_same_gzip_as_the_whole_text_packed() -> None:
    doc = _record(3000)
    whole = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    assert len(whole) > COMPRESS_OVER
    text, packed = encode(doc, COMPRESS_OVER)
    assert packed and text == pack(whole)
    assert unpack(text, "record") == whole


def test_the_threshold_is_the_same_as_before() -> None:
    doc = _record(1)
    whole = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    assert encode(doc, len(whole)) == (whole, False)
    packed, was_packed = encode(doc, len(whole) - 1)
    assert was_packed and unpack(packed, "record") == whole


# -- what the store holds between writes, and how it reads a record back ----------------------

import pytest  # noqa: E402

from syncer.sidecar.recordtext import Texts, canonical, encode_texts, members  # noqa: E402


@pytest.mark.parametrize("text", [
    "{}", " { } ", '{"a":1}', '{ "a" : {"b":[1,2.5,true,null,"x"]} , "c" : "\\u00e9\\n" }\n',
    '{"a":1,"a":{"again":2}}', '{"v1/ConfigMap/ns/x":{"data":{"é":"ü"}},"proposed":{},"pushed":["ab"]}',
    json.dumps(_record(50)), json.dumps(_record(5), indent=2),
])
def test_members_are_json_loads_items_one_at_a_time(text: str) -> None:
    assert dict(members(text)) == json.loads(text)  # a repeated key: the last one, as json.loads keeps


@pytest.mark.parametrize("text", ["", "[]", '"a"', "{", '{"a"}', '{"a":}', '{"a":1,}', '{"a":1 "b":2}',
                                  '{"a":1}x', '{a:1}', "{}{}"])
def test_members_of_a_text_that_is_no_json_map_fail_as_json_loads_would(text: str) -> None:
    with pytest.raises(ValueError):
        list(members(text))
    try:
        whole = json.loads(text)
    except ValueError:
        return
    assert not isinstance(whole, dict)


def test_texts_encode_as_the_whole_record_does() -> None:
    doc = _record(3000)
    texts = ((k, canonical(doc[k])) for k in sorted(doc))
    assert encode_texts(texts, COMPRESS_OVER) == encode(doc, COMPRESS_OVER)


def test_packed_texts_read_back_and_compare_as_their_texts() -> None:
    held = Texts()
    doc = _record(200)
    packed = {k: held.pack(k.rsplit("/", 2)[0], canonical(v)) for k, v in doc.items() if "/" in k}
    assert all(held.unpack(k.rsplit("/", 2)[0], p) == canonical(doc[k]) for k, p in packed.items())
    key = "v1/ConfigMap/scale/app-00007"
    assert held.pack("v1/ConfigMap", canonical(doc[key])) == packed[key]  # the same text, the same bytes
    assert held.pack("v1/ConfigMap", canonical({**doc[key], "data": {}})) != packed[key]
    plain = sum(len(canonical(doc[k])) for k in packed)
    assert sum(map(len, packed.values())) * 4 < plain  # objects of one kind share most of their text
    other = Texts()  # another holder: its own dictionaries
    assert other.unpack("v1/Secret", other.pack("v1/Secret", '{"x":"é"}')) == '{"x":"é"}'
