"""The forge clients and the PR lifecycle against fake GitHub, Gitea and GitLab servers.

Every test runs once per forge kind. The fakes keep real state, check branches in a real
bare git repository, and answer with the real status codes and bodies; time is injected
(``FakeTime``), so rate-limit waits and backoff cost nothing.
"""

from __future__ import annotations

import email.utils
import logging
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.forges import FAKES, FakeForgeServer, FakeTime, init_bare_repo

from syncer.errors import ConfigError, ForgeError, PullRequestExists
from syncer.forges import Forge, api_url, make_forge
from syncer.forges._http import ForgeRateLimited
from syncer.writeback.pullrequest import (
    HUMAN_PUSHED_MARKER,
    PrOutcome,
    Proposal,
    parse_marker,
    reconcile_pull_request,
    render_body_limit,
)

TOKEN = "tok-9f8e7d6c5b4a-SECRET"
HEAD, BASE = "syncer/asgard", "main"
KINDS = ("github", "gitea", "gitlab")


@pytest.fixture(scope="module")
def bare_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return init_bare_repo(tmp_path_factory.mktemp("git") / "infra.git", (BASE, HEAD, "syncer/other"))


@pytest.fixture(params=KINDS)
def fake(request: pytest.FixtureRequest, bare_repo: Path) -> Iterator[FakeForgeServer]:
    with FAKES[request.param](git_dir=bare_repo, token=TOKEN, page_size=2) as server:
        yield server


@pytest.fixture
def clock() -> FakeTime:
    return FakeTime()


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client() as c:  # building one costs an SSL context: share it
        yield c


def forge_for(
    fake: FakeForgeServer, client: httpx.Client, clock: FakeTime, *,
    token: str = TOKEN, repo: str = "", timeout: float = 2.0, budget: float = 60.0,
) -> Forge:
    return make_forge(
        fake.kind, fake.url, repo or fake.repo, token, client=client,
        timeout=timeout, sleep=clock.sleep, clock=clock.clock, budget=budget,
    )


def proposal(
    drift: str = "d1",
    title: str = "syncer: copy asgard's live values back",
    body: str | None = None,
    labels: tuple[str, ...] = ("syncer", "drift"),
) -> Proposal:
    if body is None:
        body = f"| object | field | git | live |\n|---|---|---|---|\n| cm | MAC_ADDRS | a | {drift} |"
    return Proposal(title=title, body=body, labels=labels, drift_hash=drift)


# -- the lifecycle ---------------------------------------------------------------------------


def test_open_update_unchanged_close(fake: FakeForgeServer, client: httpx.Client, clock: FakeTime) -> None:
    forge = forge_for(fake, client, clock)

    opened = reconcile_pull_request(forge, HEAD, BASE, proposal("d1"))
    assert opened.outcome is PrOutcome.OPENED and opened.pr is not None
    assert sorted(fake.pr(opened.pr.number).labels) == ["drift", "syncer"]

    changed = proposal("d2", title="syncer: asgard drift (2 fields)", labels=("syncer",))
    updated = reconcile_pull_request(forge, HEAD, BASE, changed)
    assert updated.outcome is PrOutcome.UPDATED and updated.pr is not None
    assert updated.pr.number == opened.pr.number
    assert len(fake.prs) == 1
    stored = fake.pr(opened.pr.number)
    assert stored.title == changed.title and "| d2 |" in stored.body and stored.labels == ["syncer"]

    fake.clear_log()
    same = reconcile_pull_request(forge, HEAD, BASE, changed)
    assert same.outcome is PrOutcome.UNCHANGED
    assert fake.writes == []

    closed = reconcile_pull_request(forge, HEAD, BASE, None)
    assert closed.outcome is PrOutcome.CLOSED and closed.pr is not None and closed.pr.state == "closed"
    assert fake.pr(opened.pr.number).state == "closed"
    assert any("agree again" in c for c in fake.comment_bodies(opened.pr.number))

    fake.clear_log()
    assert reconcile_pull_request(forge, HEAD, BASE, None).outcome is PrOutcome.NOTHING
    assert fake.writes == []


