"""Specs, the hardware a job runs on: the create and update bodies, and a spec as the server
answers it (docs/explanation/noise.md for the noise guard's fields)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from benchrunner.api.base import Answer, ApiBody
from benchrunner.protocol import OperatingSystem, Sandbox

NOISE_LIMIT_MAX = 1e9
Architecture = Literal["x86_64", "aarch64"]


class SpecBody(ApiBody):
    name: str = Field(min_length=1, max_length=64)
    slug: str | None = Field(default=None, min_length=1, max_length=64)
    os: OperatingSystem = "linux"
    architecture: Architecture
    sandbox: Sandbox | None = None
    cpu: int = Field(ge=1, le=2**31 - 1)
    memory: int = Field(ge=1, le=2**63 - 1, description="bytes")
    disk: int = Field(ge=1, le=2**63 - 1, description="bytes")
    network: bool = False
    noise_guard: bool = Field(
        default=True, description="runners calibrate the job cores around each job"
    )
    noise_cv_limit: float | None = Field(
        default=None,
        ge=0,
        le=NOISE_LIMIT_MAX,
        description="a report whose calibration varies more (0.02 is 2 %) is noisy; "
        "null: the server's default",
    )
    noise_drift_limit: float | None = Field(
        default=None,
        ge=0,
        le=NOISE_LIMIT_MAX,
        description="a report whose calibration drifted more, either way, is noisy; "
        "null: the server's default",
    )
    fallback: bool = Field(default=False, description="make it the fallback spec (Bencher's)")


class SpecPatch(ApiBody):
    name: str | None = Field(default=None, min_length=1, max_length=64)
    slug: str | None = Field(default=None, min_length=1, max_length=64)
    archived: bool | None = None
    noise_guard: bool | None = None
    noise_cv_limit: float | None = Field(default=None, ge=0, le=NOISE_LIMIT_MAX)
    """Absent: unchanged; null: back to the server's default."""
    noise_drift_limit: float | None = Field(default=None, ge=0, le=NOISE_LIMIT_MAX)
    fallback: bool | None = Field(
        default=None,
        description="true: the spec of jobs submitted without one (any other fallback stops "
        "being one); false: no longer the fallback",
    )


class Spec(Answer):
    """A spec as Bencher's runner reads it (``protocol.JsonSpec``), its times as text;
    ``fallback``: when an admin made it the spec of jobs submitted without one."""

    uuid: str
    name: str
    slug: str
    os: str = "linux"
    architecture: str
    sandbox: str | None = None
    cpu: int
    memory: int
    disk: int
    network: bool = False
    fallback: str | None = None
    created: str | None = None
    modified: str | None = None
    archived: str | None = None
    noise_guard: bool = True
    noise_cv_limit: float | None = None
    noise_drift_limit: float | None = None
