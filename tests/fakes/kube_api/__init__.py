"""The fake Kubernetes API server (see :mod:`.server`), importable as before."""

from .server import DEFAULT_RESOURCES, LAST_APPLIED, FakeKubeAPI, RequestRecord, Resource, fake_kube_fixture

__all__ = ["DEFAULT_RESOURCES", "LAST_APPLIED", "FakeKubeAPI", "RequestRecord", "Resource", "fake_kube_fixture"]
