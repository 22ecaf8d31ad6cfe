"""Tests against a real kube-apiserver + etcd (see docs/realapi.md)."""
