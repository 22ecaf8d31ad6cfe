"""Credential rules from a maintained catalogue: Betterleaks' (gitleaks' successor) default rules.

syncer's own judgement (``syncer.secrets.values``) reads a value as the file it is: keys inside
properties, JSON, YAML, XML, connection strings and command lines, base64 decoded, URLs with a
password. No maintained detector does that as well (``python -m bench.detectors``: on syncer's
own test cases the best of them found half). What a maintained catalogue does better is the long
list of *providers* whose tokens have a shape of their own: hundreds, kept current by people who
watch them. So the provider shapes come from that catalogue, as data, and run here:

* the rules are Betterleaks' ``config/betterleaks.toml`` (MIT licence, ``betterleaks-LICENSE``): those of
  confidence ``high`` that report a finding, trimmed to their id, regex, keywords and entropy floor
  (``betterleaks-rules.json`` beside this module; ``python -m syncer.secrets.rules UPSTREAM.toml`` regenerates it
  from a newer release);
* their regexes are written for Go's ``regexp``, which is RE2: they run unchanged on
  ``google-re2`` (linear in the text, like every pattern syncer runs);
* a rule is tried only when one of its keywords is in the text (one RE2 ``Set`` of all the
  keywords: one pass, some 10 µs for a short value), compiled on first use and kept;
* a rule's ``entropy(finding["secret"]) <= N`` filter is applied (the secret is the regex's first
  group, else the whole match); its other filters are not, so it finds a little more, never less.

Thread-safe: the compiled rules are built under a lock, and RE2 objects match from any thread.
"""

from __future__ import annotations

import json
import math
import re
import sys
import threading
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from collections.abc import Iterator
from typing import Any

import re2

#: The trimmed catalogue, shipped with the package.
DATA = "betterleaks-rules.json"
_ENTROPY = re.compile(r'^\s*entropy\(finding\["secret"\]\)\s*(?:<=|<)\s*([0-9.]+)\s*$')


@dataclass(frozen=True)
class Rule:
    id: str
    regex: str
    keywords: tuple[str, ...]
    entropy: float | None  # a secret with at most this entropy is no finding


class Catalogue:
    """The rules, their keyword set, and each rule's compiled regex once it was needed."""

    def __init__(self, rules: list[Rule]) -> None:
        self.rules = rules
        self.keywords = sorted({k.lower() for r in rules for k in r.keywords})
        by_keyword: dict[str, list[int]] = {}
        for i, rule in enumerate(rules):
            for k in {k.lower() for k in rule.keywords}:
                by_keyword.setdefault(k, []).append(i)
        self._by_keyword = [by_keyword[k] for k in self.keywords]
        self._set = re2.Set.SearchSet()
        for k in self.keywords:
            self._set.Add(re2.escape(k))
        self._set.Compile()
        self._compiled: dict[int, Any] = {}
        self._lock = threading.Lock()

    def _regex(self, i: int) -> Any:
        found = self._compiled.get(i)
        if found is None:
            with self._lock:
                found = self._compiled.get(i)
                if found is None:
                    found = self._compiled[i] = re2.compile(self.rules[i].regex)
        return found

    def findings(self, text: str) -> Iterator[tuple[str, int, int]]:
        """(rule id, start, end) of each finding in ``text``: the secret's span (the regex's first
        group, else the whole match), rule by rule."""
        if not text.isascii():
            text = text.encode("utf-8", "replace").decode("utf-8")  # a lone surrogate is no UTF-8 for RE2
        matched = self._set.Match(text.lower())
        tried: set[int] = set()
        for k in sorted(matched or ()):
            for i in self._by_keyword[k]:
                if i in tried:
                    continue
                tried.add(i)
                rule, regex = self.rules[i], self._regex(i)
                for m in regex.finditer(text):
                    group = 1 if regex.groups >= 1 and m.group(1) else 0
                    if rule.entropy is None or entropy(m.group(group)) > rule.entropy:
                        yield rule.id, m.start(group), m.end(group)

    def hit(self, text: str) -> str | None:
        """The id of the first rule ``text`` holds a finding of, or None."""
        return next((found for found, _, _ in self.findings(text)), None)


def entropy(text: str) -> float:
    """Shannon entropy of ``text``, bits per character (as Betterleaks computes it)."""
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values()) if n else 0.0


_CATALOGUE: Catalogue | None = None
_LOADING = threading.Lock()


def catalogue() -> Catalogue:
    """The shipped catalogue, loaded on first use (a few ms: only the keywords are compiled)."""
    global _CATALOGUE
    if _CATALOGUE is None:
        with _LOADING:
            if _CATALOGUE is None:
                raw = json.loads(resources.files("syncer.secrets").joinpath(DATA).read_text("utf-8"))
                _CATALOGUE = Catalogue([Rule(r["id"], r["regex"], tuple(r["keywords"]), r.get("entropy"))
                                        for r in raw["rules"]])
    return _CATALOGUE


def rule_hit(text: str) -> str | None:
    """What credential ``text`` holds by the maintained rules (``"a stripe access token (rule
    stripe-access-token)"``), or None."""
    found = catalogue().hit(text)
    if not found:
        return None
    words = found.replace("-", " ")
    return f"{'an' if words[:1] in 'aeiou' else 'a'} {words} (rule {found})"


def trim(upstream: dict[str, Any], source: str) -> dict[str, Any]:
    """The shipped form of an upstream Betterleaks configuration: high-confidence rules that
    report, each with what ``Catalogue`` uses; every regex checked to compile on RE2."""
    rules = []
    for r in upstream.get("rules", []):
        if r.get("confidence") != "high" or r.get("skipReport") or "regex" not in r or not r.get("keywords"):
            continue
        re2.compile(r["regex"])
        floor = _ENTROPY.match(r.get("filter", ""))
        rules.append({"id": r["id"], "regex": r["regex"], "keywords": list(r["keywords"]),
                      **({"entropy": float(floor.group(1))} if floor else {})})
    return {"source": source, "rules": rules}


def main(argv: list[str]) -> int:
    """``python -m syncer.secrets.rules UPSTREAM.toml [SOURCE]``: rewrite the shipped catalogue."""
    import tomllib
    from pathlib import Path

    if not argv:
        print("usage: python -m syncer.secrets.rules UPSTREAM.toml [SOURCE]", file=sys.stderr)
        return 2
    upstream = tomllib.loads(Path(argv[0]).read_text("utf-8"))
    out = Path(__file__).with_name(DATA)
    doc = trim(upstream, argv[1] if len(argv) > 1 else argv[0])
    out.write_text(json.dumps(doc, indent=0, ensure_ascii=False) + "\n", "utf-8")
    print(f"{out}: {len(doc['rules'])} rules")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
