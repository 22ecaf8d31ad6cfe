"""syncer's error tree, the one drawing of it (``tests/test_errors_tree.py`` keeps it complete):
errors are translated at the boundaries with ``raise ... from``.

    SyncerError
     ├── ConfigError               bad syncer.conf, bad manifests, bad flags        (permanent)
     │    ├── YamlEditError        (yamledit) malformed YAML, a missing path, an edit not surgical
     │    └── StartupError         (sidecar.app) the sidecar cannot run as configured
     ├── ClusterError              the Kubernetes API or a snapshot file failed
     │    ├── InputRejected        (bounds) a live or state input over a size/depth limit
     │    ├── EventTooLarge        (kube.budget) one watch event longer than its limit: that object's error
     │    ├── OverBudget           (kube.budget) the watch streams together hold their memory budget
     │    ├── Unreachable          (here) no complete answer: what detection raises (ClusterUnreachable is one)
     │    ├── Forbidden            (here) 403: costs that object only (Refused is one)
     │    ├── CredentialsRejected  (here) 401, or no credential to send: nothing can be read (Unauthorized, NoCredentials are one)
     │    ├── Unserved             (here) the object's API is not served (NotServed is one)
     │    └── KubeError            (kube) a request to the API server failed
     │         ├── ClusterUnreachable  no complete answer: refused, reset, timed out, TLS failure
     │         │    └── TooLarge       the answer grew past ``max_body`` bytes
     │         ├── Unparsable          the answer is over the nesting limit
     │         ├── NoCredentials       the token file or the credential plugin failed: also a CredentialsRejected
     │         └── ApiError            the server answered with a non-2xx status (``.status``)
     │              ├── Unauthorized   401: the credentials themselves were rejected; also a CredentialsRejected
     │              ├── Refused        403: this account may not do this
     │              ├── Conflict       409
     │              ├── NotServed      (served) discovery lacks the object's group-version or kind
     │              └── Gone           410: the resourceVersion left the server's history
     ├── GitError                  clone / commit / push failed
     │    ├── GitAuthFailed        (gitoutcome) the remote rejected the credentials (401, "Authentication failed", publickey)
     │    ├── GitAccessDenied      (gitoutcome) the remote knows the credentials, which may not do this (403)
     │    ├── GitRemoteNotFound    (gitoutcome) no repository there (404, not a git repository)
     │    ├── PushRefused          (gitoutcome) a hook or the server refused the push; its ``remote:`` lines quoted
     │    └── KeptMoving           (writeback.landing) commit mode: every push lost the race to other pushes
     └── ForgeError                a forge (GitHub, Gitea, GitLab) API call failed
          ├── PullRequestExists    (here) "already open": the lifecycle adopts that one
          ├── ForgeAuthFailed      (here) the forge rejected the token (401)
          └── ForgeRateLimited     (forges._http) asked to wait past the retry budget

    Outside the tree: httpx's errors, as the forges' HTTP layer raises them (``httpbound``)
     ├── DeadlineExceeded (httpx.TimeoutException)   the whole exchange outran its deadline
     └── ResponseTooLarge (httpx.HTTPError)          the body passed ``max_bytes``
    and private signals caught in the module that raises them, never shown as they are:
     ├── UsageError   (clitwins)             a bad flag or environment twin: one line, exit 2
     ├── EditRefused  (yamledit._verify)     an edit would not read back as intended
     ├── _Unusual     (manifests)            a document left to ruamel's constructor
     ├── NotWritable (sources.kustomize.places)  a field's source cannot be told or written
     └── _Refused     (helm.sourcemap)       no single values line renders a field, or its edit is not proven

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
    """syncer.conf, a manifest or a command-line flag is wrong. Never retried."""


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


class Unserved(ClusterError):
    """The cluster does not serve the object's API (``served.NotServed``, decided by discovery):
    ``ref`` the object; ``same_group`` the apiVersions of its own group that serve the kind,
    ``other_groups`` one of another group that serves a kind of that name (both asked when
    raised, so judging it reads nothing)."""

    ref: object = None
    same_group: tuple[str, ...] = ()
    other_groups: tuple[str, ...] = ()


class Forbidden(ClusterError):
    """403: the account may not read or write this (``kube.Refused``); it costs that object only."""


class CredentialsRejected(ClusterError):
    """The API server rejected syncer's credentials (401: a token expired, revoked, or of a
    ServiceAccount deleted and made again), or there was no credential to send (the token file
    cannot be read, the credential plugin failed). Nothing can be read with them: like
    ``Unreachable`` it ends a detection, it is never one object's RBAC warning
    (``kube.Unauthorized``, ``kube.NoCredentials``). Permanent (someone must give syncer a
    valid token), though the sidecar's watches keep trying: a rotated token heals it."""


#: What makes a whole detection impossible (raised through it, never costing one object).
NOTHING_READABLE: tuple[type[ClusterError], ...] = (Unreachable, CredentialsRejected)


class ForgeAuthFailed(ForgeError):
    """The forge rejected syncer's token (401): expired, revoked, or the wrong one."""
