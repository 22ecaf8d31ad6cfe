"""The apiserver's validation the fake models (EndpointSlice addresses and limits, the
ConfigMap size limit)."""

from __future__ import annotations

import re
from typing import Any

from .resources import Resource
from .status import _invalid


_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


_DNS_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


_ADDRESS_TYPES = ("FQDN", "IPv4", "IPv6")


def _address_ok(address_type: str, text: str) -> str:
    """'' when ``text`` is a valid address of ``address_type``, else the apiserver's complaint."""
    import ipaddress

    if address_type == "FQDN":
        ok = len(text) <= 253 and _DNS_SUBDOMAIN.fullmatch(text) is not None
        return "" if ok else _DNS_SUBDOMAIN_MSG
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        ip = None
    want = 4 if address_type == "IPv4" else 6
    return "" if ip is not None and ip.version == want else f"must be a valid {address_type} address"


def _validate_endpoint_slice(res: Resource, name: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """The checks of ``ValidateEndpointSlice`` that a reconciler or a test can trip over:
    addressType required, supported and immutable; each endpoint has 1-100 addresses of
    that type; at most 1000 endpoints and 100 ports."""
    causes: list[tuple[str, str, str]] = []
    atype = obj.get("addressType")
    if not atype:
        causes.append(("FieldValueRequired", "addressType", "Required value"))
    elif atype not in _ADDRESS_TYPES:
        causes.append(("FieldValueNotSupported", "addressType", f'Unsupported value: "{atype}": supported values: '
                       + ", ".join(f'"{t}"' for t in _ADDRESS_TYPES)))
    elif old is not None and old.get("addressType") != atype:
        causes.append(("FieldValueInvalid", "addressType", f'Invalid value: "{atype}": field is immutable'))
    endpoints = obj.get("endpoints") or []
    if len(endpoints) > 1000:
        causes.append(("FieldValueTooMany", "endpoints", f"Too many: {len(endpoints)}: must have at most 1000 items"))
    for i, ep in enumerate(endpoints if isinstance(endpoints, list) else []):
        addresses = ep.get("addresses") if isinstance(ep, dict) else None
        if not addresses:
            causes.append(("FieldValueRequired", f"endpoints[{i}].addresses",
                           "Required value: must contain at least 1 address"))
            continue
        if len(addresses) > 100:
            causes.append(("FieldValueTooMany", f"endpoints[{i}].addresses",
                           f"Too many: {len(addresses)}: must have at most 100 items"))
        for j, addr in enumerate(addresses):
            why = _address_ok(str(atype), str(addr)) if atype in _ADDRESS_TYPES else ""
            if why:
                causes.append(("FieldValueInvalid", f"endpoints[{i}].addresses[{j}]", f'Invalid value: "{addr}": {why}'))
    if len(obj.get("ports") or []) > 100:
        causes.append(("FieldValueTooMany", "ports", f"Too many: {len(obj['ports'])}: must have at most 100 items"))
    if causes:
        raise _invalid(res, name, causes)


#: ``core.MaxSecretSize``: the apiserver refuses a ConfigMap whose values (``data`` strings,
#: ``binaryData`` decoded bytes; keys not counted) add up to more.
MAX_CONFIGMAP_BYTES = 1024 * 1024


def _validate_configmap(res: Resource, name: str, obj: dict[str, Any]) -> None:
    import base64
    import binascii

    total = sum(len(str(v).encode()) for v in (obj.get("data") or {}).values())
    for v in (obj.get("binaryData") or {}).values():
        try:
            total += len(base64.b64decode(str(v), validate=True))
        except binascii.Error:
            raise _invalid(res, name, [("FieldValueInvalid", "binaryData", "Invalid value: illegal base64 data")])
    if total > MAX_CONFIGMAP_BYTES:
        raise _invalid(res, name, [("FieldValueTooLong", "[]", f"Too long: must have at most {MAX_CONFIGMAP_BYTES} bytes")])