def test_update_touches_only_what_differs(fake: FakeForgeServer, client: httpx.Client, clock: FakeTime) -> None:
    forge = forge_for(fake, client, clock)
    first = proposal("d1")
    reconcile_pull_request(forge, HEAD, BASE, first)
    fake.clear_log()

    result = reconcile_pull_request(forge, HEAD, BASE, proposal("d1", labels=("syncer", "undeclared")))
    assert result.outcome is PrOutcome.UPDATED
    repo_labels = f"/repos/{fake.repo}/labels"  # Gitea: creating the new label itself
    pr_writes = [w for w in fake.writes if w.path != repo_labels]
    assert pr_writes, "a label change must write something"
    for write in pr_writes:  # title and body stay as they were
        assert not {"title", "body", "description"} & set(write.body or {})
    assert sorted(fake.prs[0].labels) == ["syncer", "undeclared"]


def test_marker_survives_and_drives_comparison(fake: FakeForgeServer, client: httpx.Client, clock: FakeTime) -> None:
    forge = forge_for(fake, client, clock)
    result = reconcile_pull_request(forge, HEAD, BASE, proposal("abc123"))
    assert result.pr is not None
    marker = parse_marker(fake.pr(result.pr.number).body)
    assert marker is not None and marker[0] == "abc123"


def test_duplicate_create_answer_is_success(fake: FakeForgeServer, client: httpx.Client, clock: FakeTime) -> None:
    forge = forge_for(fake, client, clock)
    existing = fake.add_pr(HEAD, BASE, title="opened by another replica")
    with pytest.raises(PullRequestExists):  # the forge says so, in its own words
        forge.create(HEAD, BASE, "a second one", "body", ["syncer"])
    # The lifecycle adopts it: one PR, brought up to date, and no second POST.
    monkey = _CreateFirst(forge)
    result = reconcile_pull_request(monkey, HEAD, BASE, proposal("dup1"))
    assert result.pr is not None and result.pr.number == existing.number
    assert len(fake.prs) == 1
    refused = [r for r in fake.requests if r.method == "POST" and r.status in (409, 422)]
    assert len(refused) == 2  # the forge really said "already exists", to both calls


class _CreateFirst:
    """A forge whose ``find_open`` misses the PR once (a replica opened it between the
    lifecycle's look-up and its create), so the lifecycle really meets "already exists"."""

    def __init__(self, forge: Any) -> None:
        self._forge = forge
        self._missed = False

    def find_open(self, head: str, base: str) -> Any:
        if not self._missed:
            self._missed = True
            return None
        return self._forge.find_open(head, base)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._forge, name)


def test_create_for_missing_branch_is_a_clear_permanent_error(
    fake: FakeForgeServer, client: httpx.Client, clock: FakeTime
) -> None:
    forge = forge_for(fake, client, clock)
    with pytest.raises(ForgeError) as err:
        forge.create("syncer/never-pushed", BASE, "t", "b", [])
    assert not err.value.transient
    assert "syncer/never-pushed" in str(err.value) and "exist" in str(err.value)
    assert fake.prs == []


def test_closed_unmerged_same_drift_is_suppressed(fake: FakeForgeServer, client: httpx.Client, clock: FakeTime) -> None:
    forge = forge_for(fake, client, clock)
    first = reconcile_pull_request(forge, HEAD, BASE, proposal("d1"))
    assert first.pr is not None
    fake.close_pr(first.pr.number)  # a human said no

    fake.clear_log()
    again = reconcile_pull_request(forge, HEAD, BASE, proposal("d1"))
    assert again.outcome is PrOutcome.SUPPRESSED
    assert again.pr is not None and again.pr.number == first.pr.number
    assert fake.writes == []

    new = reconcile_pull_request(forge, HEAD, BASE, proposal("d2"))
    assert new.outcome is PrOutcome.OPENED and new.pr is not None
    assert new.pr.number != first.pr.number
    assert [p.number for p in fake.open_prs()] == [new.pr.number]


def test_merged_pr_does_not_suppress(fake: FakeForgeServer, client: httpx.Client, clock: FakeTime) -> None:
    forge = forge_for(fake, client, clock)
    first = reconcile_pull_request(forge, HEAD, BASE, proposal("d1"))
    assert first.pr is not None
    fake.close_pr(first.pr.number, merged=True)
    latest = forge.find_latest_closed(HEAD, BASE)
    assert latest is not None and latest.state == "merged"
    again = reconcile_pull_request(forge, HEAD, BASE, proposal("d1"))
    assert again.outcome is PrOutcome.OPENED


