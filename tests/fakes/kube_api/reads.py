"""Reads: list with field/label selectors and consistent ``limit``/``continue`` pages."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

from .http import _Handler
from .resources import Resource
from .selectors import _Pred
from .status import _ApiError, _bad_request


class ReadsMixin:
    """List with selectors and ``limit``/``continue`` paging from a consistent snapshot."""

    @staticmethod
    def _encode_continue(rv: int, start: str) -> str:
        raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}, separators=(",", ":"))
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    @staticmethod
    def _decode_continue(token: str) -> tuple[int, str]:
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            doc = json.loads(raw)
            if doc.get("v") != "meta.k8s.io/v1":
                raise ValueError
            return int(doc["rv"]), str(doc["start"])
        except (ValueError, KeyError, TypeError):
            raise _bad_request("continue key is not valid: incorrect encoded start resourceVersion "
                               "(version meta.k8s.io/v1)") from None

    def _serve_list(self, h: _Handler, res: Resource, ns: str, fpreds: list[_Pred], lpreds: list[_Pred],
                    query: dict[str, str]) -> None:
        limit_s = query.get("limit") or "0"
        try:
            limit = max(int(limit_s), 0)
        except ValueError:
            raise _bad_request(f'strconv.ParseInt: parsing "{limit_s}": invalid syntax') from None
        token = query.get("continue") or ""
        with self._lock:
            if token:
                rv, start = self._decode_continue(token)
                if rv < self._min_watch_rv:
                    raise _ApiError(410, "Expired",
                                    "The provided continue parameter is too old to display a consistent list "
                                    "result. You can start a new list without the continue parameter, or use "
                                    "the continue token in this response to retrieve the remainder of the "
                                    "results. Continuing with the provided token results in an inconsistent "
                                    "list - objects that were created, modified, or deleted between the time "
                                    "the first chunk was returned and now may show up in the list.")
                state = self._snapshot(res, rv)
            else:
                rv, start = self._rv, ""
                state = {(k[1], k[2]): o for k, o in self._objects.items() if k[0] == res}
            rows = []
            for (ons, oname), obj in state.items():
                if ns and ons != ns:
                    continue
                key = f"{ons}/{oname}" if res.namespaced else oname
                if start and key < start:
                    continue
                if all(p(obj) for p in fpreds + lpreds):
                    rows.append((key, obj))
            rows.sort(key=lambda kv: kv[0])
            meta: dict[str, Any] = {"resourceVersion": str(rv)}
            if limit and len(rows) > limit:
                meta["continue"] = self._encode_continue(rv, rows[limit - 1][0] + "\x00")
                if not fpreds and not lpreds:
                    meta["remainingItemCount"] = len(rows) - limit
                rows = rows[:limit]
            items = []
            for _, obj in rows:
                item = copy.deepcopy(obj)
                item.pop("kind", None)
                item.pop("apiVersion", None)
                items.append(item)
        self._send_json(h, 200, {"kind": res.list_kind, "apiVersion": res.api_version, "metadata": meta,
                                 "items": items})
