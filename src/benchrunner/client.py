"""Typed HTTP client of the benchrunner ``/v0`` API, used by the CLI, the tests and the benchmarks.

Errors::

    ApiError            any non-2xx answer (``status`` and the server's ``message``), or no answer
                        at all (``status == 0``: connection refused, DNS failure, timeout)
    JobWaitTimeout      ``wait_for_job`` reached its deadline; a ``TimeoutError``, so an ``OSError``

Requests and answers whose shapes are ``benchrunner.api``'s models (the ones the server validates
with) are sent and parsed with them: such a method takes or returns the model; every other
method returns the parsed JSON body. List methods return a ``Page`` (a list that also knows the
``X-Total-Count``). Resource references are UUIDs or slugs, as the server accepts them.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Generic, Literal, TypeVar, overload
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from benchrunner import __version__
from benchrunner.api.alerts import (
    Alert,
    AlertPrecision,
    AlertStatus,
    AlertUpdate,
    ListedAlertStatus,
    Verdict,
    VerdictFilter,
)
from benchrunner.api.base import Answer, refusal_message
from benchrunner.api.bisections import Bisection, BisectionCreate
from benchrunner.api.calibrations import AppliedCalibration, Calibration, CalibrationCreate
from benchrunner.api.dimensions import (
    BaselineReset,
    Benchmark,
    BenchmarkUpdate,
    Branch,
    HistoryDimension,
    Measure,
    NewBaseline,
    Testbed,
)
from benchrunner.api.jobs import Job, JobLogEnd, JobLogPage, JobLogPiece
from benchrunner.api.organizations import (
    Member,
    MemberPatch,
    NewMember,
    NewOrganization,
    NewProject,
    Organization,
    Project,
    Role,
    Visibility,
)
from benchrunner.api.perf import Perf
from benchrunner.api.releases import Release
from benchrunner.api.reports import Report, ReportUpdate, RunAnswer
from benchrunner.api.run import RunBody
from benchrunner.api.runners import (
    CreatedRunner,
    NewRunner,
    Runner,
    RunnerKey,
    RunnerPatch,
    RunnerToken,
    SpecRef,
)
from benchrunner.api.server import Health, Template
from benchrunner.api.specs import Architecture, Spec, SpecBody, SpecPatch
from benchrunner.api.thresholds import (
    Threshold,
    ThresholdCreate,
    ThresholdModelBody,
    ThresholdUpdate,
)
from benchrunner.api.users import CreatedToken, NewToken, NewUser, Token, User
from benchrunner.api.webhooks import (
    CreatedWebhook,
    Webhook,
    WebhookCreate,
    WebhookDelivery,
    WebhookFormat,
)
from benchrunner.core.tiers import Plan
from benchrunner.core.tokens import RunnerKeyFormat

JsonObject = dict[str, Any]
PlanName = Literal["enterprise", "team", "free"]
Dimension = Literal["branches", "testbeds", "benchmarks", "measures"]
"""The four kinds of a project's history that share one list endpoint's shape."""
DIMENSION_ANSWERS: dict[Dimension, type[HistoryDimension]] = {
    "branches": Branch,
    "testbeds": Testbed,
    "benchmarks": Benchmark,
    "measures": Measure,
}

DEFAULT_PER_PAGE = 8
MAX_PER_PAGE = 255
FINAL_JOB_STATUSES = frozenset({"processed", "failed", "canceled"})
"""Where ``wait_for_job`` stops: terminal states plus ``failed`` (only a late resend revives it)."""


class ApiError(Exception):
    """The server answered with an error status, or could not be reached (``status == 0``)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        error_code: str | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_code = error_code
        self.request_id = request_id
        self.retry_after = retry_after
        """Seconds the server asked to wait before trying again (``Retry-After``), if it did."""

    def __str__(self) -> str:
        return self.message


class JobWaitTimeout(TimeoutError):
    """The job did not reach a final status before the deadline; ``job`` is its last known state."""

    def __init__(self, message: str, job: Job) -> None:
        super().__init__(message)
        self.job = job


Item = TypeVar("Item")
Parsed = TypeVar("Parsed", bound=Answer)


class Page(list[Item], Generic[Item]):
    """One page of a list endpoint; ``total`` is the server's ``X-Total-Count`` when it sent one."""

    def __init__(self, items: list[Item], total: int | None) -> None:
        super().__init__(items)
        self.total = total


def request_json(body: BaseModel) -> JsonObject:
    """A request model as the JSON it sends: the fields given and not null (a model's
    defaults stay the server's to fill)."""
    return body.model_dump(mode="json", exclude_unset=True, exclude_none=True)


@contextmanager
def refused_as_bad_request() -> Iterator[None]:
    """Around building a request model: fields it refuses are the ``ApiError`` 400 the server
    would answer (its message too), raised before anything is sent."""
    try:
        yield
    except ValidationError as exc:
        raise ApiError(400, refusal_message(exc.errors()), error_code="bad_request") from None


def _segment(ref: str) -> str:
    """A reference made safe as one path segment, so ``a/b`` cannot reach another route."""
    return quote(ref, safe="")


def _retry_after(response: httpx.Response) -> float | None:
    """``Retry-After`` in seconds; None when absent or given as an HTTP date."""
    value = response.headers.get("Retry-After", "").strip()
    return float(value) if value.isdigit() else None


