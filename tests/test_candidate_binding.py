"""Candidate bindings follow the objects they bind (issue 16/12): ``-n`` is a default for
manifests that name no namespace, as kubectl's is, and cannot move a binding away from the
Endpoints/EndpointSlices the manifests declare in their own namespace."""

from __future__ import annotations

from pathlib import Path

from ruamel.yaml import YAML
from tests.conftest import EXAMPLE_LIVE
from tests.helpers import _loopback_only, make_repo, run  # noqa: F401 - autouse fixture: loopback only

from syncer.config import parse_config

HAND_PATCHED = "203.0.113.66"  # in no candidate list


def hand_patched_live(tmp_path: Path) -> Path:
    """The asgard snapshot with mac-ollama's Endpoints pointed at an undeclared address."""
    yaml = YAML()
    doc = yaml.load(EXAMPLE_LIVE.read_text())
    for obj in doc["items"]:
        if obj["kind"] == "Endpoints" and obj["metadata"]["name"] == "mac-ollama":
            obj["subsets"][0]["addresses"][0]["ip"] = HAND_PATCHED
    path = tmp_path / "live.yaml"
    with path.open("w") as f:
        yaml.dump(doc, f)
    return path


def block(out: str, header: str) -> str:
    """The lines of the text report under ``header`` (up to the next blank line)."""
    start = out.index(header)
    end = out.find("\n\n", start)
    return out[start:end if end >= 0 else None]


def test_namespace_flag_does_not_unbind_endpoints_declared_in_their_own_namespace(tmp_path: Path) -> None:
    """Was: with ``-n foo`` the bindings moved to foo, mac-ollama's hand-patched address was a
    plain ``value -> write`` and every ``pick`` became ``value``."""
    repo = make_repo(tmp_path)
    live = hand_patched_live(tmp_path)
    outs = {}
    for extra in ((), ("-n", "foo")):
        code, out, err = run("sync", "asgard", "--repo", str(repo), "--live-file", str(live),
                             "--mode", "dry-run", *extra)
        assert code == 0, err  # dry-run: nothing failed
        outs[extra] = out
    for out in outs.values():
        mac = block(out, "Endpoints/ai/mac-ollama")
        assert f"+{HAND_PATCHED}" in mac and "undeclared" in mac and "-> report" in mac, mac
        assert "-> write" not in mac
        m1 = block(out, "Endpoints/ai/m1-ollama")
        assert "pick," in m1 and "-> write" in m1, m1
        assert HAND_PATCHED not in out.split("--- a/", 1)[1].split("--- pull request ---")[0]  # never in the diff
    assert outs[()] == outs[("-n", "foo")].replace(" -n foo", "")  # the same but the reproduce line


def test_a_binding_without_namespace_binds_where_the_manifests_declare_the_service() -> None:
    conf = parse_config("namespace: foo\ncandidates:\n"
                        "  - {endpoints: mac-ollama, configMap: cm, key: MAC}\n"
                        "  - {endpoints: m1-ollama, configMap: cm, key: M1, namespace: foo}\n"
                        "  - {endpoints: gone, configMap: cm, key: G}\n", "syncer.conf", "asgard")
    bound = conf.bound_to({("ai", "mac-ollama"), ("ai", "m1-ollama"), ("bar", "mac-ollama")})
    mac_ai, mac_bar = bound.candidates_for("ai", "mac-ollama"), bound.candidates_for("bar", "mac-ollama")
    assert mac_ai is not None and (mac_ai.namespace, mac_ai.config_map, mac_ai.key) == ("ai", "cm", "MAC")
    assert mac_bar is not None and mac_bar.namespace == "bar"  # its ConfigMap in that same namespace
    assert bound.candidates_for("foo", "mac-ollama") is None
    # an explicit namespace is kept, as is a binding of a Service git does not declare
    assert bound.candidates_for("ai", "m1-ollama") is None and bound.candidates_for("foo", "m1-ollama") is not None
    assert bound.candidates_for("foo", "gone") is not None
    # declared in the config's namespace already: nothing moves (the same config back)
    assert conf.bound_to({("foo", "mac-ollama")}) is conf