def test_human_push_comments_once(fake: FakeForgeServer, client: httpx.Client, clock: FakeTime) -> None:
    forge = forge_for(fake, client, clock)
    first = reconcile_pull_request(forge, HEAD, BASE, proposal("d1"))
    assert first.pr is not None
    before = fake.pr(first.pr.number)
    title, body = before.title, before.body

    for _ in range(3):
        result = reconcile_pull_request(forge, HEAD, BASE, proposal("d2", title="new title"), human_pushed=True)
        assert result.outcome is PrOutcome.HUMAN_PUSHED
    comments = [c for c in fake.comment_bodies(first.pr.number) if HUMAN_PUSHED_MARKER in c]
    assert len(comments) == 1 and "stopped rewriting" in comments[0]
    assert (fake.pr(first.pr.number).title, fake.pr(first.pr.number).body) == (title, body)

    fake.clear_log()
    reconcile_pull_request(forge, HEAD, BASE, proposal("d2"), human_pushed=True)
    assert fake.writes == []


def test_pagination_and_latest_closed(fake: FakeForgeServer, client: httpx.Client, clock: FakeTime) -> None:
    forge = forge_for(fake, client, clock)
    for i in range(5):
        fake.add_pr(f"feature/{i}", BASE, title=f"other {i}")
    fake.add_pr(HEAD, BASE, title="old one", state="closed")
    fake.add_pr(HEAD, BASE, title="newer one", state="closed")
    fake.add_pr(HEAD, "release", title="other base", state="closed")

    latest = forge.find_latest_closed(HEAD, BASE)
    assert latest is not None and latest.title == "newer one" and latest.state == "closed"

    opened = reconcile_pull_request(forge, HEAD, BASE, proposal("d9"))
    assert opened.pr is not None
    found = forge.find_open(HEAD, BASE)
    assert found is not None and found.number == opened.pr.number

    for i in range(5):
        forge.comment(opened.pr, f"note {i}")
    assert forge.list_comments(opened.pr) == [f"note {i}" for i in range(5)]
    assert any(r.method == "GET" and r.query.get("page") == "2" for r in fake.requests)


def test_long_body_is_cut_and_stays_stable(fake: FakeForgeServer, client: httpx.Client, clock: FakeTime) -> None:
    forge = forge_for(fake, client, clock)
    forge.max_body = 600
    rows = "\n".join(f"| cm | KEY_{i} | old | new |" for i in range(100))
    big = proposal("d1", body=f"| object | field | git | live |\n|---|---|---|---|\n{rows}")
    first = reconcile_pull_request(forge, HEAD, BASE, big)
    assert first.pr is not None
    stored = fake.pr(first.pr.number).body
    assert len(stored) <= 600
    assert "more rows; run `syncer diff` to see all" in stored
    assert parse_marker(stored) is not None
    fake.clear_log()
    assert reconcile_pull_request(forge, HEAD, BASE, big).outcome is PrOutcome.UNCHANGED
    assert fake.writes == []


# -- transport: retries, rate limits, time bounds, errors -------------------------------------


def test_429_with_retry_after_waits_then_succeeds(fake: FakeForgeServer, client: httpx.Client, clock: FakeTime) -> None:
    forge = forge_for(fake, client, clock)
    fake.fail_next(429, 1, retry_after=7)
    result = reconcile_pull_request(forge, HEAD, BASE, proposal())
    assert result.outcome is PrOutcome.OPENED
    assert clock.sleeps == [7.0]


@pytest.mark.parametrize("fake", ["github", "gitlab"], indirect=True)
def test_rate_limit_reset_header_is_honoured(fake: FakeForgeServer, client: httpx.Client, clock: FakeTime) -> None:
    forge = forge_for(fake, client, clock)
    status = 403 if fake.kind == "github" else 429  # GitHub's primary limit is a 403
    fake.fail_next(status, 1, ratelimit_reset=clock.clock() + 30)
    assert forge.find_open(HEAD, BASE) is None
    assert len(clock.sleeps) == 1 and 28 <= clock.sleeps[0] <= 31


def test_rate_limit_beyond_budget_says_when_to_retry(fake: FakeForgeServer, client: httpx.Client, clock: FakeTime) -> None:
    forge = forge_for(fake, client, clock)
    fake.fail_next(429, 1, retry_after=3600)
    with pytest.raises(ForgeRateLimited) as err:
        forge.find_open(HEAD, BASE)
    assert err.value.transient
    assert "retry after" in str(err.value) and "3600s" in str(err.value)
    assert err.value.retry_at == pytest.approx(clock.clock() + 3600, abs=5)
    assert clock.sleeps == []


