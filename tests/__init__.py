"""syncer's tests, a package so that the fakes and helpers import the same way from pytest
(``tests.fakes.kube_api``, ``tests.conftest``) and from the benchmarks (``python -m bench``)."""