def _parsed(model: type[Parsed], body: object, what: str) -> Parsed:
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors()[:3]
        )
        raise ApiError(0, f"{what}: the answer is not a {model.__name__}: {problems}") from None


def _error_from(response: httpx.Response) -> ApiError:
    try:
        body = response.json()
    except ValueError:
        body = None
    retry_after = _retry_after(response)
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return ApiError(
            response.status_code,
            body["message"],
            error_code=body.get("error_code"),
            request_id=body.get("request_id"),
            retry_after=retry_after,
        )
    text = " ".join(response.text.split())[:200] or response.reason_phrase
    return ApiError(
        response.status_code, f"HTTP {response.status_code}: {text}", retry_after=retry_after
    )


@dataclass(frozen=True)
class PerfQuery:
    """What a perf query asks for: UUIDs, names or slugs, and times as aware datetimes."""

    branches: Sequence[str]
    testbeds: Sequence[str]
    benchmarks: Sequence[str]
    measures: Sequence[str]
    start_time: dt.datetime | None = None
    end_time: dt.datetime | None = None
    title: str | None = None

    def params(self) -> dict[str, str | int]:
        params: dict[str, str | int] = {
            "branches": ",".join(self.branches),
            "testbeds": ",".join(self.testbeds),
            "benchmarks": ",".join(self.benchmarks),
            "measures": ",".join(self.measures),
        }
        for name, value in (("start_time", self.start_time), ("end_time", self.end_time)):
            if value is not None:
                params[name] = int(value.timestamp() * 1000)
        if self.title:
            params["title"] = self.title
        return params