def test_server_errors_are_retried_and_open_one_pr(fake: FakeForgeServer, client: httpx.Client, clock: FakeTime) -> None:
    forge = forge_for(fake, client, clock)
    fake.fail_next(500, 2)
    pr = forge.create(HEAD, BASE, "title", "body", [])
    assert len(fake.prs) == 1 and pr.number == fake.prs[0].number
    assert len(clock.sleeps) == 2 and clock.sleeps[0] < clock.sleeps[1]  # exponential backoff
    assert [r.status for r in fake.requests if r.method == "POST"] == [500, 500, 201]


def test_5xx_until_budget_runs_out_is_transient(fake: FakeForgeServer, client: httpx.Client, clock: FakeTime) -> None:
    forge = forge_for(fake, client, clock, budget=10)
    fake.fail_next(503, 50)
    with pytest.raises(ForgeError) as err:
        forge.find_open(HEAD, BASE)
    assert err.value.transient and "retry budget" in str(err.value) and "503" in str(err.value)
    assert sum(clock.sleeps) <= 10


def test_hanging_forge_is_bounded(fake: FakeForgeServer, client: httpx.Client, clock: FakeTime) -> None:
    forge = forge_for(fake, client, clock, timeout=0.5, budget=2.0)
    fake.hang_next(10, count=20)
    started = time.monotonic()
    with pytest.raises(ForgeError) as err:
        reconcile_pull_request(forge, HEAD, BASE, proposal())
    assert time.monotonic() - started < 4
    assert err.value.transient
    message = str(err.value)
    assert fake.kind in message and "timed out" in message and "2s retry budget" in message
    assert fake.prs == []


def test_401_is_permanent_names_forge_and_flag(fake: FakeForgeServer, client: httpx.Client, clock: FakeTime) -> None:
    wrong = "wrong-token-0123456789abcdef"
    forge = forge_for(fake, client, clock, token=wrong)
    with pytest.raises(ForgeError) as err:
        reconcile_pull_request(forge, HEAD, BASE, proposal())
    message = str(err.value)
    assert not err.value.transient
    assert message.startswith(f"token rejected by {fake.kind} at {fake.api_url}")
    assert "--token-file/SYNCER_FORGE_TOKEN" in message
    assert wrong not in message and wrong not in repr(err.value)
    assert clock.sleeps == []


def test_403_and_404_say_what_is_wrong(fake: FakeForgeServer, client: httpx.Client, clock: FakeTime) -> None:
    forge = forge_for(fake, client, clock)
    fake.fail_next(403)
    with pytest.raises(ForgeError) as err:
        forge.create(HEAD, BASE, "t", "b", [])
    assert not err.value.transient
    assert str(err.value).startswith("token lacks permission") and fake.repo in str(err.value)

    nowhere = forge_for(fake, client, clock, repo="acme/nope")
    with pytest.raises(ForgeError) as err:
        nowhere.find_open(HEAD, BASE)
    assert not err.value.transient
    assert "repository acme/nope not found on" in str(err.value) and "cannot see it" in str(err.value)


