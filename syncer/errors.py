"""syncer's own error tree, translated at the boundaries with ``raise ... from``.

    SyncerError
     ├── ConfigError      bad syncer.yaml, bad manifests, bad flags       (permanent)
     ├── ClusterError     the Kubernetes API or a snapshot file failed
     ├── GitError         clone / commit / push failed
     └── ForgeError       a forge (GitHub, Gitea, GitLab) API call failed
          └── PullRequestExists   "already open": the lifecycle adopts that one

Every error carries ``transient``: True when retrying the same call later may succeed
(timeouts, 5xx, 429, a push race), False when a human has to change something first
(401/403/404, malformed YAML, unknown config key).  Messages are one line and name the
file, object or field at fault.
"""

from __future__ import annotations


class SyncerError(Exception):
    """Base of every error syncer reports to the user."""

    transient: bool = False

    def __init__(self, message: str, *, transient: bool | None = None) -> None:
        super().__init__(message)
        if transient is not None:
            self.transient = transient

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class ConfigError(SyncerError):
    """syncer.yaml, a manifest or a command-line flag is wrong. Never retried."""


class ClusterError(SyncerError):
    """Reading live objects failed (API server unreachable, 403, bad snapshot)."""


class GitError(SyncerError):
    """A git operation failed (clone, fetch, commit, push)."""


class ForgeError(SyncerError):
    """A forge API call failed."""


class PullRequestExists(ForgeError):
    """The forge refused to open a pull request because one from ``head`` into ``base`` is
    already open (another replica or an earlier, interrupted run opened it). Not a failure:
    the pull-request lifecycle adopts the open one."""

    transient = True

    def __init__(self, message: str, *, head: str, base: str) -> None:
        super().__init__(message)
        self.head = head
        self.base = base


class Unreachable(ClusterError):
    """No complete answer from the API server: nothing can be compared (``kube.ClusterUnreachable``)."""

    transient = True


class Forbidden(ClusterError):
    """401 / 403: the account may not read or write this (``kube.Refused``)."""