class BenchrunnerClient:
    """A synchronous client for one server; pass ``transport`` to talk to an in-process app."""

    def __init__(
        self,
        host: str,
        token: str | None,
        timeout: float = 30,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.host = host.rstrip("/")
        headers = {"User-Agent": f"benchrunner/{__version__}", "Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(
            base_url=self.host, headers=headers, timeout=timeout, transport=transport
        )

    # -- plumbing -------------------------------------------------------------------------------

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> BenchrunnerClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _send(
        self,
        method: str,
        path: str,
        *,
        json: object = None,
        params: Mapping[str, str | int] | None = None,
        headers: Mapping[str, str] | None = None,
        form: Mapping[str, str] | None = None,
        files: Mapping[str, tuple[str, bytes, str]] | None = None,
    ) -> httpx.Response:
        try:
            response = self._http.request(
                method, path, json=json, params=params, headers=headers, data=form, files=files
            )
        except httpx.TimeoutException as exc:
            reason = str(exc) or "timed out"
            raise ApiError(0, f"cannot reach server at {self.host}: {reason}") from exc
        except httpx.TransportError as exc:
            raise ApiError(0, f"cannot reach server at {self.host}: {exc}") from exc
        if response.is_error:
            raise _error_from(response)
        return response

    def _object(self, method: str, path: str, **kwargs: Any) -> JsonObject:
        body = self._send(method, path, **kwargs).json()
        if not isinstance(body, dict):
            raise ApiError(0, f"{method} {path}: expected a JSON object, got {type(body).__name__}")
        return body

    def _answer(self, model: type[Parsed], method: str, path: str, **kwargs: Any) -> Parsed:
        """The answer parsed as ``model``; ``ApiError`` (status 0) when it does not fit."""
        body = self._object(method, path, **kwargs)
        return _parsed(model, body, f"{method} {path}")

    def _page(self, path: str, params: Mapping[str, str | int]) -> Page[JsonObject]:
        response = self._send("GET", path, params=params)
        body = response.json()
        if not isinstance(body, list):
            raise ApiError(0, f"GET {path}: expected a JSON array, got {type(body).__name__}")
        total = response.headers.get("X-Total-Count")
        return Page(body, int(total) if total and total.isdigit() else None)

    def _answers(
        self, model: type[Parsed], path: str, params: Mapping[str, str | int]
    ) -> Page[Parsed]:
        """A page of a list endpoint, each item parsed as ``model``."""
        found = self._page(path, params)
        return Page([_parsed(model, item, f"GET {path}") for item in found], found.total)

    @staticmethod
    def _paging(page: int, per_page: int) -> dict[str, str | int]:
        return {"page": page, "per_page": per_page}

    # -- server ---------------------------------------------------------------------------------

    def health(self) -> Health:
        return self._answer(Health, "GET", "/v0/server/health")

    def templates(self) -> Page[Template]:
        return self._answers(Template, "/v0/templates", {})

    def publish_release(
        self, filename: str, wheel: bytes, *, channel: str, version: str, checksum: str
    ) -> Release:
        """A runner release (admins): the wheel, its version and SHA-256 (hex) on ``channel``."""
        return self._answer(
            Release,
            "POST",
            "/v0/server/releases",
            form={"channel": channel, "version": version, "checksum": checksum},
            files={"wheel": (filename, wheel, "application/octet-stream")},
        )

    def list_releases(self, channel: str | None = None) -> Page[Release]:
        params = {} if channel is None else {"channel": channel}
        return self._answers(Release, "/v0/server/releases", params)

    # -- users ----------------------------------------------------------------------------------

    def create_user(
        self, name: str, email: str, *, password: str | None = None, admin: bool = False
    ) -> User:
        """A new user (server admins only); ``password`` lets them sign in to the console."""
        with refused_as_bad_request():
            body = NewUser(name=name, email=email, password=password, admin=admin)
        return self._answer(User, "POST", "/v0/users", json=request_json(body))

    def list_users(self, *, page: int = 1, per_page: int = DEFAULT_PER_PAGE) -> Page[User]:
        return self._answers(User, "/v0/users", self._paging(page, per_page))

    def get_user(self, user: str) -> User:
        return self._answer(User, "GET", f"/v0/users/{_segment(user)}")

    def create_token(self, user: str, name: str, *, ttl: int | None = None) -> CreatedToken:
        """A new API token of ``user``; its ``token`` is shown this once. ``ttl``: seconds
        until it expires (None: never)."""
        with refused_as_bad_request():
            body = NewToken(name=name, ttl=ttl)
        path = f"/v0/users/{_segment(user)}/tokens"
        return self._answer(CreatedToken, "POST", path, json=request_json(body))

    def list_tokens(
        self,
        user: str,
        *,
        revoked: bool = False,
        page: int = 1,
        per_page: int = DEFAULT_PER_PAGE,
    ) -> Page[Token]:
        params = {**self._paging(page, per_page), "revoked": str(revoked).lower()}
        return self._answers(Token, f"/v0/users/{_segment(user)}/tokens", params)

    def revoke_token(self, user: str, token: str) -> None:
        """The token (its UUID) authenticates no one from now on."""
        self._send("DELETE", f"/v0/users/{_segment(user)}/tokens/{_segment(token)}")

    # -- organizations and projects -------------------------------------------------------------

    def create_organization(
        self, name: str, plan: PlanName = "free", *, slug: str | None = None
    ) -> Organization:
        with refused_as_bad_request():
            body = NewOrganization(name=name, plan=Plan(plan), slug=slug)
        return self._answer(Organization, "POST", "/v0/organizations", json=request_json(body))

    def list_organizations(
        self, *, page: int = 1, per_page: int = DEFAULT_PER_PAGE
    ) -> Page[Organization]:
        return self._answers(Organization, "/v0/organizations", self._paging(page, per_page))

    def get_organization(self, org: str) -> Organization:
        return self._answer(Organization, "GET", f"/v0/organizations/{_segment(org)}")

    def create_project(
        self, org: str, name: str, visibility: Visibility = "public", *, slug: str | None = None
    ) -> Project:
        with refused_as_bad_request():
            body = NewProject(name=name, visibility=visibility, slug=slug)
        path = f"/v0/organizations/{_segment(org)}/projects"
        return self._answer(Project, "POST", path, json=request_json(body))

    def list_projects(
        self, org: str, *, page: int = 1, per_page: int = DEFAULT_PER_PAGE
    ) -> Page[Project]:
        return self._answers(
            Project, f"/v0/organizations/{_segment(org)}/projects", self._paging(page, per_page)
        )

    def list_members(
        self, org: str, *, page: int = 1, per_page: int = DEFAULT_PER_PAGE
    ) -> Page[Member]:
        path = f"/v0/organizations/{_segment(org)}/members"
        return self._answers(Member, path, self._paging(page, per_page))

    def add_member(self, org: str, email: str, role: Role = "member") -> Member:
        """Add the existing user with this email to the organization (its leaders only)."""
        with refused_as_bad_request():
            body = NewMember(email=email, role=role)
        path = f"/v0/organizations/{_segment(org)}/members"
        return self._answer(Member, "POST", path, json=request_json(body))

    def update_member(self, org: str, user: str, role: Role) -> Member:
        path = f"/v0/organizations/{_segment(org)}/members/{_segment(user)}"
        return self._answer(Member, "PATCH", path, json=request_json(MemberPatch(role=role)))

    def remove_member(self, org: str, user: str) -> None:
        self._send("DELETE", f"/v0/organizations/{_segment(org)}/members/{_segment(user)}")

    def get_project(self, project: str) -> Project:
        return self._answer(Project, "GET", f"/v0/projects/{_segment(project)}")

    # -- specs ----------------------------------------------------------------------------------

    def create_spec(
        self,
        name: str,
        *,
        architecture: Architecture,
        cpu: int,
        memory: int,
        disk: int,
        network: bool = False,
        slug: str | None = None,
        noise: Mapping[str, Any] | None = None,
    ) -> Spec:
        """``noise``: ``noise_guard``, ``noise_cv_limit``, ``noise_drift_limit`` when given."""
        with refused_as_bad_request():
            body = SpecBody(
                **(noise or {}),
                name=name,
                architecture=architecture,
                cpu=cpu,
                memory=memory,
                disk=disk,
                network=network,
                slug=slug,
            )
        return self._answer(Spec, "POST", "/v0/specs", json=request_json(body))

    def list_specs(
        self, *, archived: bool = False, page: int = 1, per_page: int = DEFAULT_PER_PAGE
    ) -> Page[Spec]:
        params = {**self._paging(page, per_page), "archived": str(archived).lower()}
        return self._answers(Spec, "/v0/specs", params)

    def get_spec(self, spec: str) -> Spec:
        return self._answer(Spec, "GET", f"/v0/specs/{_segment(spec)}")

    def update_spec(
        self,
        spec: str,
        *,
        name: str | None = None,
        slug: str | None = None,
        archived: bool | None = None,
        noise: Mapping[str, Any] | None = None,
    ) -> Spec:
        """``noise``: the noise guard's fields to set (a limit of None: the server's default)."""
        with refused_as_bad_request():
            body = SpecPatch(**_present(name=name, slug=slug, archived=archived), **(noise or {}))
        sent = body.model_dump(mode="json", exclude_unset=True)  # a null limit: the default
        return self._answer(Spec, "PATCH", f"/v0/specs/{_segment(spec)}", json=sent)

    def delete_spec(self, spec: str) -> None:
        self._send("DELETE", f"/v0/specs/{_segment(spec)}")

    # -- runners --------------------------------------------------------------------------------

    # Runner methods taking ``organization`` manage that organization's own runners (its
    # leaders; its members list and read them); without it, the server's (server admins).

    @staticmethod
    def _runners(organization: str | None) -> str:
        if organization is None:
            return "/v0/runners"
        return f"/v0/organizations/{_segment(organization)}/runners"

    def create_runner(
        self,
        name: str,
        specs: list[str] | None = None,
        *,
        slug: str | None = None,
        public_key: str | None = None,
        key_format: RunnerKeyFormat | None = None,
        organization: str | None = None,
    ) -> CreatedRunner:
        """The new runner plus its ``token``, which the server shows this once. With
        ``public_key`` (Ed25519, base64url), the runner must sign its results; ``key_format``
        ``"bencher"`` issues the token in the form Bencher's runner binary requires; with
        ``organization``, it claims only that organization's jobs."""
        with refused_as_bad_request():
            body = NewRunner(
                name=name,
                specs=list(specs or []),
                slug=slug,
                public_key=public_key,
                **_present(key_format=key_format),
            )
        return self._answer(
            CreatedRunner, "POST", self._runners(organization), json=request_json(body)
        )

    def list_runners(
        self,
        *,
        archived: bool = False,
        page: int = 1,
        per_page: int = DEFAULT_PER_PAGE,
        organization: str | None = None,
    ) -> Page[Runner]:
        params = {**self._paging(page, per_page), "archived": str(archived).lower()}
        return self._answers(Runner, self._runners(organization), params)

    def get_runner(self, runner: str, *, organization: str | None = None) -> Runner:
        return self._answer(Runner, "GET", f"{self._runners(organization)}/{_segment(runner)}")

    def update_runner(
        self,
        runner: str,
        *,
        name: str | None = None,
        slug: str | None = None,
        archived: bool | None = None,
        paused: bool | None = None,
        organization: str | None = None,
    ) -> Runner:
        """Change only the fields given; archiving or rotating closes the runner's channel."""
        with refused_as_bad_request():
            body = RunnerPatch(name=name, slug=slug, archived=archived, paused=paused)
        path = f"{self._runners(organization)}/{_segment(runner)}"
        return self._answer(Runner, "PATCH", path, json=request_json(body))

    def set_runner_public_key(self, runner: str, public_key: str | None) -> Runner:
        """Register the runner's Ed25519 public key (base64url), or remove it with None."""
        with refused_as_bad_request():
            body = RunnerPatch(public_key=public_key)
        sent = body.model_dump(mode="json", exclude_unset=True)  # null: no key from now on
        return self._answer(Runner, "PATCH", f"/v0/runners/{_segment(runner)}", json=sent)

    def rotate_runner_token(
        self, runner: str, *, bencher_format: bool = False, organization: str | None = None
    ) -> RunnerToken:
        """``{uuid, token}``: the old token stops working at once (409 for an archived runner).
        ``bencher_format``: the new token in Bencher's form, through Bencher's endpoint (whose
        answer names it ``key``; it is returned as ``token`` here too)."""
        path = f"{self._runners(organization)}/{_segment(runner)}"
        if not bencher_format:
            return self._answer(RunnerToken, "POST", f"{path}/token")
        rotated = self._answer(RunnerKey, "POST", f"{path}/key")
        return RunnerToken.model_validate({**rotated.model_dump(), "token": rotated.key})

    def list_runner_specs(self, runner: str) -> Page[Spec]:
        return self._answers(Spec, f"/v0/runners/{_segment(runner)}/specs", {})

    def add_runner_spec(self, runner: str, spec: str) -> Spec:
        with refused_as_bad_request():
            body = SpecRef(spec=spec)
        path = f"/v0/runners/{_segment(runner)}/specs"
        return self._answer(Spec, "POST", path, json=request_json(body))

    def remove_runner_spec(self, runner: str, spec: str) -> None:
        self._send("DELETE", f"/v0/runners/{_segment(runner)}/specs/{_segment(spec)}")

    # -- runs, reports and jobs -----------------------------------------------------------------

    def run(
        self, body: RunBody | Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> RunAnswer:
        """``POST /v0/run``: the report, with ``job`` (a UUID) when a runner will execute it,
        and ``deduplicated`` (true when ``idempotency_key`` repeated an earlier submission,
        whose report it is). A full queue is an ``ApiError`` with status 429 and
        ``retry_after``. A mapping is sent as it is, for bodies the server is to judge."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        sent = request_json(body) if isinstance(body, RunBody) else dict(body)
        return self._answer(RunAnswer, "POST", "/v0/run", json=sent, headers=headers)

    def get_report(self, project: str, report: str, *, samples: bool = False) -> Report:
        """The report; with ``samples``, each metric's raw samples too."""
        path = f"/v0/projects/{_segment(project)}/reports/{_segment(report)}"
        if samples:
            return self._answer(Report, "GET", path, params={"samples": "true"})
        return self._answer(Report, "GET", path)

    def update_report(
        self,
        project: str,
        report: str,
        *,
        bisect_range: Sequence[str] | None = None,
        bisect_image: str | None = None,
    ) -> Report:
        """Give the report the commits since the previous one (oldest first) and the image
        tag holding ``{commit}`` that a bisection of its alerts runs (None: unchanged)."""
        body = ReportUpdate(
            bisect_range=None if bisect_range is None else list(bisect_range),
            bisect_image=bisect_image,
        )
        path = f"/v0/projects/{_segment(project)}/reports/{_segment(report)}"
        return self._answer(Report, "PATCH", path, json=request_json(body))

    def perf(self, project: str, query: PerfQuery) -> Perf:
        """``GET /v0/projects/{project}/perf``: each series asked for, with its points."""
        path = f"/v0/projects/{_segment(project)}/perf"
        return self._answer(Perf, "GET", path, params=query.params())

    def perf_export(
        self, project: str, query: PerfQuery, kind: Literal["csv", "img"]
    ) -> httpx.Response:
        """The perf query's ``/csv`` or ``/img`` form: the raw response, CSV text or PNG
        bytes."""
        path = f"/v0/projects/{_segment(project)}/perf/{kind}"
        return self._send("GET", path, params=query.params())

    # -- history: dimensions, thresholds, alerts, baselines --------------------------------------

    @overload
    def list_dimensions(
        self,
        project: str,
        dimension: Literal["branches"],
        *,
        name: str | None = None,
        page: int = 1,
        per_page: int = DEFAULT_PER_PAGE,
    ) -> Page[Branch]: ...

    @overload
    def list_dimensions(
        self,
        project: str,
        dimension: Literal["testbeds"],
        *,
        name: str | None = None,
        page: int = 1,
        per_page: int = DEFAULT_PER_PAGE,
    ) -> Page[Testbed]: ...

    @overload
    def list_dimensions(
        self,
        project: str,
        dimension: Literal["benchmarks"],
        *,
        name: str | None = None,
        page: int = 1,
        per_page: int = DEFAULT_PER_PAGE,
    ) -> Page[Benchmark]: ...

    @overload
    def list_dimensions(
        self,
        project: str,
        dimension: Literal["measures"],
        *,
        name: str | None = None,
        page: int = 1,
        per_page: int = DEFAULT_PER_PAGE,
    ) -> Page[Measure]: ...

    @overload
    def list_dimensions(
        self,
        project: str,
        dimension: Dimension,
        *,
        name: str | None = None,
        page: int = 1,
        per_page: int = DEFAULT_PER_PAGE,
    ) -> Page[HistoryDimension]: ...

    def list_dimensions(
        self,
        project: str,
        dimension: Dimension,
        *,
        name: str | None = None,
        page: int = 1,
        per_page: int = DEFAULT_PER_PAGE,
    ) -> Page[Any]:  # each dimension's own model, as the overloads say
        """``GET /v0/projects/{project}/{branches|testbeds|benchmarks|measures}``, by name;
        ``name`` keeps only the one so named."""
        params = {**self._paging(page, per_page), **_present(name=name)}
        path = f"/v0/projects/{_segment(project)}/{dimension}"
        return self._answers(DIMENSION_ANSWERS[dimension], path, params)

    def update_benchmark(self, project: str, benchmark: str, *, ignored: bool) -> Benchmark:
        """Ignore a benchmark (its metrics are stored but never judged), or stop ignoring it."""
        path = f"/v0/projects/{_segment(project)}/benchmarks/{_segment(benchmark)}"
        body = request_json(BenchmarkUpdate(ignored=ignored))
        return self._answer(Benchmark, "PATCH", path, json=body)

    def list_thresholds(
        self,
        project: str,
        *,
        branch: str | None = None,
        testbed: str | None = None,
        measure: str | None = None,
        benchmark: str | None = None,
        page: int = 1,
        per_page: int = DEFAULT_PER_PAGE,
    ) -> Page[Threshold]:
        """Thresholds with their current ``model``; filters are UUIDs, slugs or names."""
        filters = _present(branch=branch, testbed=testbed, measure=measure, benchmark=benchmark)
        return self._answers(
            Threshold,
            f"/v0/projects/{_segment(project)}/thresholds",
            {**self._paging(page, per_page), **filters},
        )

    def get_threshold(self, project: str, threshold: str) -> Threshold:
        """The threshold with its ``model`` and ``models`` (every model it had, newest first)."""
        path = f"/v0/projects/{_segment(project)}/thresholds/{_segment(threshold)}"
        return self._answer(Threshold, "GET", path)

    def create_threshold(
        self,
        project: str,
        *,
        branch: str,
        testbed: str,
        measure: str,
        model: ThresholdModelBody,
        benchmark: str | None = None,
        alert_when_noisy: bool | None = None,
        confirm: int | None = None,
        bisect: bool | None = None,
    ) -> Threshold:
        """A threshold for the series; ``benchmark`` makes it an override for that benchmark.
        ``ApiError`` 409 when the series has one.
        ``alert_when_noisy``: it alerts on reports the noise guard found noisy too.
        ``confirm``: confirmation runs before a runner job's crossing alerts.
        ``bisect``: its alerts start a bisection by themselves."""
        body = ThresholdCreate(
            **_model_fields(model),
            branch=branch,
            testbed=testbed,
            measure=measure,
            benchmark=benchmark,
            alert_when_noisy=alert_when_noisy,
            confirm=confirm,
            bisect=bisect,
        )
        path = f"/v0/projects/{_segment(project)}/thresholds"
        return self._answer(Threshold, "POST", path, json=request_json(body))

    def update_threshold(
        self,
        project: str,
        threshold: str,
        model: ThresholdModelBody,
        alert_when_noisy: bool | None = None,
        *,
        confirm: int | None = None,
        bisect: bool | None = None,
    ) -> Threshold:
        """Replace the threshold's model; the old one stays in its ``models``.
        ``alert_when_noisy``, ``confirm``, ``bisect``: set them too (None: unchanged)."""
        path = f"/v0/projects/{_segment(project)}/thresholds/{_segment(threshold)}"
        body = ThresholdUpdate(
            **_model_fields(model),
            alert_when_noisy=alert_when_noisy,
            confirm=confirm,
            bisect=bisect,
        )
        return self._answer(Threshold, "PUT", path, json=request_json(body))

    def delete_threshold(self, project: str, threshold: str) -> None:
        """Delete the threshold with its models, boundaries and alerts."""
        self._send("DELETE", f"/v0/projects/{_segment(project)}/thresholds/{_segment(threshold)}")

    def list_alerts(
        self,
        project: str,
        *,
        status: ListedAlertStatus | None = None,
        branch: str | None = None,
        testbed: str | None = None,
        benchmark: str | None = None,
        measure: str | None = None,
        report: str | None = None,
        verdict: VerdictFilter | None = None,
        page: int = 1,
        per_page: int = DEFAULT_PER_PAGE,
    ) -> Page[Alert]:
        """Alerts, newest first; ``report`` is the UUID of the report that raised them,
        ``verdict`` a triage verdict or ``untriaged``; ``status`` ``pending`` or ``suspected``
        lists those held back for confirmation runs (left out otherwise)."""
        filters = _present(
            status=status,
            branch=branch,
            testbed=testbed,
            benchmark=benchmark,
            measure=measure,
            report=report,
            verdict=verdict,
        )
        return self._answers(
            Alert,
            f"/v0/projects/{_segment(project)}/alerts",
            {**self._paging(page, per_page), **filters},
        )

    def get_alert(self, project: str, alert: str) -> Alert:
        """The alert, with ``bisection``: the latest bisection started from it."""
        path = f"/v0/projects/{_segment(project)}/alerts/{_segment(alert)}"
        return self._answer(Alert, "GET", path)

    def update_alert(self, project: str, alert: str, status: AlertStatus) -> Alert:
        """Set the alert's status (``dismissed``, ``silenced`` or back to ``active``)."""
        path = f"/v0/projects/{_segment(project)}/alerts/{_segment(alert)}"
        return self._answer(Alert, "PATCH", path, json=request_json(AlertUpdate(status=status)))

    def triage_alert(self, project: str, alert: str, verdict: Verdict | None) -> Alert:
        """Set the alert's verdict (``None`` takes it back); the server keeps who and when."""
        path = f"/v0/projects/{_segment(project)}/alerts/{_segment(alert)}"
        body = AlertUpdate(verdict=verdict).model_dump(mode="json", exclude_unset=True)
        return self._answer(Alert, "PATCH", path, json=body)

    def alert_precision(self, project: str) -> AlertPrecision:
        """The precision of the project's alerts, overall and per threshold."""
        path = f"/v0/projects/{_segment(project)}/alerts/precision"
        return self._answer(AlertPrecision, "GET", path)

    def create_calibration(
        self, project: str, body: CalibrationCreate | Mapping[str, Any]
    ) -> Calibration:
        """Start a calibration: ``body`` as ``POST /v0/projects/{project}/calibrations``; a
        mapping is sent as it is, for bodies the server is to judge."""
        path = f"/v0/projects/{_segment(project)}/calibrations"
        sent = request_json(body) if isinstance(body, CalibrationCreate) else dict(body)
        return self._answer(Calibration, "POST", path, json=sent)

    def get_calibration(self, project: str, calibration: str) -> Calibration:
        path = f"/v0/projects/{_segment(project)}/calibrations/{_segment(calibration)}"
        return self._answer(Calibration, "GET", path)

    def list_calibrations(self, project: str) -> Page[Calibration]:
        return self._answers(Calibration, f"/v0/projects/{_segment(project)}/calibrations", {})

    def apply_calibration(self, project: str, calibration: str) -> AppliedCalibration:
        """Make a done calibration's proposal the target branch's per-benchmark thresholds."""
        path = f"/v0/projects/{_segment(project)}/calibrations/{_segment(calibration)}/apply"
        return self._answer(AppliedCalibration, "POST", path)

    def create_webhook(
        self,
        project: str,
        url: str,
        *,
        events: Sequence[str] | None = None,
        secret: str | None = None,
        webhook_format: WebhookFormat = "json",
    ) -> CreatedWebhook:
        """Register a webhook; the answer's ``secret`` is shown this once (no ``events``: the
        server's default ones; any other name is a 400)."""
        with refused_as_bad_request():
            chosen = _present(events=list(events or []) or None)
            body = WebhookCreate(url=url, format=webhook_format, secret=secret, **chosen)
        path = f"/v0/projects/{_segment(project)}/webhooks"
        return self._answer(CreatedWebhook, "POST", path, json=request_json(body))

    def list_webhooks(self, project: str) -> Page[Webhook]:
        return self._answers(Webhook, f"/v0/projects/{_segment(project)}/webhooks", {})

    def get_webhook(self, project: str, webhook: str) -> Webhook:
        path = f"/v0/projects/{_segment(project)}/webhooks/{_segment(webhook)}"
        return self._answer(Webhook, "GET", path)

    def delete_webhook(self, project: str, webhook: str) -> None:
        self._send("DELETE", f"/v0/projects/{_segment(project)}/webhooks/{_segment(webhook)}")

    def list_webhook_deliveries(
        self, project: str, webhook: str, *, page: int = 1, per_page: int = DEFAULT_PER_PAGE
    ) -> Page[WebhookDelivery]:
        """The webhook's deliveries, newest first, each with its attempts."""
        path = f"/v0/projects/{_segment(project)}/webhooks/{_segment(webhook)}/deliveries"
        return self._answers(WebhookDelivery, path, self._paging(page, per_page))

    def create_bisection(
        self, project: str, body: BisectionCreate | Mapping[str, Any]
    ) -> Bisection:
        """Start a bisection (``POST /v0/projects/{project}/bisections``); a mapping is sent as
        it is, for bodies the server is to judge."""
        sent = request_json(body) if isinstance(body, BisectionCreate) else dict(body)
        path = f"/v0/projects/{_segment(project)}/bisections"
        return self._answer(Bisection, "POST", path, json=sent)

    def get_bisection(self, project: str, bisection: str) -> Bisection:
        path = f"/v0/projects/{_segment(project)}/bisections/{_segment(bisection)}"
        return self._answer(Bisection, "GET", path)

    def list_bisections(
        self, project: str, *, page: int = 1, per_page: int = DEFAULT_PER_PAGE
    ) -> Page[Bisection]:
        """The project's bisections, newest first."""
        path = f"/v0/projects/{_segment(project)}/bisections"
        return self._answers(Bisection, path, self._paging(page, per_page))

    def cancel_bisection(self, project: str, bisection: str) -> Bisection:
        """Cancel a running bisection and its jobs under way (409 when it is not running)."""
        path = f"/v0/projects/{_segment(project)}/bisections/{_segment(bisection)}/cancel"
        return self._answer(Bisection, "POST", path)

    def reset_baseline(
        self,
        project: str,
        *,
        branch: str,
        testbed: str,
        report: str,
        measure: str | None = None,
    ) -> NewBaseline:
        """Mark a change as intended: from ``report`` on, the branch/testbed's series (of
        ``measure``, or of every measure) are judged against a new baseline. The answer's
        ``dismissed`` counts the active alerts it dismissed."""
        with refused_as_bad_request():
            body = BaselineReset(branch=branch, testbed=testbed, report=report, measure=measure)
        path = f"/v0/projects/{_segment(project)}/baselines"
        return self._answer(NewBaseline, "POST", path, json=request_json(body))

    def list_jobs(
        self,
        project: str,
        *,
        status: str | None = None,
        spec: str | None = None,
        runner: str | None = None,
        branch: str | None = None,
        created_after: str | None = None,
        created_before: str | None = None,
        sort: Literal["created", "modified"] = "created",
        page: int = 1,
        per_page: int = DEFAULT_PER_PAGE,
        direction: Literal["asc", "desc"] = "desc",
    ) -> Page[Job]:
        """A page of the project's jobs. ``status`` is one status or several separated by
        commas; ``spec`` and ``runner`` are slugs or UUIDs, ``branch`` also a name; the times
        are ISO 8601 (UTC unless they name a zone), ``created_after`` inclusive and
        ``created_before`` exclusive."""
        filters = _present(
            status=status,
            spec=spec,
            runner=runner,
            branch=branch,
            created_after=created_after,
            created_before=created_before,
        )
        params: dict[str, str | int] = {
            **self._paging(page, per_page),
            **filters,
            "sort": sort,
            "direction": direction,
        }
        return self._answers(Job, f"/v0/projects/{_segment(project)}/jobs", params)

    def get_job(self, project: str, job: str) -> Job:
        """The job with its ``events`` and, once finished, its ``output``."""
        return self._answer(Job, "GET", f"/v0/projects/{_segment(project)}/jobs/{_segment(job)}")

    def cancel_job(self, project: str, job: str) -> Job:
        """The canceled job; ``ApiError`` 409 when it already finished."""
        path = f"/v0/projects/{_segment(project)}/jobs/{_segment(job)}/cancel"
        return self._answer(Job, "POST", path)

    def job_logs(
        self, project: str, job: str, *, offset: int = 0, limit: int | None = None
    ) -> JobLogPage:
        """A page of the job's live log: ``content``, ``next_offset``, ``is_complete``."""
        path = f"/v0/projects/{_segment(project)}/jobs/{_segment(job)}/logs"
        params: dict[str, str | int] = {"offset": offset}
        if limit is not None:
            params["limit"] = limit
        return self._answer(JobLogPage, "GET", path, params=params)

    def follow_job_logs(
        self, project: str, job: str, *, offset: int = 0
    ) -> Iterator[JobLogPiece | JobLogEnd]:
        """The job's log as it grows: a ``JobLogPiece`` for each piece, then one ``JobLogEnd``
        when the job has finished (events a newer server adds are skipped). Raises ApiError if
        the stream cannot be opened or breaks off."""
        path = f"/v0/projects/{_segment(project)}/jobs/{_segment(job)}/logs/follow"
        timeout = httpx.Timeout(self._http.timeout.connect, read=None)
        request = self._http.build_request("GET", path, params={"offset": offset}, timeout=timeout)
        try:
            response = self._http.send(request, stream=True)
        except httpx.TransportError as exc:
            raise ApiError(0, f"cannot reach server at {self.host}: {exc}") from exc
        try:
            if response.is_error:
                response.read()
                raise _error_from(response)
            for event in server_sent_events(response.iter_lines()):
                model = _LOG_EVENTS.get(str(event.get("event")))
                if model is not None:
                    yield _parsed(model, event, f"GET {path}")
        except httpx.TransportError as exc:
            raise ApiError(0, f"log stream from {self.host} broke off: {exc}") from exc
        finally:
            response.close()

    def rerun_job(self, project: str, job: str) -> RunAnswer:
        """Run a finished job again: the new report, with ``job`` the new job's UUID, as
        ``run`` answers; ``ApiError`` 409 while the job is still in flight."""
        path = f"/v0/projects/{_segment(project)}/jobs/{_segment(job)}/rerun"
        return self._answer(RunAnswer, "POST", path)

    def wait_for_job(
        self,
        project: str,
        job: str,
        timeout: float,
        on_status: Callable[[Job], None] | None = None,
        *,
        poll_interval: float = 0.2,
    ) -> Job:
        """Poll the job until it is processed, failed or canceled and return its last read.

        ``on_status`` is called with the job on the first read and on every status change.
        Raises ``JobWaitTimeout`` (with the last read) when ``timeout`` seconds pass first, and
        ``ApiError`` when a read fails.
        """
        deadline = time.monotonic() + timeout
        last_status: str | None = None
        while True:
            current = self.get_job(project, job)
            status = current.status
            if status != last_status:
                last_status = status
                if on_status is not None:
                    on_status(current)
            if status in FINAL_JOB_STATUSES:
                return current
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise JobWaitTimeout(f"job {job} is still {status} after {timeout:g} s", current)
            time.sleep(min(poll_interval, remaining))

    def wait_for_confirmations(
        self,
        project: str,
        report: str,
        timeout: float,
        on_wait: Callable[[int], None] | None = None,
        *,
        poll_interval: float = 0.5,
    ) -> Report:
        """The report once none of its alerts is held back for confirmation runs (status
        ``pending``), or as it stands when ``timeout`` seconds pass first; ``on_wait`` is
        called with the number still held back before each wait."""
        deadline = time.monotonic() + timeout
        while True:
            current = self.get_report(project, report)
            held = current.held_back
            remaining = deadline - time.monotonic()
            if not held or remaining <= 0:
                return current
            if on_wait is not None:
                on_wait(held)
            time.sleep(min(poll_interval, remaining))

    def wait_for_judgment(
        self, project: str, pending: Report, timeout: float, *, poll_interval: float = 0.5
    ) -> Report:
        """The direct run's report ``pending`` once it is judged (its ``judgment`` no longer
        ``pending``), or as it was last read when ``timeout`` seconds pass first. A read the
        server could not answer (unreachable, or a ``5xx``) is tried again until then: the run
        is stored, and only its judgment is awaited."""
        deadline = time.monotonic() + timeout
        current = pending
        while True:
            try:
                current = self.get_report(project, str(pending.uuid))
            except ApiError as error:
                if error.status and error.status < 500:
                    raise
            remaining = deadline - time.monotonic()
            if current.judgment != "pending" or remaining <= 0:
                return current
            time.sleep(min(poll_interval, remaining))


def server_sent_events(lines: Iterable[str]) -> Iterator[JsonObject]:
    """Events of a ``text/event-stream`` whose data is JSON: each as its data object with
    ``event`` set to the event's name."""
    name, data = "message", list[str]()
    for line in lines:
        if not line:
            if data:
                event = json.loads("\n".join(data))
                if isinstance(event, dict):
                    yield {**event, "event": name}
            name, data = "message", []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))


_LOG_EVENTS: dict[str, type[JobLogPiece | JobLogEnd]] = {"log": JobLogPiece, "end": JobLogEnd}


def _model_fields(model: ThresholdModelBody) -> dict[str, Any]:
    """A threshold model's fields as given, for a body that holds them beside its own."""
    return {name: getattr(model, name) for name in model.model_fields_set}


def _present(**fields: Any) -> JsonObject:
    """Only the fields that were given, for PATCH bodies and query filters."""
    return {name: value for name, value in fields.items() if value is not None}
