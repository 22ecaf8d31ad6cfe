"""``syncer version``: syncer's own version and, unless ``--client``, the API server's, as
``kubectl version`` prints them (text, ``-o json`` or ``-o yaml``)."""

from __future__ import annotations

import argparse
import io
import platform
import sys
from datetime import datetime
from typing import TextIO

from syncer import __version__, clients
from syncer.writeback import jsondoc
from syncer.commands import EXIT_OK
from syncer.errors import SyncerError
from syncer.model import JSON


def client_version() -> dict[str, str]:
    return {"version": __version__, "pythonVersion": platform.python_version(),
            "platform": f"{sys.platform}/{platform.machine().lower() or 'unknown'}"}


def cmd_version(args: argparse.Namespace, now: datetime, stdout: TextIO) -> int:
    """0 with both versions (or the client's alone with ``--client``); 2 when the server could not
    be asked: the client's version is printed all the same, the error is raised after it."""
    doc: JSON = {"clientVersion": client_version()}
    failure: SyncerError | None = None
    if not args.client:
        try:
            server = clients.api_client(args).call("GET", "/version", what="GET /version")
            doc["serverVersion"] = server if server is not None else {}
        except SyncerError as exc:
            failure = exc
    if args.output == "json":
        stdout.write(jsondoc.dumps(jsondoc.with_schema("version", doc)))
    elif args.output == "yaml":
        stdout.write(_yaml(jsondoc.with_schema("version", doc)))
    else:
        stdout.write(f"Client Version: {__version__}\n")
        if "serverVersion" in doc:
            stdout.write(f"Server Version: {doc['serverVersion'].get('gitVersion', '?')}\n")
    if failure is not None:
        raise failure
    return EXIT_OK


def _yaml(doc: JSON) -> str:
    from ruamel.yaml import YAML

    out = io.StringIO()
    yaml = YAML()  # round-trip: the keys in the document's order, schema first
    yaml.dump(doc, out)
    return out.getvalue()
