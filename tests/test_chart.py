"""Checks of the Helm chart in charts/syncer.

Every scenario in charts/syncer/ci/ is rendered with the real `helm template`,
each manifest is validated against the Kubernetes 1.30 OpenAPI schema
(kubernetes-validate, strict: unknown fields fail), and the properties the
chart promises are asserted on the parsed objects: namespaced least-privilege
RBAC, credentials only as mounted files, a restricted security context, probes
on the `http` port, and a sidecar patch identical to the standalone container.

helm comes from `.ci/helm.sh`. Without it these tests skip, except under CI
(env CI set), where a missing helm is a failure rather than a silent skip.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from syncer.grants import CHART_KINDS

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "charts" / "syncer"
SCENARIOS = sorted((CHART / "ci").glob("*-values.yaml"))
INVALID = sorted((CHART / "ci-invalid").glob("*.yaml"))
SIDECAR_VALUES = CHART / "ci" / "sidecar-values.yaml"
PATCH_EXAMPLE = CHART / "examples" / "asgard-manager-sidecar-patch.yaml"
WITH_SIDECAR_EXAMPLE = CHART / "examples" / "asgard-manager-with-sidecar.yaml"

RELEASE = "syncer"
NAMESPACE = "ai"
# The oldest Kubernetes minor the chart is checked against; kubernetes-validate
# 1.37 ships schemas back to 1.25.
K8S_VERSION = "1.30"
READ_VERBS = {"get", "list", "watch"}
CREDENTIAL_DIR = "/var/run/syncer/"

Manifest = dict[str, Any]


def _missing(what: str) -> None:
    message = f"{what}; run `bash .ci/helm.sh` to install it"
    if os.environ.get("CI"):
        pytest.fail(f"{message} (CI is set, so this is an error, not a skip)", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def helm() -> str:
    path = shutil.which("helm")
    if path is None:
        _missing("helm is not on PATH")
    assert path is not None
    return path


@pytest.fixture(scope="session")
def k8s_validate() -> Any:
    try:
        import kubernetes_validate
    except ImportError:
        _missing("kubernetes-validate is not installed")
    return kubernetes_validate


def _run_helm(*args: str) -> subprocess.CompletedProcess[str]:
    helm_path = shutil.which("helm")
    assert helm_path is not None
    return subprocess.run(
        [helm_path, *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


@functools.lru_cache(maxsize=None)
def _render_text(values: Path, sets: tuple[str, ...] = ()) -> str:
    args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE, "-f", str(values)]
    for item in sets:
        args += ["--set", item]
    proc = _run_helm(*args)
    if proc.returncode != 0:
        raise AssertionError(f"helm template {values.name} {sets} failed:\n{proc.stderr}")
    return proc.stdout


def render(values: Path, *sets: str) -> list[Manifest]:
    """Rendered manifests (fresh copies, so tests may modify them)."""
    docs = yaml.safe_load_all(_render_text(values, tuple(sets)))
    return [copy.deepcopy(d) for d in docs if d]


def render_fails(values: Path, *sets: str) -> str:
    args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE, "-f", str(values)]
    for item in sets:
        args += ["--set", item]
    proc = _run_helm(*args)
    assert proc.returncode != 0, f"helm template accepted {values.name} {sets}"
    return proc.stderr


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def values_of(scenario: Path) -> dict[str, Any]:
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    return _deep_merge(defaults, yaml.safe_load(scenario.read_text()) or {})


def by_kind(docs: list[Manifest], kind: str) -> list[Manifest]:
    return [d for d in docs if d["kind"] == kind]


def one(docs: list[Manifest], kind: str) -> Manifest:
    found = by_kind(docs, kind)
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0]


def sidecar_patch(docs: list[Manifest]) -> Manifest:
    cm = next(d for d in by_kind(docs, "ConfigMap") if d["metadata"]["name"].endswith("-sidecar-patch"))
    patch = yaml.safe_load(cm["data"]["patch.yaml"])
    assert isinstance(patch, dict)
    return patch


def pod_specs(docs: list[Manifest]) -> Iterator[Manifest]:
    """Pod specs that carry the syncer container: the Deployment's, the CronJob's, or the patch's."""
    for doc in docs:
        if doc["kind"] == "Deployment":
            yield doc["spec"]["template"]["spec"]
        elif doc["kind"] == "CronJob":
            yield doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        elif doc["kind"] == "ConfigMap" and doc["metadata"]["name"].endswith("-sidecar-patch"):
            yield sidecar_patch([doc])["spec"]["template"]["spec"]


