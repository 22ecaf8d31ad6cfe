"""Changes no one can see (issue #21): an invisible or look-alike character in a live value is
shown as an escape, and said, everywhere a person reads it. Each test failed before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import git
from tests.helpers import _loopback_only, run  # noqa: F401 - autouse fixture: loopback only
from tests.test_hostile import edit_cm, example_items, live_file
from tests.test_hostile_values import _commit


def test_invisible_and_lookalike_changes_are_visible_and_said(asgard_repo: Path, tmp_path: Path) -> None:
    """Was: ``fast`` + U+200B and ``db.іnternal`` (a Cyrillic і) read exactly like git's values
    in the text output, the commit message and the PR body."""
    from syncer.gather.collect import detect_live
    from syncer.gather.live import SnapshotSource
    from syncer.writeback.notify import slack_text
    from syncer.writeback.report import pr_body
    from syncer.writeback.deliver import load_installation
    from tests.conftest import NOW

    items = example_items()
    cm = edit_cm(items)
    cm["data"]["PORT"] = "11434\u200b"
    cm["data"]["MAC_ADDRS"] = "192.168.68.75 db.\u0456nternal"
    cm["data"]["PROBE_TIMEOUT_SECONDS"] = "2\u00a0"
    live = live_file(tmp_path, items)
    code, text, _ = run("diff", "asgard", "--repo", str(asgard_repo), "--live-file", str(live))
    assert code == 1
    assert "\u200b" not in text and "11434\\u200b" in text
    assert "differs only by U+200B ZERO WIDTH SPACE" in text
    assert "Latin and Cyrillic letters in one word: U+0456" in text
    assert "\u00a0" not in text and "differs only by U+00A0 NO-BREAK SPACE" in text
    loaded = load_installation(asgard_repo, "asgard")
    result = detect_live(loaded.config, loaded.manifests, SnapshotSource([live], "ai"), NOW)
    body = pr_body(result, result.writable(), "syncer diff asgard")
    assert "\u200b" not in body and "differs only by U+200B" in body and "U+0456" in body
    chat = slack_text("pr.opened", {"installation": "asgard", "drifts": [d.to_json() for d in result.drifts]})
    assert "\u200b" not in chat and "differs only by U+200B" in chat
    out, pushed = _commit(asgard_repo, live)
    message = git(asgard_repo, "log", "-1", "--format=%B", "origin/main")
    assert "\u200b" not in message and "11434\\u200b" in message and "differs only by U+200B" in message
    assert "U+0456" in message and "\\ufe0f" not in message  # syncer's own words need no escape
    assert "11434\u200b" in pushed  # the file holds the exact value


@pytest.mark.parametrize("old,new,note", [
    ("fast", "fast\u200b", "differs only by U+200B ZERO WIDTH SPACE"),
    ("db.internal", "db.\u0456nternal", "differs only by look-alike characters: U+0456"),
    ("a", "a\u2060b", None),
    ("paypal", "p\u0430yp\u0430l", "differs only by look-alike characters: U+0430"),
    (None, "db.\u0456nternal", "Latin and Cyrillic letters in one word"),
    ("x", "x\ufeff", "differs only by U+FEFF"),
    ("a", "b", None), ("Москва", "Київ", None), ("café", "cafe", None),
])
def test_change_notes(old: str | None, new: str, note: str | None) -> None:
    from syncer.secrets.lookalike import change_note

    said = change_note(old, new)
    if note is None and old == "a" and new != "b":
        assert said is not None and "invisible" in said  # an invisible character added among others
    elif note is None:
        assert said is None, said
    else:
        assert said is not None and said.startswith(note), said


def test_every_invisible_character_is_escaped_everywhere() -> None:
    import sys
    import unicodedata

    from syncer.secrets import escape

    invisible = [chr(c) for c in range(sys.maxunicode + 1)
                 if unicodedata.category(chr(c)) == "Cf" or (unicodedata.category(chr(c)) == "Zs" and c != 0x20)]
    text = "".join(invisible)
    for out in (escape.line(text), escape.terminal(text), escape.markdown(text).replace("\u2060", ""),
                escape.slack(text).replace("\u2060", "")):
        left = [f"U+{ord(ch):04X}" for ch in out if ch in invisible]
        assert not left, left
