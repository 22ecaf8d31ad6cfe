"""A fake Kubernetes API server that speaks the real JSON wire format.

It runs a ``ThreadingHTTPServer`` on 127.0.0.1 (ephemeral port) in a daemon
thread, so the product's real client stack (the official ``kubernetes``
client, urllib3, ``kubernetes.watch``) is exercised end to end.

What it models, as the real kube-apiserver does:

* discovery (``/api``, ``/api/v1``, ``/apis``, ``/apis/{g}``, ``/apis/{g}/{v}``,
  ``/version``), bearer-token authentication (401), RBAC-style 403 messages;
* get / list (``fieldSelector``, ``labelSelector``, ``limit``/``continue``
  served from a consistent snapshot) / watch (replay from a resourceVersion,
  synthetic ADDED for rv "0" or unset, BOOKMARKs, ``timeoutSeconds``,
  410 after compaction, chunked newline-delimited JSON);
* create (POST, 409 AlreadyExists), replace (PUT, 409 Conflict on a stale
  ``metadata.resourceVersion``), PATCH (merge, strategic merge, JSON patch;
  server-side apply answers 415), DELETE and DELETE-collection;
* one global, etcd-like resourceVersion counter shared by every kind;
* ``metadata.managedFields`` with ``FieldsV1`` sets and ownership transfer
  between managers, following the structured-merge-diff update rules;
* ``Status`` bodies with the real reasons and messages.

Deliberate simplifications: no defaulting (e.g. ``protocol: TCP``) or schema
validation beyond object names, no finalizers / graceful deletion, no
namespace existence checks, a small built-in schema for list keys and atomic
fields, incoming ``metadata.managedFields`` are ignored.
"""

from .fixture import fake_kube_fixture
from .patches import json_patch, merge_patch
from .rbac import DEFAULT_USER
from .request_log import RequestRecord
from .resources import DEFAULT_RESOURCES, Resource
from .selectors import parse_field_selector, parse_label_selector
from .server import FakeKubeAPI
from .status import status_body
from .store import LAST_APPLIED
from .watch import iter_events

__all__ = ["DEFAULT_RESOURCES", "DEFAULT_USER", "LAST_APPLIED", "FakeKubeAPI", "RequestRecord", "Resource",
           "fake_kube_fixture", "iter_events", "json_patch", "merge_patch", "parse_field_selector",
           "parse_label_selector", "status_body"]
