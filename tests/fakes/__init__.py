"""Test doubles that speak real wire protocols over loopback sockets."""

from .kube_api import FakeKubeAPI, RequestRecord, Resource

__all__ = ["FakeKubeAPI", "RequestRecord", "Resource"]
