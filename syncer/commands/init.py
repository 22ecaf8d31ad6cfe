"""``syncer init``: infer hosts/<installation>/syncer.conf from the manifests (and the cluster),
say why, and write it (never over an existing one without ``--force``)."""

from __future__ import annotations

import argparse
import shlex
from datetime import datetime
from pathlib import Path
from typing import TextIO

from syncer import clients
from syncer.commands import EXIT_OK, checkout
from syncer.config import CONFIG_NAME, LEGACY_CONFIG_NAME, load_config, parse_config
from syncer.errors import ClusterError, ConfigError
from syncer.cache import Caches
from syncer.config import Config
from syncer.kinds import api_versions
from syncer.sources.dispatch import source_for
from syncer.sources.skipped import CHART_FILE
from syncer.sources.source import DEFAULT_TOOLS, Tools
from syncer.gather.collect import live_reads
from syncer.grants import chart_values
from syncer.kube import context_namespace
from syncer.kube.lists import named_items
from syncer.gather.live import KubeSource, Lister, LiveSource, SnapshotSource
from syncer.sources.manifests import default_installation, host_dir, parse_documents
from syncer.model import JSON, ObjectRef
from syncer.writeback.deliver import load_installation
from syncer.commands.onboard import SERVICE_NAME_LABEL, infer, infer_namespace, render


def _live_slices(source: LiveSource, namespace: str, service: str) -> tuple[list[JSON], str]:
    """The live EndpointSlices of Service ``service`` (label ``kubernetes.io/service-name``), and
    why none could be read ("" when the read worked)."""
    if isinstance(source, SnapshotSource):
        return [o for r, o in source.objects.items() if r.kind == "EndpointSlice" and r.namespace == namespace
                and ((o.get("metadata") or {}).get("labels") or {}).get(SERVICE_NAME_LABEL) == service], ""
    if not isinstance(source, KubeSource):
        return [], ""
    for version in api_versions("EndpointSlice"):  # newest first: older servers serve only v1beta1
        try:
            found = source.kube.call("GET", f"/apis/{version}/namespaces/{namespace}/endpointslices",
                                     query=[("labelSelector", f"{SERVICE_NAME_LABEL}={service}")],
                                     what=f"list EndpointSlices of {namespace}/{service}")
        except ClusterError as exc:
            return [], str(exc)
        if found is not None:
            return [dict(o, kind="EndpointSlice", apiVersion=version)
                    for _, o in named_items(found)], ""
    return [], "the API server serves no discovery.k8s.io EndpointSlices"