def test_token_never_leaks(
    fake: FakeForgeServer, client: httpx.Client, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    texts: list[str] = []
    forge = forge_for(fake, client, clock, timeout=0.3, budget=1.0)
    texts += [repr(forge), repr(vars(forge)), repr(vars(vars(forge)["_http"]))]
    reconcile_pull_request(forge, HEAD, BASE, proposal("d1"))
    scenarios: list[Callable[[], None]] = [
        lambda: fake.fail_next(401),
        lambda: fake.fail_next(403),
        lambda: fake.fail_next(503, 20),
        lambda: fake.fail_next(429, 1, retry_after=9999),
        lambda: fake.hang_next(5, 10),
        # a proxy that echoes the request headers back in its error page
        lambda: fake.fail_next(400, body=f"bad request; got Authorization: Bearer {TOKEN}"),
        lambda: fake.fail_next(502, 20, body={"message": f"upstream refused token {TOKEN}"}),
    ]
    for arrange in scenarios:
        arrange()
        try:
            reconcile_pull_request(forge, HEAD, BASE, proposal("d2"))
        except ForgeError as exc:
            texts += [str(exc), repr(exc), repr(exc.__cause__), str(exc.__cause__)]
        fake.stop_faults()
    for token in (TOKEN + "x", "a-different-secret-token-xyz"):
        bad = forge_for(fake, client, clock, token=token)
        try:
            bad.find_open(HEAD, BASE)
        except ForgeError as exc:
            texts += [str(exc), repr(exc)]
    texts.append(caplog.text)
    joined = "\n".join(texts)
    assert "retrying" in caplog.text  # the retries were logged...
    assert "got Authorization: Bearer ***" in joined  # ...echoed bodies were masked...
    assert TOKEN not in joined and "a-different-secret-token-xyz" not in joined  # ...without the token


# -- configuration -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "given", "expected"),
    [
        ("github", "", "https://api.github.com"),
        ("github", "https://github.com", "https://api.github.com"),
        ("github", "https://api.github.com/", "https://api.github.com"),
        ("github", "https://ghe.example.com", "https://ghe.example.com/api/v3"),
        ("github", "https://ghe.example.com/api/v3/", "https://ghe.example.com/api/v3"),
        ("gitea", "https://git.example.com", "https://git.example.com/api/v1"),
        ("gitea", "https://git.example.com/sub/api/v1", "https://git.example.com/sub/api/v1"),
        ("gitlab", "", "https://gitlab.com/api/v4"),
        ("gitlab", "https://user:pw@gitlab.example.com/", "https://gitlab.example.com/api/v4"),
    ],
)
def test_api_url(kind: str, given: str, expected: str) -> None:
    assert api_url(kind, given) == expected


def test_bad_settings_are_config_errors(client: httpx.Client) -> None:
    with pytest.raises(ConfigError, match="unknown --forge"):
        make_forge("bitbucket", "", "a/b", "t", client=client)
    with pytest.raises(ConfigError, match="--forge-url is required"):
        make_forge("gitea", "", "a/b", "t", client=client)
    with pytest.raises(ConfigError, match="OWNER/NAME"):
        make_forge("github", "", "just-a-name", "t", client=client)
    with pytest.raises(ConfigError, match="SYNCER_FORGE_TOKEN"):
        make_forge("github", "", "a/b", "  ", client=client)
    nested = make_forge("gitlab", "", "group/sub/project", "t", client=client)
    assert "group/sub/project" in repr(nested) and "'t'" not in repr(nested)


def test_render_body_limit_counts_rows_and_keeps_marker() -> None:
    marker = "<!-- syncer:drift-hash=d1 body-hash=0123456789abcdef -->"
    rows = [f"| cm | KEY_{i} | a | b |" for i in range(200)]
    body = "## drift\n\n| o | f | g | l |\n|---|---|---|---|\n" + "\n".join(rows) + "\n\nrun it\n\n" + marker + "\n"
    cut = render_body_limit(body, 1000)
    assert len(cut) <= 1000 and cut.rstrip().endswith(marker)
    kept = sum(1 for line in cut.splitlines() if line.startswith("| cm |"))
    assert f"… truncated: {200 - kept} more rows; run `syncer diff` to see all" in cut
    assert render_body_limit(body, len(body)) == body


# -- the HTTP helper through httpx's mock transport (no server needed) ----------------------


def _mock_forge(handler: Callable[[httpx.Request], httpx.Response], clock: FakeTime) -> tuple[Forge, httpx.Client]:
    client = httpx.Client(transport=httpx.MockTransport(handler))
    forge = make_forge("github", "https://ghe.example", "acme/infra", TOKEN, client=client,
                       sleep=clock.sleep, clock=clock.clock)
    return forge, client


def test_retry_after_as_http_date(clock: FakeTime) -> None:
    answers = iter([
        httpx.Response(429, headers={"Retry-After": email.utils.formatdate(clock.clock() + 20, usegmt=True)}),
        httpx.Response(200, json=[]),
    ])
    forge, client = _mock_forge(lambda request: next(answers), clock)
    with client:
        assert forge.find_open(HEAD, BASE) is None
    assert len(clock.sleeps) == 1 and 18 <= clock.sleeps[0] <= 21


def test_pagination_link_to_another_host_is_refused(clock: FakeTime) -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, json=[], headers={"Link": '<https://evil.example/next?page=2>; rel="next"'})

    forge, client = _mock_forge(handler, clock)
    with client, pytest.raises(ForgeError, match="refusing to send the token"):
        forge.find_open(HEAD, BASE)
    assert all(url.startswith("https://ghe.example/api/v3/") for url in seen)