def syncer_container(pod: Manifest) -> Manifest:
    return next(c for c in pod["containers"] if c["name"] == "syncer")


def env_of(container: Manifest) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container.get("env", [])}


def walk(node: Any) -> Iterator[tuple[str, Any]]:
    """Every (key, value) pair in a nested structure."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield key, value
            yield from walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from walk(item)


scenario_ids = [p.name.removesuffix("-values.yaml") for p in SCENARIOS]


@pytest.fixture(params=SCENARIOS, ids=scenario_ids)
def scenario(request: pytest.FixtureRequest, helm: str) -> Path:
    path: Path = request.param
    return path


def test_scenarios_exist() -> None:
    names = {p.name for p in SCENARIOS}
    assert {
        "standalone-values.yaml",
        "sidecar-values.yaml",
        "ssh-values.yaml",
        "leader-election-values.yaml",
        "cronjob-values.yaml",
    } <= names
    assert INVALID, "charts/syncer/ci-invalid/ must hold values that have to fail"


def test_manifests_match_kubernetes_schema(scenario: Path, k8s_validate: Any) -> None:
    docs = render(scenario)
    assert docs
    for doc in docs:
        if doc["apiVersion"].startswith("monitoring.coreos.com/"):
            # A CRD: kubernetes-validate has no schema for it; check its shape.
            assert doc["kind"] == "ServiceMonitor"
            assert set(doc["spec"]) == {"namespaceSelector", "selector", "endpoints"}
            assert doc["spec"]["endpoints"][0]["port"] == "http"
            assert doc["spec"]["endpoints"][0]["path"] == "/metrics"
            continue
        k8s_validate.validate(doc, K8S_VERSION, strict=True)
    for pod in pod_specs(docs):
        # The patch is a fragment; validate its pod spec as a whole Pod.
        k8s_validate.validate(
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": pod},
            K8S_VERSION,
            strict=True,
        )


def test_nothing_cluster_wide(scenario: Path) -> None:
    for doc in render(scenario):
        assert doc["kind"] not in {"ClusterRole", "ClusterRoleBinding"}
        assert doc["metadata"].get("namespace") == NAMESPACE, doc["kind"]
        if doc["kind"] == "RoleBinding":
            assert doc["roleRef"]["kind"] == "Role"


def test_role_is_least_privilege(scenario: Path) -> None:
    values = values_of(scenario)
    docs = render(scenario)
    rules = one(docs, "Role")["rules"]
    container = syncer_container(next(pod_specs(docs)))
    env = env_of(container)
    state_name = env.get("SYNCER_STATE_CONFIGMAP")
    lease_name = env.get("SYNCER_LEASE_NAME")

    tracked: dict[tuple[str, str], set[str]] = {}
    if values["tracked"]["configMaps"]:
        tracked[("", "configmaps")] = set(values["tracked"]["configMaps"])
    if values["tracked"]["endpoints"]:
        tracked[("", "endpoints")] = set(values["tracked"]["endpoints"])
    for extra in values["tracked"]["extra"]:
        tracked.setdefault((extra["apiGroup"], extra["resource"]), set()).update(extra["names"])
    for kind, names in (values["tracked"].get("kinds") or {}).items():
        if names:
            tracked.setdefault(CHART_KINDS[kind], set()).update(names)

    seen_reads: dict[tuple[str, str], set[str]] = {}
    others = []
    for rule in rules:
        assert "*" not in rule["verbs"] and "*" not in rule["resources"]
        assert "*" not in rule.get("apiGroups", [])
        assert "nonResourceURLs" not in rule
        (group,) = rule["apiGroups"]
        (resource,) = rule["resources"]
        if set(rule["verbs"]) <= READ_VERBS:
            assert set(rule["verbs"]) == READ_VERBS
            assert rule.get("resourceNames"), f"read rule without resourceNames: {rule}"
            seen_reads.setdefault((group, resource), set()).update(rule["resourceNames"])
        else:
            others.append((group, resource, tuple(sorted(rule["verbs"])), tuple(rule.get("resourceNames", []))))
    assert seen_reads == tracked

    expected = []
    if values["mode"] == "cronjob":  # a one-shot sync keeps no state record: read rules only
        assert state_name is None
    else:
        expected.append(("", "configmaps", ("get", "patch", "update"), (state_name,)))
        if values["state"]["create"]:
            expected.append(("", "configmaps", ("create",), ()))
    if values["leaderElection"]["enabled"]:
        assert lease_name
        expected.append(("coordination.k8s.io", "leases", ("get", "update"), (lease_name,)))
        expected.append(("coordination.k8s.io", "leases", ("create",), ()))
    else:
        assert lease_name is None
    if values.get("untracked", {}).get("enabled"):
        expected += [(r.get("apiGroup", ""), r["resource"], ("list",), ()) for r in values["untracked"]["resources"]]
    assert sorted(others) == sorted(expected)


def test_rolebinding_targets_the_pods_service_account(scenario: Path) -> None:
    docs = render(scenario)
    binding = one(docs, "RoleBinding")
    (subject,) = binding["subjects"]
    assert subject["kind"] == "ServiceAccount"
    assert binding["roleRef"]["name"] == one(docs, "Role")["metadata"]["name"]
    for pod in pod_specs(docs):
        assert pod["serviceAccountName"] == subject["name"]
    if values_of(scenario)["serviceAccount"]["create"]:
        assert one(docs, "ServiceAccount")["metadata"]["name"] == subject["name"]
    else:
        assert not by_kind(docs, "ServiceAccount")


def test_credentials_only_as_files_from_the_existing_secret(scenario: Path) -> None:
    values = values_of(scenario)
    docs = render(scenario)
    assert not by_kind(docs, "Secret"), "the chart must only reference a Secret, never render one"
    for key, value in walk(docs):
        assert key not in {"secretKeyRef", "secretRef"}, "secrets must not reach the environment"
        if key == "data" and isinstance(value, dict):
            # Only the sidecar patch ConfigMap carries data; it holds no secret value.
            assert set(value) <= {"patch.yaml"}

    pod = next(pod_specs(docs))
    container = syncer_container(pod)
    env = env_of(container)
    assert "envFrom" not in container
    for name, value in env.items():
        if any(word in name for word in ("TOKEN", "PASSWORD", "SECRET")):
            assert name.endswith("_FILE"), f"{name} must point at a file, not hold a credential"
            assert value.startswith(CREDENTIAL_DIR), f"{name}={value} is not a mounted file path"
    forge = values["sync"]["forge"]
    app = values["credentials"].get("githubApp", {}).get("id")
    if forge == "none" or app:
        assert "SYNCER_TOKEN_FILE" not in env
    else:
        assert env["SYNCER_TOKEN_FILE"] == "/var/run/syncer/forge/token"
    if app:  # a GitHub App: its private key, never a token, and the installation token for git too
        assert (env["SYNCER_GITHUB_APP_ID"], env["SYNCER_GITHUB_APP_KEY_FILE"]) == (app, "/var/run/syncer/forge/app-key.pem")

    secret_volumes = [v for v in pod["volumes"] if "secret" in v]
    assert secret_volumes
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    keys: set[str] = set()
    for volume in secret_volumes:
        secret = volume["secret"]
        assert secret["secretName"] == values["credentials"]["existingSecret"]
        assert secret["defaultMode"] == 0o400
        keys |= {item["key"] for item in secret["items"]}
        assert mounts[volume["name"]]["readOnly"] is True
        assert mounts[volume["name"]]["mountPath"].startswith(CREDENTIAL_DIR)
    expected = {"githubAppPrivateKey"} if app else {"forgeToken"} if forge != "none" else set()
    if values["credentials"]["gitAuth"] == "https" and app:
        assert "SYNCER_GIT_TOKEN_FILE" not in env and "GIT_SSH_COMMAND" not in env
    elif values["credentials"]["gitAuth"] == "https":
        expected |= {"gitToken"}
        assert env["SYNCER_GIT_TOKEN_FILE"] == "/var/run/syncer/git/token"
        assert "GIT_SSH_COMMAND" not in env
    else:
        expected |= {"sshPrivateKey", "knownHosts"}
        ssh = env["GIT_SSH_COMMAND"].split()
        assert "StrictHostKeyChecking=yes" in ssh
        assert "UserKnownHostsFile=/var/run/syncer/git/known_hosts" in ssh
        assert ssh[ssh.index("-i") + 1] == "/var/run/syncer/git/id_key"
    assert keys == expected


def test_restricted_security_context(scenario: Path) -> None:
    docs = render(scenario)
    for pod in pod_specs(docs):
        container = syncer_container(pod)
        sc = container["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False
        assert sc["readOnlyRootFilesystem"] is True
        assert sc["capabilities"] == {"drop": ["ALL"]}
        assert sc["runAsNonRoot"] is True
        assert sc["runAsUser"] == 10001
        assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
        assert pod["securityContext"]["fsGroup"] == 10001
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        volumes = {v["name"]: v for v in pod["volumes"]}
        for path in ("/work", "/tmp"):
            assert "emptyDir" in volumes[mounts[path]], f"{path} must be an emptyDir"
        assert container["resources"] == {
            "requests": {"cpu": "10m", "memory": "64Mi"},
            "limits": {"memory": "128Mi"},
        }
    for pod in pod_specs(docs):
        if "runAsUser" not in pod["securityContext"]:
            continue  # the sidecar patch carries only fsGroup: the reconciler's pod keeps its own
        psc = pod["securityContext"]
        assert psc["runAsNonRoot"] is True
        assert psc["runAsUser"] == 10001
        assert psc["seccompProfile"] == {"type": "RuntimeDefault"}


def test_probes_use_the_http_port(scenario: Path) -> None:
    for pod in pod_specs(render(scenario)):
        container = syncer_container(pod)
        installation = values_of(scenario)["installation"]
        if values_of(scenario)["mode"] == "cronjob":  # a one-shot run: no server, no probes
            assert container["args"] == ["sync", installation]
            assert not {"ports", "livenessProbe", "readinessProbe"} & set(container)
            continue
        (port,) = container["ports"]
        assert port["name"] == "http"
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
        assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
        assert container["args"][:2] == ["run", installation]
        assert container["args"][2:] == ["--listen", f"0.0.0.0:{port['containerPort']}"]


def test_flags_reach_the_container_as_env_twins(scenario: Path) -> None:
    values = values_of(scenario)
    env = env_of(syncer_container(next(pod_specs(render(scenario)))))
    sync = values["sync"]
    assert env["SYNCER_MODE"] == sync["mode"]
    assert env["SYNCER_FORGE"] == sync["forge"]
    assert env["SYNCER_REMOTE"] == sync["remote"]
    assert env["SYNCER_BASE_BRANCH"] == sync["baseBranch"]
    if values["mode"] != "cronjob":  # `syncer run` flags
        assert env["SYNCER_LOG_FORMAT"] == sync["logFormat"]
    assert env["SYNCER_CLONE_DIR"] == "/work"
    assert env.get("SYNCER_FORGE_URL", "") == sync["forgeURL"]
    assert env.get("SYNCER_FORGE_REPO", "") == sync["forgeRepo"]
    assert env.get("SYNCER_RESYNC_INTERVAL", "") == sync["resyncInterval"]
    if values["leaderElection"]["enabled"]:
        assert env["SYNCER_LEADER_ELECT"] == "true"
    else:
        assert "SYNCER_LEADER_ELECT" not in env
    for item in values["extraEnv"]:
        assert env[item["name"]] == item["value"]


def test_standalone_renders_deployment_and_metrics_service(helm: str) -> None:
    docs = render(CHART / "ci" / "standalone-values.yaml")
    deployment = one(docs, "Deployment")
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"]["type"] == "Recreate"
    service = one(docs, "Service")
    assert service["spec"]["ports"] == [
        {"name": "http", "port": 8080, "targetPort": "http", "protocol": "TCP"}
    ]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert one(docs, "ServiceAccount")
    assert not [d for d in by_kind(docs, "ConfigMap") if d["metadata"]["name"].endswith("-sidecar-patch")]
    assert not by_kind(docs, "ServiceMonitor") and not by_kind(docs, "NetworkPolicy")


def test_sidecar_renders_a_patch_instead_of_a_deployment(helm: str) -> None:
    docs = render(SIDECAR_VALUES)
    assert not by_kind(docs, "Deployment")
    cm = one(docs, "ConfigMap")
    assert cm["metadata"]["name"] == f"{RELEASE}-sidecar-patch"
    patch = sidecar_patch(docs)
    assert set(patch) == {"spec"} and set(patch["spec"]) == {"template"}
    pod = patch["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "ollama-endpoint-manager"
    assert pod["securityContext"] == {"fsGroup": 10001}
    assert [c["name"] for c in pod["containers"]] == ["syncer"]

    # The same values in standalone mode give the very same container and volumes.
    standalone = one(render(SIDECAR_VALUES, "mode=standalone"), "Deployment")["spec"]["template"]["spec"]
    assert pod["containers"] == standalone["containers"]
    assert pod["volumes"] == standalone["volumes"]
    # Volume names are prefixed so they cannot collide with the reconciler's.
    assert all(v["name"].startswith("syncer-") for v in pod["volumes"])

    # The metrics Service selects the reconciler's pods by the given labels.
    assert one(docs, "Service")["spec"]["selector"] == {"app": "ollama-endpoint-manager"}


def test_checked_in_patch_matches_the_chart(helm: str) -> None:
    cm = one(render(SIDECAR_VALUES), "ConfigMap")
    rendered = cm["data"]["patch.yaml"]
    if os.environ.get("SYNCER_UPDATE_EXAMPLES"):
        PATCH_EXAMPLE.write_text(rendered)
    assert PATCH_EXAMPLE.read_text() == rendered, (
        f"{PATCH_EXAMPLE.relative_to(ROOT)} is stale; rerun with SYNCER_UPDATE_EXAMPLES=1 "
        "and update examples/asgard-manager-with-sidecar.yaml to match"
    )


def test_manager_example_carries_the_patch(helm: str, k8s_validate: Any) -> None:
    example = yaml.safe_load(WITH_SIDECAR_EXAMPLE.read_text())
    k8s_validate.validate(example, K8S_VERSION, strict=True)
    assert example["kind"] == "Deployment"
    assert example["metadata"]["namespace"] == "ai"
    assert example["metadata"]["name"] == "ollama-endpoint-manager"
    pod = example["spec"]["template"]["spec"]
    patch_pod = yaml.safe_load(PATCH_EXAMPLE.read_text())["spec"]["template"]["spec"]

    manager = next(c for c in pod["containers"] if c["name"] != "syncer")
    assert manager["image"] == "python:3.12-alpine"
    assert pod["serviceAccountName"] == patch_pod["serviceAccountName"] == "ollama-endpoint-manager"
    assert pod["securityContext"]["fsGroup"] == patch_pod["securityContext"]["fsGroup"]
    assert syncer_container(pod) == syncer_container(patch_pod)
    volumes = {v["name"]: v for v in pod["volumes"]}
    for volume in patch_pod["volumes"]:
        assert volumes[volume["name"]] == volume
    # The embedded reconciler at least parses.
    compile(manager["args"][0], "manager", "exec")


def test_leader_election_wires_env_and_lease_rbac(helm: str) -> None:
    docs = render(CHART / "ci" / "leader-election-values.yaml")
    deployment = one(docs, "Deployment")
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["strategy"]["type"] == "RollingUpdate"
    env = env_of(syncer_container(deployment["spec"]["template"]["spec"]))
    assert env["SYNCER_LEADER_ELECT"] == "true"
    assert env["SYNCER_LEASE_NAME"] == f"{RELEASE}-leader"
    assert env["SYNCER_LEASE_DURATION"] == "15s"
    lease_rules = [r for r in one(docs, "Role")["rules"] if r["resources"] == ["leases"]]
    assert {tuple(r["verbs"]) for r in lease_rules} == {("get", "update"), ("create",)}


def test_cronjob_runs_sync_with_the_same_account_credentials_and_settings(helm: str) -> None:
    values = CHART / "ci" / "cronjob-values.yaml"
    docs = render(values)
    assert not by_kind(docs, "Deployment") and not by_kind(docs, "Service")
    cron = one(docs, "CronJob")["spec"]
    assert cron["schedule"] == "*/15 * * * *" and cron["suspend"] is False
    assert cron["concurrencyPolicy"] == "Forbid"  # never two syncs racing for one branch
    job = cron["jobTemplate"]["spec"]
    assert job["activeDeadlineSeconds"] == 600 and job["backoffLimit"] == 1
    pod = job["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    container = syncer_container(pod)
    assert container["command"] == ["syncer"] and container["args"] == ["sync", "asgard"]
    # The same container as the long-running mode, minus what only `syncer run` uses.
    standalone = render(values, "mode=standalone")
    long_running = syncer_container(one(standalone, "Deployment")["spec"]["template"]["spec"])
    run_only = {"SYNCER_STATE_CONFIGMAP", "SYNCER_LOG_FORMAT", "SYNCER_RESYNC_INTERVAL"}
    assert {k: v for k, v in env_of(long_running).items() if k not in run_only} == env_of(container)
    for key in ("image", "securityContext", "resources", "volumeMounts"):
        assert container[key] == long_running[key], key
    assert pod["volumes"] == one(standalone, "Deployment")["spec"]["template"]["spec"]["volumes"]
    assert pod["serviceAccountName"] == one(docs, "ServiceAccount")["metadata"]["name"]
    # Every env twin the chart sets is a flag of `syncer sync` (or HOME / git's own).
    from syncer.cli import build_parser

    sync_flags = {a.dest for a in build_parser()._subparsers._group_actions[0].choices["sync"]._actions}
    for name in env_of(container):
        if name.startswith("SYNCER_"):
            assert name.removeprefix("SYNCER_").lower() in sync_flags, f"{name} is no flag of syncer sync"


def test_state_create_false_drops_the_unscoped_create(helm: str) -> None:
    values = CHART / "ci" / "standalone-values.yaml"
    for create, expect in (("true", True), ("false", False)):
        rules = one(render(values, f"state.create={create}"), "Role")["rules"]
        creates = [r for r in rules if "create" in r["verbs"]]
        assert bool(creates) is expect
        for rule in creates:
            assert rule["verbs"] == ["create"]


def test_untracked_grants_list_only_when_enabled(helm: str) -> None:
    values = CHART / "ci" / "standalone-values.yaml"

    def lists(*sets: str) -> list[dict[str, Any]]:
        return [r for r in one(render(values, *sets), "Role")["rules"] if r["verbs"] == ["list"]]

    assert lists() == []
    granted = lists("untracked.enabled=true", "untracked.resources[0].resource=configmaps",
                    "untracked.resources[1].resource=services")
    assert [(r["apiGroups"], r["resources"], r.get("resourceNames")) for r in granted] == [
        ([""], ["configmaps"], None), ([""], ["services"], None)]


def test_network_policy_and_service_monitor(helm: str) -> None:
    docs = render(CHART / "ci" / "observability-values.yaml")
    policy = one(docs, "NetworkPolicy")["spec"]
    assert policy["policyTypes"] == ["Ingress", "Egress"]
    (ingress,) = policy["ingress"]
    assert ingress["ports"] == [{"port": "http", "protocol": "TCP"}]
    egress_ports = [sorted((p["port"], p["protocol"]) for p in rule["ports"]) for rule in policy["egress"]]
    assert egress_ports == [
        [(443, "TCP"), (6443, "TCP")],
        [(22, "TCP"), (443, "TCP")],
        [(53, "TCP"), (53, "UDP")],
    ]
    api, git, dns = policy["egress"]
    assert [p["ipBlock"]["cidr"] for p in api["to"]] == ["10.0.0.1/32", "192.0.2.10/32"]
    assert [p["ipBlock"]["cidr"] for p in git["to"]] == ["203.0.113.0/24"]
    assert dns["to"][0]["podSelector"]["matchLabels"] == {"k8s-app": "kube-dns"}
    monitor = one(docs, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= one(docs, "Service")["metadata"]["labels"].items()


@pytest.mark.parametrize("values", INVALID, ids=[p.name for p in INVALID])
def test_invalid_values_are_rejected(values: Path, helm: str) -> None:
    lint = _run_helm("lint", "--strict", str(CHART), "--namespace", NAMESPACE, "-f", str(values))
    assert lint.returncode != 0, f"helm lint accepted {values.name}:\n{lint.stdout}"
    assert "Additional property" in lint.stdout + lint.stderr
    render_fails(values)


@pytest.mark.parametrize(
    "sets, message",
    [
        (("credentials.forgeToken=ghp_example",), "Additional property forgeToken"),
        (("credentials.existingSecret=",), "credentials.existingSecret is required"),
        (("extraEnv[0].name=SYNCER_FORGE_TOKEN", "extraEnv[0].value=x"), "extraEnv"),
        (("extraEnv[0].name=SYNCER_REMOTE", "extraEnv[0].value=x"), "sets SYNCER_REMOTE"),
        (("sync.resyncInterval=10 minutes",), "resyncInterval"),
        (("sync.forge=bitbucket",), "forge"),
        (("mode=daemon",), "mode"),
        (("tracked.endpoints[0]=Mac_Ollama",), "endpoints"),
        (("tracked.kinds.Widget[0]=x",), 'Property name of "Widget" does not match'),
        (("tracked.kinds.Service[0]=Mac_Ollama",), "tracked.kinds.Service"),
        (("replicaCount=2",), "leaderElection.enabled"),
        (("credentials.gitAuth=ssh",), "gitAuth is ssh"),
        (("mode=sidecar", "networkPolicy.enabled=true"), "standalone mode only"),
        (("mode=sidecar",), "sidecar.deploymentName is required"),
        (("mode=cronjob", "cronjob.schedule=every 15 minutes"), "cronjob.schedule"),
        (("mode=cronjob", "cronjob.scheule=@hourly"), "Additional property scheule"),
        (("mode=cronjob", "leaderElection.enabled=true"), "no effect in cronjob mode"),
        (("mode=cronjob", "serviceMonitor.enabled=true"), "serves no /metrics"),
    ],
    ids=lambda v: "+".join(v) if isinstance(v, tuple) else None,
)
def test_bad_values_fail_with_a_clear_message(sets: tuple[str, ...], message: str, helm: str) -> None:
    stderr = render_fails(CHART / "ci" / "standalone-values.yaml", *sets)
    assert message in stderr, stderr


def test_chart_kind_table_is_the_one_syncer_names_grants_from() -> None:
    """``tracked.kinds`` in the chart and ``syncer.grants`` (the 403 hint, ``init --chart-values``)
    map each kind to the same API group and resource."""
    helpers = (CHART / "templates" / "_helpers.tpl").read_text()
    body = helpers.split('{{- define "syncer.kindResources" -}}', 1)[1].split("{{- end }}", 1)[0]
    assert {k: tuple(v) for k, v in json.loads(body).items()} == CHART_KINDS
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert sorted(schema["properties"]["tracked"]["properties"]["kinds"]["propertyNames"]["enum"]) == sorted(CHART_KINDS)


def test_init_chart_values_grant_exactly_what_the_config_reads(helm: str, tmp_path: Path) -> None:
    """The values `syncer init asgard --chart-values` prints make a Role that can read every
    object the asgard config reads, and nothing else."""
    import io

    from syncer.cli import main
    from syncer.gather.collect import live_reads
    from syncer.writeback.deliver import load_installation

    out = io.StringIO()
    assert main(["init", "asgard", "--repo", str(ROOT), "--chart-values"], stdout=out) == 0
    values = tmp_path / "tracked.yaml"
    values.write_text(out.getvalue())
    base = yaml.safe_load((CHART / "ci" / "standalone-values.yaml").read_text())
    base["tracked"] = {"configMaps": [], "endpoints": [], "extra": []}
    plain = tmp_path / "base.yaml"
    plain.write_text(yaml.safe_dump(base))
    args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE, "-f", str(plain), "-f", str(values)]
    proc = _run_helm(*args)
    assert proc.returncode == 0, proc.stderr
    role = one([d for d in yaml.safe_load_all(proc.stdout) if d], "Role")
    granted = {(g, r, n) for rule in role["rules"] if set(rule["verbs"]) == READ_VERBS
               for g in rule["apiGroups"] for r in rule["resources"] for n in rule["resourceNames"]}
    loaded = load_installation(ROOT, "asgard")
    wanted = set()
    for ref in live_reads(loaded.config, loaded.manifests):
        group, resource = CHART_KINDS[ref.kind]
        wanted.add((group, resource, ref.name))
    assert granted == wanted


def test_watch_kinds_grants_list_and_watch_on_each_tracked_kind_never_secrets(helm: str, tmp_path: Path) -> None:
    values = tmp_path / "kinds.yaml"
    values.write_text(yaml.safe_dump({"rbac": {"watchKinds": True}, "tracked": {"extra": [
        {"apiGroup": "", "resource": "secrets", "names": ["token"]},
        {"apiGroup": "apps", "resource": "deployments", "names": ["manager"]}]}}))
    base = CHART / "ci" / "standalone-values.yaml"
    off = one(render(base), "Role")["rules"]
    assert all(r.get("resourceNames") or r["verbs"] == ["create"] for r in off)  # the default stays by name
    rules = one(_render_docs(base, values), "Role")["rules"]
    whole = sorted((r["apiGroups"][0], r["resources"][0]) for r in rules
                   if not r.get("resourceNames") and r["verbs"] == ["list", "watch"])
    # the scenario's tracked.kinds (every kind syncer init names for asgard), plus tracked.extra
    assert whole == [("", "configmaps"), ("", "endpoints"), ("", "serviceaccounts"), ("", "services"),
                     ("apps", "deployments"), ("apps", "deployments"), ("rbac.authorization.k8s.io", "rolebindings"),
                     ("rbac.authorization.k8s.io", "roles")]
    assert [r for r in rules if r["resources"] == ["secrets"]] == [
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["token"], "verbs": ["get", "list", "watch"]}]


def _render_docs(base: Path, extra: Path) -> list[Manifest]:
    proc = _run_helm("template", RELEASE, str(CHART), "--namespace", NAMESPACE, "-f", str(base), "-f", str(extra))
    assert proc.returncode == 0, proc.stderr
    return [d for d in yaml.safe_load_all(proc.stdout) if d]
