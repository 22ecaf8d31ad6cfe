"""syncer: copy live Kubernetes values back into the manifests kept in git."""

__version__ = "0.1.0"
