"""Section 6, edit fidelity: random single-scalar edits over the shared real-world corpus.

For each file a scalar leaf is drawn (seeded) from ruamel's composed node tree, so the
choice does not depend on the editor under test.  Leaves that cannot be a one-line edit by
nature are not drawn: keys, block scalars and other multi-line scalars, nulls, timestamps
and other non-JSON types, anything anchored, aliased or under a ``<<`` merge.  The new value
keeps the old one's type (bool flipped, number bumped, string mutated the way people edit:
a character, a suffix or a version number).

syncer (``YamlFile.set_value`` + ``render``) passes a file when exactly the leaf's line
differs, nothing else, and the result loads to the original data with only that leaf
changed.  The baseline is what a careful tool without byte surgery does: ruamel's
round-trip loader/dumper with ``preserve_quotes`` (load, set, dump).  Both run on the same
edit, one after the other, file by file (interleaved), so a noisy neighbour hits both.
"""

from __future__ import annotations

import difflib
import io
import random
import string
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

from bench.common import CORPUS, Row, Section, median, spread

MERGE_TAG = "tag:yaml.org,2002:merge"


def corpus_files() -> list[Path]:
    return sorted(p for p in CORPUS.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


@dataclass(frozen=True)
class EditPlan:
    doc: int
    path: tuple[str | int, ...]
    line: int  # 0-based line of the leaf in the file
    old: Any
    new: Any


def _leaves(root: Any, doc: int) -> list[tuple[tuple[str | int, ...], ScalarNode]]:
    """Scalar leaves reachable exactly once, with their paths (no aliases, anchors, merges)."""
    seen: dict[int, int] = {}

    def count(node: Any) -> None:
        seen[id(node)] = seen.get(id(node), 0) + 1
        if seen[id(node)] > 1:
            return
        if isinstance(node, MappingNode):
            for k, v in node.value:
                count(k)
                count(v)
        elif isinstance(node, SequenceNode):
            for v in node.value:
                count(v)

    count(root)
    out: list[tuple[tuple[str | int, ...], ScalarNode]] = []

    def walk(node: Any, path: tuple[str | int, ...]) -> None:
        if seen.get(id(node), 0) > 1 or getattr(node, "anchor", None):
            return
        if isinstance(node, MappingNode):
            for k, v in node.value:
                if k.tag == MERGE_TAG or not isinstance(k, ScalarNode) or not k.tag.endswith(":str"):
                    if k.tag == MERGE_TAG:
                        return  # a merged mapping's keys come from elsewhere: leave the whole map
                    continue
                walk(v, path + (k.value,))
        elif isinstance(node, SequenceNode):
            for i, v in enumerate(node.value):
                walk(v, path + (i,))
        elif isinstance(node, ScalarNode):
            if node.style in ("|", ">") or node.start_mark.line != node.end_mark.line:
                return
            out.append((path, node))

    walk(root, ())
    return out


def _mutate_str(old: str, rng: random.Random) -> str:
    digits = [i for i, c in enumerate(old) if c.isdigit()]
    how = rng.choice(("char", "suffix", "number")) if old else "suffix"
    if how == "number" and digits:
        i = rng.choice(digits)
        return old[:i] + str((int(old[i]) + 1) % 10) + old[i + 1:]
    alnum = [i for i, c in enumerate(old) if c.isalnum() and c.isascii()]
    if how == "char" and alnum:
        i = rng.choice(alnum)
        c = old[i]
        pool = string.digits if c.isdigit() else string.ascii_lowercase if c.islower() else string.ascii_uppercase
        return old[:i] + rng.choice(pool.replace(c, "")) + old[i + 1:]
    return old + "-2"


def _new_value(old: Any, rng: random.Random) -> Any:
    if isinstance(old, bool):
        return not old
    if isinstance(old, int):
        return old + rng.randint(1, 9)
    if isinstance(old, float):
        return round(old + 0.5, 3)
    if isinstance(old, str):
        new = _mutate_str(old, rng)
        return new if new != old else old + "x"
    return None


def _walk(data: Any, path: tuple[str | int, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


def _set(data: Any, path: tuple[str | int, ...], value: Any) -> None:
    _walk(data, path[:-1])[path[-1]] = value


def _compose(text: str) -> tuple[list[Any], list[Any]]:
    """Node trees and the data they construct, from one parse."""
    yaml = YAML(typ="safe", pure=True)
    roots = list(yaml.compose_all(text))
    return roots, [None if r is None else yaml.constructor.construct_document(r) for r in roots]


def pick_edit(text: str, rng: random.Random) -> tuple[EditPlan, list[Any]] | None:
    """One random, type-keeping single-scalar edit of ``text`` and the data expected after it."""
    try:
        roots, data = _compose(text)
    except YAMLError:
        return None
    candidates: list[tuple[int, tuple[str | int, ...], ScalarNode]] = []
    for d, root in enumerate(roots):
        if root is None:
            continue
        for path, node in _leaves(root, d):
            try:
                old = _walk(data[d], path)
            except (KeyError, IndexError, TypeError):
                continue
            if old is None or not isinstance(old, (str, int, float, bool)):
                continue
            candidates.append((d, path, node))
    if not candidates:
        return None
    d, path, node = rng.choice(candidates)
    old = _walk(data[d], path)
    plan = EditPlan(d, path, node.start_mark.line, old, _new_value(old, rng))
    _set(data[d], path, plan.new)
    return plan, data


def lines_touched(old: str, new: str) -> int:
    """Lines removed or added, whichever is more, over all differing hunks."""
    sm = difflib.SequenceMatcher(a=old.splitlines(), b=new.splitlines(), autojunk=False)
    return sum(max(i2 - i1, j2 - j1) for op, i1, i2, j1, j2 in sm.get_opcodes() if op != "equal")


def _loads_as(text: str, expected: list[Any]) -> bool:
    try:
        return list(YAML(typ="safe", pure=True).load_all(text)) == expected
    except YAMLError:
        return False


def syncer_edit(text: str, plan: EditPlan) -> tuple[str | None, str]:
    from syncer.yamledit import YamlFile

    try:
        doc = YamlFile.parse(text, "corpus")
        doc.set_value(plan.doc, plan.path, plan.new)
        return doc.render(), ""
    except Exception as exc:  # noqa: BLE001 - refusals are counted, not fatal
        return None, f"{type(exc).__name__}: {str(exc)[:160]}"


def roundtrip_edit(text: str, plan: EditPlan) -> tuple[str | None, str]:
    """The baseline: ruamel round-trip load, set, dump (quotes preserved, no line wrapping)."""
    try:
        yaml = YAML()
        yaml.preserve_quotes = True
        yaml.width = 1 << 16
        docs = list(yaml.load_all(text))
        _set(docs[plan.doc], plan.path, plan.new)
        buf = io.StringIO()
        if len(docs) == 1 and not text.lstrip().startswith("---"):
            yaml.dump(docs[0], buf)
        else:
            yaml.explicit_start = text.lstrip().startswith("---")
            yaml.dump_all(docs, buf)
        return buf.getvalue(), ""
    except Exception as exc:  # noqa: BLE001
        return None, f"{type(exc).__name__}: {str(exc)[:160]}"


@dataclass
class Tally:
    files: int = 0
    exact: int = 0
    refused: int = 0
    wrong_data: int = 0
    lines: list[int] = field(default_factory=list)
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)


def _judge(t: Tally, name: str, text: str, new: str | None, err: str, plan: EditPlan, expected: list[Any]) -> None:
    t.files += 1
    if new is None:
        t.refused += 1
        t.failures.append(f"{name}: refused {plan.path}: {err}")
        return
    n = lines_touched(text, new)
    t.lines.append(n)
    old_lines, new_lines = text.splitlines(), new.splitlines()
    one_line = (len(old_lines) == len(new_lines)
                and [i for i, (a, b) in enumerate(zip(old_lines, new_lines)) if a != b] == [plan.line])
    same_rest = new.endswith("\n") == text.endswith("\n") and ("\r\n" in new) == ("\r\n" in text)
    data_ok = _loads_as(new, expected)
    if not data_ok:
        t.wrong_data += 1
    if one_line and same_rest and data_ok:
        t.exact += 1
    elif len(t.failures) < 8:
        t.failures.append(f"{name}: {plan.path} touched {n} line(s){'' if data_ok else ', wrong data'}")


def run_round(files: list[Path], seed: int, edits_per_file: int) -> tuple[Tally, Tally, int]:
    """One pass over the corpus: ``edits_per_file`` independent edits per file, syncer then baseline."""
    rng = random.Random(seed)
    mine, base = Tally(), Tally()
    skipped = 0
    for path in files:
        text = path.read_bytes().decode("utf-8")
        for _ in range(edits_per_file):
            picked = pick_edit(text, rng)
            if picked is None:
                skipped += 1
                break
            plan, expected = picked
            name = path.relative_to(CORPUS).as_posix()
            t0 = time.perf_counter()
            new, err = syncer_edit(text, plan)
            mine.seconds += time.perf_counter() - t0
            _judge(mine, name, text, new, err, plan, expected)
            t0 = time.perf_counter()
            new, err = roundtrip_edit(text, plan)
            base.seconds += time.perf_counter() - t0
            _judge(base, name, text, new, err, plan, expected)
    return mine, base, skipped


def run(quick: bool) -> Section:
    sec = Section("edit", "6. Edit fidelity (shared corpus)")
    files = corpus_files()
    if not files:
        sec.row("edit fidelity", "not measured: corpus missing", note=str(CORPUS))
        return sec
    rounds, per_file = (1, 1) if quick else (3, 1)
    if quick:
        files = files[::3]  # a third of the corpus, spread over every source repository
    results = [run_round(files, 1000 + r, per_file) for r in range(rounds)]
    mine = [m for m, _, _ in results]
    base = [b for _, b, _ in results]
    skipped = results[0][2]
    edits = sum(m.files for m in mine)
    exact = sum(m.exact for m in mine)
    lines = [x for m in mine for x in m.lines]
    mean_lines = sum(lines) / len(lines) if lines else float("nan")
    b_edits = sum(b.files for b in base)
    b_exact = sum(b.exact for b in base)
    b_lines = [x for b in base for x in b.lines]
    b_mean = sum(b_lines) / len(b_lines) if b_lines else float("nan")
    tput = [m.files / m.seconds for m in mine if m.seconds]
    b_tput = [b.files / b.seconds for b in base if b.seconds]
    sec.row("exactly-one-line edits", f"{exact}/{edits} = {100 * exact / max(1, edits):.1f} %", "100 %",
            exact == edits, f"ruamel round-trip: {b_exact}/{b_edits} = {100 * b_exact / max(1, b_edits):.1f} %")
    sec.row("mean lines touched per edit", f"{mean_lines:.3f} (max {max(lines, default=0)})", "1.0",
            abs(mean_lines - 1.0) < 1e-9, f"round-trip: {b_mean:.1f} (max {max(b_lines, default=0)})")
    sec.row("edits refused / wrong data", f"{sum(m.refused for m in mine)} / {sum(m.wrong_data for m in mine)}",
            "0 / 0", sum(m.refused + m.wrong_data for m in mine) == 0,
            f"round-trip: {sum(b.refused for b in base)} / {sum(b.wrong_data for b in base)}")
    sec.row("edit throughput (parse+edit+render)", f"{spread(tput, '{:.0f}')} files/s", "",
            None, f"round-trip: {spread(b_tput, '{:.0f}')} files/s")
    ratios_lines = [(sum(b.lines) / len(b.lines)) / (sum(m.lines) / len(m.lines)) for m, b in zip(mine, base)
                    if m.lines and b.lines]
    ratios_speed = [(m.files / m.seconds) / (b.files / b.seconds) for m, b in zip(mine, base) if m.seconds and b.seconds]
    sec.headline.append(Row("edit: lines touched, round-trip / syncer", spread(ratios_lines, "{:.1f}x"),
                            note=f"{len(ratios_lines)} round(s)"))
    sec.headline.append(Row("edit: throughput, syncer / round-trip", spread(ratios_speed, "{:.2f}x"),
                            note=f"{len(ratios_speed)} round(s)"))
    sec.notes.append(
        f"{len(files)} corpus files{' (--quick: every third one)' if quick else ''}, {rounds} round(s) x "
        f"{per_file} independent edit(s) per file (seeds 1000+); {skipped} file(s) without an eligible scalar. "
        "Baseline: ruamel.yaml round-trip (preserve_quotes, no wrapping)."
    )
    fails = [f for m in mine for f in m.failures]
    if fails:
        sec.notes.append("syncer edits that were not exactly one line: " + "; ".join(fails[:6]))
    sec.data = {"edits": edits, "exact": exact, "mean_lines": mean_lines, "throughput": tput,
                "baseline_mean_lines": b_mean, "baseline_throughput": b_tput, "median_throughput": median(tput)}
    return sec
