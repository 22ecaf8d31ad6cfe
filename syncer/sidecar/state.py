"""syncer's record of the last state where git and the cluster agreed, in a ConfigMap.

The record is the base that decides direction (who moved) for objects that carry no
``last-applied-configuration`` annotation (objects created with ``kubectl create``, server-side
apply, Helm, or by a reconciler). Without it every such difference is of *unknown* direction:
proposed in a PR, never committed directly, and a committed-but-not-applied git change would
look the same as a live edit.

Layout: ConfigMap ``--state-configmap`` (default ``syncer-state``) in the installation's
namespace, key ``<installation>.json``, value a JSON map (over ``COMPRESS_OVER`` bytes, the same
JSON gzip-compressed under ``binaryData`` key ``<installation>.json.gz``: records of similar
objects shrink about twentyfold, so some 40,000 objects fit in the 1 MiB a ConfigMap holds)::

    {"v1/ConfigMap/ai/ollama-endpoint-manager": {<the object as git declares it, normalized>}, ...,
     "proposed": {"v1/ConfigMap/ai/ollama-endpoint-manager": {"[\"data\", \"A\"]": ["<v1>", "<v2>"]}, ...}}

``proposed`` (a key without ``/``, so never an object's key) holds, per object and field, the
values syncer proposed in a PR or commit -- values the cluster held at the time -- oldest
first, at most ``MAX_PROPOSALS``. They are written *before* the push (``propose``), so git
never holds a proposal syncer does not remember. When git holds one of them, git took it
from the cluster; a later live change of the field is then the cluster moving, even before
any pass saw git and the cluster agree (a PR merged, and the field edited live again before
the next pass; or a reviewer merging an older version of the branch than the newest one).
Proposals older than the one git holds are dropped as soon as syncer sees that, so a person
reverting git to one of them later is a git-side change again; the one git holds is never
dropped, however many newer ones follow while its PR waits.

``pushed`` (also without ``/``) lists the shas of the PR branch heads syncer pushed (or found
and adopted), newest last, at most ``MAX_PUSHED``, written by ``propose(head=)`` in the same
write as the proposals, before the push. It is how ``sync_pr`` tells syncer's own commits on
``syncer/<installation>`` from anyone else's: an author email proves nothing, anyone who can
push can write it. Absent (never written): the emails decide once, and the head is recorded.

Rules:

* an object is recorded whenever git and the cluster agree on it (a pass found no drift);
  objects no longer declared in git are dropped; Secrets are never recorded (their data
  would otherwise sit in a ConfigMap);
* at most one write per pass (``record``), none when nothing changed;
* writes are PUT with the ConfigMap's ``metadata.resourceVersion`` (optimistic concurrency: an
  answer 409 means someone else wrote in between; we re-read and write at the next pass); the
  ConfigMap is created (POST) when absent, and other keys in it are left alone, so several
  installations can share one.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import logging
import threading
import zlib
from collections.abc import Iterable, Mapping
from typing import Any

from syncer.bounds import InputRejected, check_json
from syncer.config import NEVER_WRITTEN
from syncer.errors import ClusterError
from syncer.kube import Conflict, Kube
from syncer.logs import event
from syncer.model import JSON, Drift, ObjectRef, Path
from syncer.detect.normalize import get_path
from syncer.sidecar import recordtext

log = logging.getLogger("syncer.state")

DEFAULT_NAME = "syncer-state"
#: Key of the proposals in the record's JSON map (object keys always contain "/").
PROPOSED = "proposed"
#: Key of the PR branch heads syncer pushed (``propose(head=)``), newest last.
PUSHED = "pushed"
#: Branch heads remembered: the newest is the one that counts; a few more cover a push that
#: was recorded and then lost (the remote kept the one before).
MAX_PUSHED = 8
#: Proposed values remembered per field: a reviewer merges one of the last few branch versions.
MAX_PROPOSALS = 8
LABELS = {"app.kubernetes.io/managed-by": "syncer", "app.kubernetes.io/component": "state"}
#: A record's JSON over this many bytes is stored compressed (small ones stay readable).
COMPRESS_OVER = 256 * 1024
#: The most JSON a compressed record may expand to: a planted gzip bomb stops here. A record
#: of 40,000 objects takes some 15 MB (about 350 bytes of JSON per object).
MAX_RECORD_JSON = 32 * 1024 * 1024
#: The most values (containers, items, keys: ``bounds.json_shape``) a record may parse into,
#: counted before parsing. A real record holds about 40 per object (1.5 million at 40,000
#: objects); without this bound a small gzip (``{"z":[{},{},...]}``) expands to tens of MiB
#: of JSON and gigabytes of Python objects. At this bound the worst case stays near the
#: sidecar's memory limit.
MAX_RECORD_VALUES = 2_000_000
#: What one ConfigMap holds: its ``data`` values plus ``binaryData`` bytes (the apiserver's
#: ``MaxSecretSize``, which it applies to ConfigMaps too).
MAX_CONFIGMAP_BYTES = 1024 * 1024


def pack(text: str) -> str:
    """``text`` gzip-compressed and base64-encoded, the same bytes for the same text."""
    return base64.b64encode(gzip.compress(text.encode(), compresslevel=6, mtime=0)).decode()


def unpack(packed: str, what: str, limit: int = MAX_RECORD_JSON) -> str:
    """The text ``pack`` made; ``InputRejected`` past ``limit`` bytes, ``ValueError`` when broken."""
    try:
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)  # gzip framing
        out = inflate.decompress(base64.b64decode(packed, validate=True), limit + 1)
    except (binascii.Error, zlib.error) as exc:
        raise ValueError(f"{what}: not gzip in base64 ({exc})") from None
    if len(out) > limit or inflate.unconsumed_tail:
        raise InputRejected(f"{what}: expands to more than {limit} bytes of JSON; not read", transient=False)
    return out.decode("utf-8", "replace")


def _configmap_bytes(data: Mapping[str, str], binary: Mapping[str, str]) -> int:
    """How much of the ConfigMap size limit ``data`` and ``binaryData`` use (keys not counted)."""
    total = sum(len(str(v).encode()) for v in data.values())
    return total + sum(len(str(v)) * 3 // 4 for v in binary.values())


def _same(a: Any, b: Any) -> bool:
    return bool(a == b) and type(a) is type(b)


def _since(values: list[Any], git: Any) -> list[Any]:
    """``values`` from the one git holds on (all of them when git holds none)."""
    for i, value in enumerate(values):
        if _same(value, git):
            return values[i:]
    return values


def _remember(values: list[Any], new: Any, git: Any) -> list[Any]:
    """``values`` (oldest first) with ``new`` added: those older than the one git holds are
    dropped; the one git holds is always kept, the newest others up to ``MAX_PROPOSALS``."""
    values = _since(values, git)
    pinned = values[:1] if values and _same(values[0], git) else []
    rest = values[len(pinned):]
    if not any(_same(v, new) for v in values):
        rest.append(new)
    return pinned + rest[-(MAX_PROPOSALS - len(pinned)):]


def ref_key(ref: ObjectRef) -> str:
    """``apps/v1/Deployment/ai/name``; ``v1/Namespace//ai`` for cluster-scoped objects."""
    return f"{ref.api_version}/{ref.kind}/{ref.namespace}/{ref.name}"


