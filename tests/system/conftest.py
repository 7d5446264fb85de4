from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.databases import ENGINES, fresh_database
from tests.harness import Deployment, deploy
from tests.system.project_api import Api


@pytest.fixture
def deployment(tmp_path: Path, database_url: str) -> Iterator[Deployment]:
    with deploy(tmp_path, database_url) as deployment:
        yield deployment


@pytest.fixture(scope="module")
def shared_deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """One server on SQLite for a module's tables of refused inputs: a refusal changes nothing,
    so the rows share it instead of starting a server each."""
    tmp = tmp_path_factory.mktemp("shared")
    with deploy(tmp, f"sqlite:///{tmp / 'benchrunner.db'}") as deployment:
        yield deployment


@pytest.fixture(scope="module", params=ENGINES)
def shared(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    """One server per engine for a whole module whose tests each work in a project of their own
    (``api``): starting a server costs more than such a test's requests."""
    tmp = tmp_path_factory.mktemp(request.module.__name__.rpartition(".")[2])
    with fresh_database(str(request.param), tmp) as url, deploy(tmp, url) as deployment:
        yield deployment


@pytest.fixture
def api(shared: Deployment, request: pytest.FixtureRequest) -> Iterator[Api]:
    """The API of a new public project of ``shared``'s, named after the test."""
    slug: str = request.node.originalname.removeprefix("test_").replace("_", "-")[:64]
    with shared.admin() as client:
        client.create_project("acme", slug, "public")
    client_api = Api(shared, slug)
    yield client_api
    client_api.http.close()


def test_slug(request: pytest.FixtureRequest) -> str:
    """A slug naming the running test on a server it shares: its name, and for a parametrized
    row a digest of the row's other parameters (the engine is the server's, not the row's)."""
    slug: str = request.node.originalname.removeprefix("test_").replace("_", "-")[:32].rstrip("-")
    callspec = getattr(request.node, "callspec", None)
    row = {} if callspec is None else {k: v for k, v in callspec.params.items() if k != "shared"}
    if row:
        slug += "-" + hashlib.sha256(repr(sorted(row.items())).encode()).hexdigest()[:8]
    return slug


@pytest.fixture
def tenant(
    shared: Deployment, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Deployment]:
    """``shared``'s server as a deployment of the test's own: an organization, a public project
    and a spec named after the test (``test_slug``), so tests sharing the server see none of
    each other's jobs, runners or images; the names of the runners it creates start with the
    slug too. Its channels and runner processes end with the test."""
    slug = test_slug(request)
    with shared.admin() as client:
        client.create_organization(slug, "team", slug=slug)
        client.create_project(slug, slug, "public", slug=slug)
        client.create_spec(
            name=slug, architecture="x86_64", cpu=1, memory=1 << 30, disk=1 << 30, network=False
        )
    own = dataclasses.replace(
        shared,
        tmp=tmp_path,
        org=slug,
        project=slug,
        spec=slug,
        runners=[],
        channels=[],
        names=f"{slug}-",
    )
    try:
        yield own
    finally:
        own.end_connections()


@pytest.fixture(params=["channel", "per-job"])
def transport(request: pytest.FixtureRequest) -> str:
    """Each runner transport in turn: the conformance scenarios hold on both."""
    return str(request.param)


@pytest.fixture
def each_transport(deployment: Deployment, transport: str) -> Deployment:
    """``deployment`` whose runner processes use ``transport``."""
    deployment.transport = transport
    return deployment


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The per-job transport runs its scenarios on SQLite only: what differs from the channel is
    the transport, while the claim, transitions and storage below it are the same code, which
    the channel's runs prove on both engines."""
    kept, dropped = [], []
    for item in items:
        params = getattr(item, "callspec", None)
        chosen = {} if params is None else params.params
        engine = chosen.get("database_url", chosen.get("shared"))
        if chosen.get("transport") == "per-job" and engine == "postgresql":
            dropped.append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
