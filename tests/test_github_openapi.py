"""Check our GitHub client and our fake GitHub against GitHub's own OpenAPI description.

Every request the client sends to the fake and every answer the fake gives is recorded
and validated with ``openapi-core`` against ``tests/data/forge-api/github-rest-pulls.json``
(GitHub's published description, trimmed to the PR endpoints): request parameters and
bodies, response bodies. So the client cannot drift from the real API, and neither can
the fake the other tests trust.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import DATA
from tests.fakes.forges import FakeGitHub, FakeTime, init_bare_repo

from syncer.errors import PullRequestExists
from syncer.forges.github import GitHubForge
from syncer.writeback.pullrequest import PrOutcome, Proposal, reconcile_pull_request

SPEC_PATH = DATA / "forge-api" / "github-rest-pulls.json"

openapi_core = pytest.importorskip("openapi_core")
from openapi_core.datatypes import RequestParameters  # noqa: E402
from werkzeug.datastructures import Headers, ImmutableMultiDict  # noqa: E402

TOKEN = "ghp_openapiTestToken000000000000000000"
HEAD, BASE = "syncer/asgard", "main"
PREFIX = "/api/v3"  # the fake serves GitHub Enterprise paths; the spec has api.github.com's

# The operations a PR-opening tool must get right (method, path template in the spec).
REQUIRED = {
    ("get", "/repos/{owner}/{repo}/pulls"): "list pulls",
    ("post", "/repos/{owner}/{repo}/pulls"): "create a pull",
    ("patch", "/repos/{owner}/{repo}/pulls/{pull_number}"): "update a pull",
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/comments"): "create a comment",
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}/comments"): "list comments",
    ("put", "/repos/{owner}/{repo}/issues/{issue_number}/labels"): "set labels",
}


@dataclass
class OpenAPIRequest:
    """An ``httpx.Request`` in the shape openapi-core reads."""

    host_url: str
    path: str
    method: str
    body: bytes | None
    content_type: str
    parameters: RequestParameters


@dataclass
class OpenAPIResponse:
    status_code: int
    headers: Headers
    content_type: str
    data: bytes | None


def adapt(response: httpx.Response) -> tuple[OpenAPIRequest, OpenAPIResponse]:
    request = response.request
    path = request.url.path.removeprefix(PREFIX)
    content = request.content or None
    oa_request = OpenAPIRequest(
        host_url="https://api.github.com",
        path=path,
        method=request.method.lower(),
        body=content,
        content_type=request.headers.get("content-type", "application/json") if content else "",
        parameters=RequestParameters(
            query=ImmutableMultiDict(list(request.url.params.multi_items())),
            header=Headers([(k, v) for k, v in request.headers.items() if k.lower() != "authorization"]),
        ),
    )
    oa_response = OpenAPIResponse(
        status_code=response.status_code,
        headers=Headers(list(response.headers.items())),
        content_type=response.headers.get("content-type", "application/json").split(";")[0],
        data=response.content or None,
    )
    return oa_request, oa_response


def template_of(spec: dict[str, Any], method: str, path: str) -> str | None:
    for template, operations in spec["paths"].items():
        pattern = "^" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "$"
        if re.match(pattern, path) and method in operations:
            return str(template)
    return None


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    return dict(json.loads(SPEC_PATH.read_text()))


@pytest.fixture(scope="module")
def openapi(spec: dict[str, Any]) -> Any:
    return openapi_core.OpenAPI.from_dict(spec)


@pytest.fixture
def recorded(tmp_path: Path) -> Iterator[tuple[GitHubForge, FakeGitHub, list[httpx.Response]]]:
    git = init_bare_repo(tmp_path / "infra.git", (BASE, HEAD))
    exchanges: list[httpx.Response] = []

    def record(response: httpx.Response) -> None:
        response.read()
        exchanges.append(response)

    clock = FakeTime()
    with FakeGitHub(git_dir=git, token=TOKEN, page_size=2) as fake, httpx.Client(
        event_hooks={"response": [record]}
    ) as client:
        forge = GitHubForge(client, fake.api_url, fake.repo, TOKEN, sleep=clock.sleep, clock=clock.clock)
        yield forge, fake, exchanges


def test_client_requests_and_fake_responses_match_the_spec(
    recorded: tuple[GitHubForge, FakeGitHub, list[httpx.Response]], spec: dict[str, Any], openapi: Any
) -> None:
    forge, fake, exchanges = recorded
    for i in range(3):
        fake.add_pr(HEAD, BASE, title=f"old {i}", state="closed")
    first = Proposal("syncer: asgard", "| a | b |\n|---|---|\n| x | y |", ("syncer", "drift"), "d1")
    assert reconcile_pull_request(forge, HEAD, BASE, first).outcome is PrOutcome.OPENED
    second = Proposal("syncer: asgard (2)", "| a | b |\n|---|---|\n| x | z |", ("syncer",), "d2")
    assert reconcile_pull_request(forge, HEAD, BASE, second).outcome is PrOutcome.UPDATED
    current = forge.find_open(HEAD, BASE)
    assert current is not None
    for i in range(3):  # so that listing comments needs a second page
        forge.comment(current, f"note {i}")
    assert reconcile_pull_request(forge, HEAD, BASE, second, human_pushed=True).outcome is PrOutcome.HUMAN_PUSHED
    with pytest.raises(PullRequestExists):  # answered 422 "already exists"
        forge.create(HEAD, BASE, "duplicate", "body", [])
    assert reconcile_pull_request(forge, HEAD, BASE, None).outcome is PrOutcome.CLOSED
    # A PR from a fork with syncer's branch name, as GitHub lists and shows it (head.repo is the fork)
    fork = fake.add_pr(HEAD, BASE, title="from a fork", head_repo="mallory/infra", author="mallory")
    forge._http.request("GET", f"/repos/{fake.repo}/pulls", params={"state": "all", "per_page": 100})
    shown = forge._http.request("GET", f"/repos/{fake.repo}/pulls/{fork.number}").json()
    assert shown["head"]["repo"]["full_name"] == "mallory/infra" and shown["user"]["login"] == "mallory"

    seen: set[tuple[str, str]] = set()
    problems: list[str] = []
    for response in exchanges:
        oa_request, oa_response = adapt(response)
        template = template_of(spec, oa_request.method, oa_request.path)
        if template is None:
            continue  # e.g. DELETE .../labels: real, but not in the trimmed description
        seen.add((oa_request.method, template))
        where = f"{oa_request.method.upper()} {oa_request.path} -> {response.status_code}"
        try:
            openapi.validate_request(oa_request)
        except Exception as exc:  # noqa: BLE001 - report every mismatch at once
            problems.append(f"request {where}: {_explain(exc)}")
        declared = spec["paths"][template][oa_request.method]["responses"]
        if str(response.status_code) in declared:
            try:
                openapi.validate_response(oa_request, oa_response)
            except Exception as exc:  # noqa: BLE001
                problems.append(f"response {where}: {_explain(exc)}")
        else:
            problems.append(f"response {where}: status not declared by the spec")
    assert not problems, "\n".join(problems)
    missing = [name for key, name in REQUIRED.items() if key not in seen]
    assert not missing, f"not exercised: {missing}"
    statuses = {(r.request.method, r.status_code) for r in exchanges}
    assert ("POST", 422) in statuses  # the duplicate answer was validated too
    assert any("page=2" in str(r.request.url) for r in exchanges)  # and a Link-followed page


def _explain(exc: Exception) -> str:
    """The validation errors, each with where in the document it is (not the whole value)."""
    details = [type(exc).__name__]
    for err in (exc, exc.__cause__):
        for inner in getattr(err, "schema_errors", None) or []:
            where = "/".join(str(p) for p in getattr(inner, "absolute_path", []))
            details.append(f"  - at /{where}: {getattr(inner, 'message', inner)}")
    if len(details) == 1:
        details.append(f"  {str(exc)[:500]}")
    return "\n".join(details)
