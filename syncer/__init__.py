"""syncer: copy live Kubernetes values back into the manifests kept in git."""

__version__ = "0.1.0"

#: Sent on every HTTP request syncer makes (Kubernetes API, forges, webhooks, git over HTTP), so an
#: audit log or a forge's request log can tell syncer from any other client.
USER_AGENT = f"syncer/{__version__}"
