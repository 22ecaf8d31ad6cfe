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
