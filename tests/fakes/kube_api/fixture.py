"""The ``fake_kube`` pytest fixture: a started fake, stopped afterwards, with no internal errors."""

from __future__ import annotations

from typing import Iterator

from .server import FakeKubeAPI

try:  # pytest fixture: register with ``from tests.fakes.kube_api import fake_kube_fixture`` in a conftest
    import pytest as _pytest

    @_pytest.fixture(name="fake_kube")
    def fake_kube_fixture() -> Iterator[FakeKubeAPI]:
        """A started :class:`FakeKubeAPI` (function scope), stopped afterwards."""
        with FakeKubeAPI() as api:
            yield api
        assert not api.errors, "the fake kube API hit an internal error:\n" + api.errors[0]
except ImportError:  # pragma: no cover - pytest is only needed for the fixture
    pass