def _kind(key: str) -> str:
    """The ``apiVersion/kind`` part of a record key (what its entry's text is packed against)."""
    return key.rsplit("/", 2)[0]


#: One object's record as held between writes: its JSON text packed (``recordtext.Texts``),
#: and the object it was made from while that is git's object of this pass (None otherwise):
#: the same git object again is the same text, known without making it.
Entry = tuple[bytes, "JSON | None"]


class ConfigMapStore:
    """A ``BaseStore`` (see ``gather``) backed by one key of a ConfigMap the sidecar owns."""

    def __init__(self, api: Kube, namespace: str, installation: str, name: str = DEFAULT_NAME) -> None:
        self.api, self.namespace, self.name, self.installation = api, namespace, name, installation
        self.key = f"{installation}.json"
        self.packed_key = f"{installation}.json.gz"  # in binaryData, for a large record
        self._lock = threading.Lock()
        self._texts = recordtext.Texts()
        self._records: dict[str, Entry] = {}  # ref key -> its entry, never the parsed object
        self._raw: str | None = None  # the record's text that _records/_proposed came from
        self._proposed: dict[str, dict[str, list[Any]]] = {}  # ref key -> {JSON of a field path: values}
        self._pushed: list[str] | None = None  # PR branch heads syncer pushed; None: never recorded
        self._configmap: JSON | None = None  # as last read or written
        self._loaded = False
        self.writes = 0
        #: Why the last record read was refused (over the size/nesting limits), else None.
        self.rejected: str | None = None

    @property
    def path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/configmaps"

    def describe(self) -> str:
        return f"ConfigMap {self.namespace}/{self.name} key {self.key}"

    # -- BaseStore ------------------------------------------------------------------

    def base(self, ref: ObjectRef) -> JSON | None:
        with self._lock:
            if not self._loaded:
                raise ClusterError(f"state {self.describe()} not read yet", transient=True)
            key = ref_key(ref)
            rec = self._records.get(key)
            text = self._texts.unpack(_kind(key), rec[0]) if rec is not None else None
        return json.loads(text) if text is not None else None

    def proposed(self, ref: ObjectRef) -> dict[Path, list[Any]]:
        """The values syncer proposed for fields of ``ref`` (path -> values, oldest first)."""
        with self._lock:
            if not self._loaded:
                raise ClusterError(f"state {self.describe()} not read yet", transient=True)
            fields = self._proposed.get(ref_key(ref)) or {}
            return {tuple(json.loads(p)): json.loads(json.dumps(v)) for p, v in fields.items()}

    def pushed_heads(self) -> list[str] | None:
        """The PR branch heads syncer recorded pushing, oldest first; None when the record never
        held any (written by a syncer before this record existed, or never a PR pushed)."""
        with self._lock:
            if not self._loaded:
                raise ClusterError(f"state {self.describe()} not read yet", transient=True)
            return None if self._pushed is None else list(self._pushed)

    # -- reading and writing --------------------------------------------------------

    def refresh(self) -> None:
        """Read the ConfigMap (one GET); an absent ConfigMap or key is an empty record."""
        cm = self.api.call("GET", f"{self.path}/{self.name}", what=f"get state {self.describe()}")
        records: dict[str, Entry] = {}
        proposed: dict[str, dict[str, list[Any]]] = {}
        pushed: list[str] | None = None
        raw = ((cm or {}).get("data") or {}).get(self.key)
        packed = None if raw else ((cm or {}).get("binaryData") or {}).get(self.packed_key)
        if packed:
            raw = "gz:" + str(packed)  # what the cache compares: unpacked only when it changed
        rejected: str | None = None
        if raw and raw == self._raw:
            # The text last read or written: what it gave still holds (every pass reads the
            # record; parsing a large one is most of a pass).
            with self._lock:
                records, proposed, pushed = self._records, self._proposed, self._pushed
            rejected = self.rejected
        elif raw:
            parsed: tuple[dict[str, Entry], Any, Any] | None
            try:
                if packed:
                    what = f"state ConfigMap {self.namespace}/{self.name} binaryData key {self.packed_key}"
                    text = unpack(str(packed), what)
                    check_json(text, what, max_bytes=MAX_RECORD_JSON, max_values=MAX_RECORD_VALUES)
                else:
                    text = raw
                    check_json(text, f"state {self.describe()}", max_values=MAX_RECORD_VALUES)
                parsed = self._read(text)
            except ValueError:
                parsed = None
            except InputRejected as exc:
                # The record is a base only: without it directions are unknown (proposed in
                # a PR, never committed), which is safe. Loud, and counted by the loop.
                rejected = exc.message
                event(log, logging.ERROR, "state record refused; starting from an empty one",
                      ref=f"ConfigMap/{self.namespace}/{self.name}", key=self.key, error=exc.message)
                parsed = {}, None, None
            if parsed is not None:
                records, found, heads = parsed  # the objects' entries packed as read (``_read``)
                if isinstance(heads, list):
                    pushed = [h for h in heads if isinstance(h, str)][-MAX_PUSHED:]
                if isinstance(found, dict):
                    proposed = {str(k): {str(p): list(vs) for p, vs in v.items()
                                         if isinstance(vs, list) and _is_path_key(p)}
                                for k, v in found.items() if isinstance(v, dict)}
            else:
                event(log, logging.WARNING, "state record is not a JSON map; starting from an empty one",
                      ref=f"ConfigMap/{self.namespace}/{self.name}", key=self.key)
        self.rejected = rejected
        with self._lock:
            self._configmap, self._records, self._proposed, self._loaded = cm, records, proposed, True
            self._pushed = pushed
            self._raw = raw

    def _read(self, text: str) -> tuple[dict[str, Entry], Any, Any]:
        """The record's JSON map ``text`` (within the bounds already), read a member at a time:
        the objects' entries, packed as each is parsed (the whole record is never held parsed),
        and the values of ``proposed`` and ``pushed`` (None when absent). A later member of
        the same key replaces an earlier one, as with ``json.loads``; ``ValueError`` when
        ``text`` is not one JSON map."""
        records: dict[str, Entry] = {}
        found: Any = None
        heads: Any = None
        try:
            for key, value in recordtext.members(text):
                if key == PROPOSED:
                    found = value
                elif key == PUSHED:
                    heads = value
                else:
                    records.pop(key, None)
                    if isinstance(value, dict):
                        records[key] = (self._texts.pack(_kind(key), recordtext.canonical(value)), None)
        except RecursionError:  # cannot happen under the depth bound; never let it escape anyway
            raise InputRejected(f"state {self.describe()}: JSON nested too deeply; not read", transient=False) from None
        return records, found, heads

    def record(self, agreed: Mapping[ObjectRef, JSON], keep: Iterable[ObjectRef]) -> bool:
        """Record ``agreed`` objects, drop records of objects not in ``keep``; True if written.

        One write at most; none when the record would not change. A 409 (someone wrote in
        between) re-reads the ConfigMap and leaves the write to the next pass.

        An agreed object that is the very object it was recorded from last time (git's parsed
        object, read-only: the parse cache hands the same one back while its file is unchanged)
        is not serialized again; the others are, and compared as text.
        """
        kept = {ref_key(r) for r in keep}
        with self._lock:
            if not self._loaded:
                raise ClusterError(f"state {self.describe()} not read yet", transient=True)
            held = self._records
            # the entries kept, none holding an object of an earlier pass (agreed ones get theirs below)
            records = {k: (v if v[1] is None else (v[0], None)) for k, v in held.items() if k in kept}
            changed = len(records) != len(held)
            for ref, data in agreed.items():
                if ref.kind in NEVER_WRITTEN:
                    continue
                key = ref_key(ref)
                old = held.get(key)
                if old is not None and old[1] is data:
                    records[key] = old
                    continue
                packed = self._texts.pack(_kind(key), recordtext.canonical(data))
                if old is None or old[0] != packed:
                    changed = True
                records[key] = (packed, data)
            proposed = {k: v for k, v in self._proposed.items() if k in kept}
            for ref, data in agreed.items():  # git and the cluster agree: older proposals are history
                fields = proposed.get(ref_key(ref))
                if fields:
                    proposed[ref_key(ref)] = {p: _since(vs, get_path(data, tuple(json.loads(p))))
                                              for p, vs in fields.items()}
            if not changed and proposed == self._proposed:
                self._records = records  # the same texts; each agreed one now knows its object
                return False
            cm, pushed = self._configmap, self._pushed
        try:
            self._write(cm, records, proposed, pushed)
        except Conflict:
            event(log, logging.INFO, "state changed underneath us; re-reading, writing at the next pass",
                  ref=f"ConfigMap/{self.namespace}/{self.name}")
            self.refresh()
            return False
        return True

    def propose(self, drifts: Iterable[Drift], head: str | None = None) -> bool:
        """Remember the values of ``drifts`` (about to be pushed) as syncer's proposals, and
        ``head``, the commit about to be the PR branch's head (what ``pushed_heads`` tells
        syncer's own branch by); True if written. Called before the push: any failure (a 409
        included) is raised, so the pass retries rather than pushing a proposal or a head that
        is not remembered."""
        with self._lock:
            if not self._loaded:
                raise ClusterError(f"state {self.describe()} not read yet", transient=True)
            proposed = {k: dict(v) for k, v in self._proposed.items()}
            for d in drifts:
                if d.ref.kind in NEVER_WRITTEN:
                    continue
                fields = proposed.setdefault(ref_key(d.ref), {})
                for edit in d.edits:
                    key = json.dumps(list(edit.path))
                    git = d.git if edit.path == d.path else None  # d.git is git's value at d.path only
                    fields[key] = _remember(list(fields.get(key) or []), edit.value, git)
            pushed = self._pushed
            if head is not None:
                pushed = ([h for h in pushed or [] if h != head] + [head])[-MAX_PUSHED:]
            if proposed == self._proposed and pushed == self._pushed:
                return False
            cm, records = self._configmap, self._records
        try:
            self._write(cm, records, proposed, pushed)
        except Conflict:
            self.refresh()
            raise ClusterError(f"{self.describe()} changed while recording a proposal; will retry",
                               transient=True) from None
        return True

    def _write(self, cm: JSON | None, records: dict[str, Entry],
               proposed: dict[str, dict[str, list[Any]]], pushed: list[str] | None) -> None:
        extra: dict[str, Any] = {}
        if proposed:
            extra[PROPOSED] = proposed
        if pushed is not None:
            extra[PUSHED] = pushed
        texts = ((k, self._texts.unpack(_kind(k), records[k][0]) if k in records else recordtext.canonical(extra[k]))
                 for k in sorted([*records, *extra]))  # object keys hold "/", the others do not
        text, packed = recordtext.encode_texts(texts, COMPRESS_OVER)  # never the whole JSON at once
        data = {k: v for k, v in ((cm or {}).get("data") or {}).items() if k != self.key}
        binary = {k: v for k, v in ((cm or {}).get("binaryData") or {}).items() if k != self.packed_key}
        if packed:
            binary[self.packed_key] = text
            raw = "gz:" + text
        else:
            data[self.key] = raw = text
        size = _configmap_bytes(data, binary)
        if size > MAX_CONFIGMAP_BYTES:
            raise ClusterError(
                f"state {self.describe()}: the record of {len(records)} objects takes {size} bytes "
                f"(compressed), more than the {MAX_CONFIGMAP_BYTES} a ConfigMap holds; not written. Directions fall back "
                "to managedFields, git history and last-applied; split the installation or give it its own "
                "--state-configmap", transient=False)
        written = self._create(data, binary) if cm is None else self._replace(cm, data, binary)
        with self._lock:
            self._configmap, self._records, self._proposed, self._pushed = written, records, proposed, pushed
            self._raw = raw
            self.writes += 1
        self.rejected = None  # our own record replaced the refused one

    def _create(self, data: dict[str, str], binary: dict[str, str]) -> JSON:
        body: JSON = {"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": self.name, "namespace": self.namespace, "labels": dict(LABELS)},
                      "data": data}
        if binary:
            body["binaryData"] = binary
        created = self.api.call("POST", self.path, body=body, what=f"create state {self.describe()}")
        if created is None:
            raise ClusterError(f"create state {self.describe()}: namespace {self.namespace} not found")
        return created

    def _replace(self, cm: JSON, data: dict[str, str], binary: dict[str, str]) -> JSON:
        # metadata.resourceVersion stays: it is the precondition of the PUT. Other keys (other
        # installations' records) were carried over by the caller.
        meta = {k: v for k, v in (cm.get("metadata") or {}).items() if k != "managedFields"}
        body: JSON = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}
        if binary:
            body["binaryData"] = binary
        replaced = self.api.call("PUT", f"{self.path}/{self.name}", body=body,
                        what=f"update state {self.describe()}")
        if replaced is None:  # deleted since we read it: create it again at the next pass
            with self._lock:
                self._configmap = None
            raise Conflict(f"update state {self.describe()}: deleted meanwhile", 409)
        return replaced


def _is_path_key(key: object) -> bool:
    """A proposal's field key is the JSON of a path (a list of strings and indexes); anything
    else in a hand-edited record is dropped at reading, so one bad key cannot fail one object's
    comparison later (the sidecar skips objects known in sync without asking the record)."""
    try:
        path = json.loads(key) if isinstance(key, str) else None
    except ValueError:
        return False
    return isinstance(path, list) and all(isinstance(p, (str, int)) and not isinstance(p, bool) for p in path)