def test_auth_headers_per_forge(clock: FakeTime) -> None:
    sent: dict[str, httpx.Headers] = {}
    for kind in KINDS:
        def handler(request: httpx.Request, kind: str = kind) -> httpx.Response:
            sent[kind] = request.headers
            return httpx.Response(200, json=[])

        with httpx.Client(transport=httpx.MockTransport(handler)) as client:
            make_forge(kind, "https://git.example", "acme/infra", TOKEN, client=client).find_open(HEAD, BASE)
    assert sent["github"]["authorization"] == f"Bearer {TOKEN}"
    assert sent["gitea"]["authorization"] == f"token {TOKEN}"
    assert sent["gitlab"]["private-token"] == TOKEN and "authorization" not in sent["gitlab"]


# -- look-alikes: a PR with syncer's branch name that is not syncer's ---------------------

FORK = "mallory/infra"


def _fetch_pull(fake: FakeForgeServer, number: int) -> Any:
    """One PR as the forge's own API shows it (GitLab: the MR)."""
    path = (f"/projects/{fake.repo.replace('/', '%2F')}/merge_requests/{number}" if fake.kind == "gitlab"
            else f"/repos/{fake.repo}/pulls/{number}")
    header = {"PRIVATE-TOKEN": TOKEN} if fake.kind == "gitlab" else {"Authorization": f"token {TOKEN}"}
    return httpx.get(fake.api_url + path, headers=header, timeout=10).json()


def _writes_to(fake: FakeForgeServer, number: int) -> list[str]:
    """The write calls made on PR ``number`` (its own path, its comments, labels, notes)."""
    pattern = re.compile(rf"/(?:pulls|merge_requests|issues)/{number}(?:/|$)")
    return [f"{r.method} {r.path}" for r in fake.writes if pattern.search(r.path)]


def test_a_fork_pr_is_read_as_from_another_repository(fake: FakeForgeServer) -> None:
    """Each client reads the head repository the way its forge says it: GitHub/Gitea
    ``head.repo`` (id and full_name against ``base.repo``), GitLab ``source_project_id``
    against ``target_project_id``; and the author (``user.login`` / ``author.username``)."""
    from importlib import import_module

    to_pr = import_module(f"syncer.forges.{fake.kind}")._to_pr
    own = fake.add_pr(HEAD, BASE)
    fork = fake.add_pr(HEAD, BASE, head_repo=FORK, author="mallory")
    mine, theirs = to_pr(_fetch_pull(fake, own.number)), to_pr(_fetch_pull(fake, fork.number))
    assert (mine.same_repo, mine.author, mine.head_sha) == (True, "syncer-bot", fake.sha(HEAD))
    assert (theirs.same_repo, theirs.author, theirs.head) == (False, "mallory", HEAD)
    assert theirs.head_sha != fake.sha(HEAD)  # the fork's commit, not the branch syncer pushed