#: The annotations Helm puts on every object it installs.
_RELEASE_NAME, _RELEASE_NAMESPACE = "meta.helm.sh/release-name", "meta.helm.sh/release-namespace"
#: The kinds looked at in the cluster for the release a chart directory is installed as.
_RELEASE_KINDS = (("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("apps/v1", "DaemonSet"), ("v1", "ConfigMap"),
                  ("v1", "Service"), ("v1", "ServiceAccount"))


def _chart_release(args: argparse.Namespace, installation: str, context: tuple[str, str] | None
                   ) -> tuple[tuple[str, str], tuple[str, str]]:
    """((release, why), (namespace, why)) of a chart directory: the one Helm release the live
    objects name (a snapshot, else the objects of the namespace ``-n`` or the context names),
    else the installation's name; its namespace unless ``-n`` names one."""
    where = args.namespace or (context[0] if context else "default")
    objects: list[JSON] = []
    if args.live_file:
        objects = list(SnapshotSource([Path(f) for f in args.live_file], "").objects.values())
    elif not args.git_only:
        source = clients.live_source(args, where)
        if isinstance(source, Lister):
            for api_version, kind in _RELEASE_KINDS:
                try:
                    objects += source.list_objects(api_version, kind, where)
                except ClusterError:
                    continue
    named = {(str(n.get(_RELEASE_NAME)), str(n.get(_RELEASE_NAMESPACE) or "")) for o in objects
             if isinstance(n := (o.get("metadata") or {}).get("annotations") or {}, dict) and n.get(_RELEASE_NAME)}
    if len(named) == 1:
        (name, ns), = named
        release = (name, f"release {name}: the one Helm release the live objects name ({_RELEASE_NAME})")
    else:
        name, ns = installation, ""
        several = f"; they name several: {', '.join(sorted(n for n, _ in named))}" if named else ""
        release = (name, f"release {name}: the installation's name, as Argo CD names an application's release "
                         f"(no single Helm release among the live objects{several})")
    if args.namespace:
        return release, (args.namespace, f"namespace {args.namespace}: given with -n")
    if ns:
        return release, (ns, f"namespace {ns}: where Helm release {name} is installed ({_RELEASE_NAMESPACE})")
    if context is not None:
        return release, (context[0], f"namespace {context[0]}: {context[1]}, as helm install would use")
    return release, ("default", "namespace default: helm's default (no -n, no kubeconfig context)")


def cmd_init(args: argparse.Namespace, now: datetime, stdout: TextIO) -> int:
    """``syncer init``: infer the config, say why, write it (never over an existing one without --force)."""
    repo = checkout(args)
    installation = args.installation or default_installation(repo)
    if args.chart_values:
        stdout.write(installation_values(repo, installation, args.namespace, clients.tools(args)))
        return EXIT_OK
    host = host_dir(repo, installation)
    target, legacy = host / CONFIG_NAME, host / LEGACY_CONFIG_NAME
    for existing in (target, legacy):
        if existing.exists() and not args.force:
            raise ConfigError(f"hosts/{installation}/{existing.name} exists; not overwritten (--force replaces it)")

    # Namespaces first (manifests without one count for none), then the objects in that namespace.
    # What the source declares (a render's namespaces and kinds, not its files). A chart
    # directory: the release and namespace Helm installed it as (its templates name the
    # namespace they are rendered for, so they cannot tell it).
    caches = Caches()
    context = None if args.namespace else context_namespace(args.kubeconfig, args.context, read_yaml=parse_documents)
    release: tuple[str, str] | None = None
    if (host / CHART_FILE).is_file():
        release, ns_answer = _chart_release(args, installation, context)
    else:
        declared = source_for(repo, installation, Config(installation, namespace=""), clients.tools(args)).load(caches)
        ns_answer = infer_namespace(declared.objects, args.namespace,
                                    SnapshotSource([Path(f) for f in args.live_file], "").objects
                                    if args.live_file else (), context)
    declaring = source_for(repo, installation, Config(installation, namespace=ns_answer[0],
                                                      release=release[0] if release else None), clients.tools(args))
    if not args.namespace and release is None:
        ns_answer = (ns_answer[0], ns_answer[1].replace(" manifests", f" {declaring.declares}"))
    namespace = ns_answer[0]
    manifests = declaring.load(caches)
    git = {ref: obj.data for ref, obj in manifests.objects.items()}
    for err in manifests.errors:
        stdout.write(f"syncer init: skipped {err.file}: {err.message}\n")

    live: dict[ObjectRef, JSON] = {}
    if not args.git_only:
        try:
            source = clients.live_source(args, namespace)
        except ConfigError as exc:
            raise ConfigError(f"{exc.message} (no cluster at hand? --live-file FILE or --git-only)") from exc
        for ref in git:
            obj = source.get(ref)
            if obj is not None:
                live[ref] = obj
        for ref in [r for r in git if r.kind in ("Endpoints", "Service")]:
            slices, why = _live_slices(source, ref.namespace, ref.name)
            if why:
                stdout.write(f"syncer init: EndpointSlices of {ref.namespace}/{ref.name} not read: {why}\n")
            for obj in slices:
                meta = obj.get("metadata") or {}
                live[ObjectRef(str(obj.get("apiVersion")), "EndpointSlice", ref.namespace, str(meta.get("name")))] = obj

    inference = infer(installation, git, live, ns_answer)
    if release is not None:
        inference.release = release[0]
        inference.reasons.insert(1, release[1])
    command = shlex.join(["syncer", "init", installation] + (["--git-only"] if args.git_only else []))
    text = render(inference, command)
    parse_config(text, f"hosts/{installation}/{CONFIG_NAME}", installation)  # what we write must load
    seen = f"{len(git)} manifests" + ("" if args.git_only else f", {len(live)} live objects ({source.describe()})")
    stdout.write(f"syncer init {installation}: from {seen}\n")
    for reason in inference.reasons:
        stdout.write(f"  {reason}\n")
    target.write_text(text, encoding="utf-8")
    stdout.write(f"wrote hosts/{installation}/{CONFIG_NAME}\n")
    if legacy.exists():  # only with --force: the new file replaces the deprecated one
        legacy.unlink()
        stdout.write(f"removed hosts/{installation}/{LEGACY_CONFIG_NAME} (replaced by {CONFIG_NAME})\n")
    stdout.write(f"next: syncer diff {installation}  (then commit hosts/{installation}/{CONFIG_NAME})\n")
    stdout.write(f"chart values granting exactly what this config reads (syncer init {installation} "
                 "--chart-values prints them again):\n")
    stdout.write("".join(f"  {line}\n" for line in installation_values(repo, installation, args.namespace, clients.tools(args)).splitlines()))
    return EXIT_OK


def installation_values(repo: Path, installation: str, namespace: str | None, tools: Tools = DEFAULT_TOOLS) -> str:
    """The chart's ``tracked:`` values for what the installation's config reads (``syncer.grants``)."""
    config = load_config(host_dir(repo, installation), installation, namespace=namespace)
    loaded = load_installation(repo, installation, config, tools=tools)
    values = chart_values(live_reads(loaded.config, loaded.manifests), config.namespace)
    head = (f"# syncer's Role for hosts/{installation}: get/list/watch on exactly what its config reads "
            f"(namespace {config.namespace}); a kind set to `ignore` in syncer.conf is neither read nor granted\n")
    tail = "".join(f"# not covered: {ref} is outside namespace {config.namespace} (the chart's Role is namespaced)\n"
                   for ref in values.elsewhere)
    objects = loaded.manifests.objects
    generated = sorted({f"{objects[ref].generator}-<hash>" for ref in live_reads(loaded.config, loaded.manifests)
                        if ref in objects and objects[ref].generator and ref.namespace == config.namespace})
    if generated:
        tail += (f"# {', '.join(generated)}: named by kustomize after its content, so a new content is a new name,\n"
                 "# which a Role by names cannot follow: rbac.watchKinds lists and watches the kind instead, and\n"
                 "# syncer finds the new name (or, before it is applied, the old one) by its generator.\n"
                 "rbac:\n  watchKinds: true\n")
    return head + values.text + tail