def test_a_fork_pr_with_syncers_branch_name_is_never_touched(
    fake: FakeForgeServer, client: httpx.Client, clock: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    """Mallory opens a PR from her fork's ``syncer/asgard`` into main, even with a body
    carrying syncer's marker. syncer never adopts, updates, comments on or closes it, and
    opens (then closes) its own next to it."""
    marker_body = "| x | y |\n\n<!-- syncer:drift-hash=d0 body-hash=0123456789abcdef -->\n"
    fork = fake.add_pr(HEAD, BASE, title="syncer: copy asgard's live values back", body=marker_body,
                       labels=("syncer",), head_repo=FORK, author="mallory")
    forge = forge_for(fake, client, clock)
    assert forge.find_open(HEAD, BASE) is None
    caplog.set_level(logging.WARNING, logger="syncer.forges")
    opened = reconcile_pull_request(forge, HEAD, BASE, proposal("d1"))
    assert opened.outcome is PrOutcome.OPENED and opened.pr is not None
    assert opened.pr.number != fork.number and opened.pr.same_repo
    updated = reconcile_pull_request(forge, HEAD, BASE, proposal("d2", title="changed"))
    assert updated.outcome is PrOutcome.UPDATED and updated.pr is not None
    assert updated.pr.number == opened.pr.number
    closed = reconcile_pull_request(forge, HEAD, BASE, None)
    assert closed.outcome is PrOutcome.CLOSED and closed.pr is not None
    assert closed.pr.number == opened.pr.number
    if fake.kind != "github":  # GitHub's owner:branch filter leaves the fork out of the answer
        said = [r.getMessage() for r in caplog.records if f"ignoring pull request #{fork.number}" in r.getMessage()]
        assert len(said) == 1 and "fork" in said[0]  # once, not at every look

    assert _writes_to(fake, fork.number) == []
    stored = fake.pr(fork.number)
    assert (stored.state, stored.title, stored.body, stored.labels, stored.comments) == (
        "open", "syncer: copy asgard's live values back", marker_body, ["syncer"], [])


def test_a_pr_opened_by_another_account_is_never_touched(
    fake: FakeForgeServer, client: httpx.Client, clock: FakeTime
) -> None:
    """A PR from syncer's branch in the repository itself, but opened by another account:
    not syncer's. The forge allows one PR per branch, so syncer says so and writes nothing."""
    other = fake.add_pr(HEAD, BASE, title="mine", author="mallory")
    forge = forge_for(fake, client, clock)
    assert forge.find_open(HEAD, BASE) is None
    with pytest.raises(ForgeError) as err:
        reconcile_pull_request(forge, HEAD, BASE, proposal("d1"))
    assert "another account" in str(err.value)
    assert _writes_to(fake, other.number) == []
    assert [r.status for r in fake.writes if r.path.endswith(("/pulls", "/merge_requests"))] == [
        {"github": 422, "gitea": 409, "gitlab": 409}[fake.kind]]  # the create, refused: one per branch
    assert (fake.pr(other.number).title, fake.pr(other.number).comments) == ("mine", [])
    fake.close_pr(other.number)
    assert forge.find_latest_closed(HEAD, BASE) is None  # nor does it count as a closed one of syncer's


def test_a_pr_whose_head_syncer_did_not_push_is_left_alone(
    fake: FakeForgeServer, client: httpx.Client, clock: FakeTime
) -> None:
    forge = forge_for(fake, client, clock)
    opened = reconcile_pull_request(forge, HEAD, BASE, proposal("d1"), pushed=[fake.sha(HEAD)])
    assert opened.outcome is PrOutcome.OPENED and opened.pr is not None
    fake.clear_log()
    for drift in ("d2", None):  # neither updated nor closed
        left = reconcile_pull_request(forge, HEAD, BASE, proposal(drift) if drift else None, pushed=["ab" * 20])
        assert left.outcome is PrOutcome.HUMAN_PUSHED and "not a commit syncer pushed" in left.message
    assert fake.writes == []
    updated = reconcile_pull_request(forge, HEAD, BASE, proposal("d2"), pushed=["ab" * 20, fake.sha(HEAD)])
    assert updated.outcome is PrOutcome.UPDATED


def test_the_account_is_looked_up_once(fake: FakeForgeServer, client: httpx.Client, clock: FakeTime) -> None:
    forge = forge_for(fake, client, clock)
    for drift in ("d1", "d2", "d2"):
        reconcile_pull_request(forge, HEAD, BASE, proposal(drift))
    assert [r.path for r in fake.requests if r.path == "/user"] == ["/user"]
    given = make_forge(fake.kind, fake.url, fake.repo, TOKEN, client=client, sleep=clock.sleep,
                       clock=clock.clock, account="syncer-bot")
    fake.clear_log()
    assert given.find_open(HEAD, BASE) is not None
    assert all(r.path != "/user" for r in fake.requests)


def test_a_pr_adopted_after_already_exists_must_have_a_head_syncer_pushed(
    fake: FakeForgeServer, client: httpx.Client, clock: FakeTime
) -> None:
    """The one syncer just opened is its own whatever the answer says of its head; one
    adopted after "already exists" is checked like any found one."""
    forge = forge_for(fake, client, clock)
    fresh = reconcile_pull_request(forge, HEAD, BASE, proposal("d1"), pushed=["ab" * 20])
    assert fresh.outcome is PrOutcome.OPENED and fresh.pr is not None
    fake.clear_log()
    adopted = reconcile_pull_request(_CreateFirst(forge), HEAD, BASE, proposal("d2"), pushed=["ab" * 20])
    assert adopted.outcome is PrOutcome.HUMAN_PUSHED and adopted.pr is not None
    assert adopted.pr.number == fresh.pr.number
    assert _writes_to(fake, adopted.pr.number) == []
