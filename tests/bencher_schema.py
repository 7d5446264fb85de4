"""Bencher's published answer types, as pydantic models: what Bencher's CLI reads back from
``POST /v0/run`` (``JsonReport``) and polls for an image job (``JsonJob``).

Derived from the component schemas of Bencher's OpenAPI document (``services/api/openapi.json``,
API version 0.6.12): a property in the document's ``required`` list is required here, a
``nullable`` one may be ``null``, enums are ``Literal``s, UUIDs and date-times are checked as
such. Properties the document does not list are allowed (Bencher's CLI ignores them), so our
additions (``settings``, ``error``, ``deduplicated``, ...) pass; a missing or mistyped field
does not.
"""

from __future__ import annotations

from typing import Any, Literal
from uuid import UUID

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field


class _Bencher(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


Uint = int  # documented as unsigned; range checks below via Field(ge=0)
ParameterValue = str | float | bool


class JsonProject(_Bencher):
    uuid: UUID
    organization: UUID
    name: str
    slug: str
    url: str | None = None
    visibility: Literal["public", "private"]
    bmf_version: Uint = Field(ge=0, le=1)
    claimed: AwareDatetime | None = None
    created: AwareDatetime
    modified: AwareDatetime


class JsonVersion(_Bencher):
    number: Uint = Field(ge=0)
    hash: str | None = None


class JsonStartPoint(_Bencher):
    branch: UUID
    head: UUID
    version: JsonVersion


class JsonHead(_Bencher):
    uuid: UUID
    start_point: JsonStartPoint | None = None
    version: JsonVersion | None = None
    created: AwareDatetime
    replaced: AwareDatetime | None = None


class JsonBranch(_Bencher):
    uuid: UUID
    project: UUID
    name: str
    slug: str
    head: JsonHead
    created: AwareDatetime
    modified: AwareDatetime
    archived: AwareDatetime | None = None


class JsonSpec(_Bencher):
    uuid: UUID
    name: str
    slug: str
    architecture: Literal["x86_64", "aarch64"]
    cpu: Uint = Field(ge=0)
    memory: Uint = Field(ge=0)
    disk: Uint = Field(ge=0)
    network: bool
    os: Literal["linux", "macos", "windows"]
    sandbox: Literal["firecracker"] | None = None
    fallback: AwareDatetime | None = None
    archived: AwareDatetime | None = None
    created: AwareDatetime
    modified: AwareDatetime


class JsonTestbed(_Bencher):
    uuid: UUID
    project: UUID
    name: str
    slug: str
    spec: JsonSpec | None = None
    created: AwareDatetime
    modified: AwareDatetime
    archived: AwareDatetime | None = None


class JsonBenchmark(_Bencher):
    uuid: UUID
    project: UUID
    name: str
    slug: str
    created: AwareDatetime
    modified: AwareDatetime
    archived: AwareDatetime | None = None


class JsonMeasure(JsonBenchmark):
    units: str


class JsonModel(_Bencher):
    uuid: UUID
    test: Literal["static", "percentage", "z_score", "t_test", "log_normal", "iqr", "delta_iqr"]
    min_sample_size: Uint | None = Field(default=None, ge=0)
    max_sample_size: Uint | None = Field(default=None, ge=0)
    window: Uint | None = Field(default=None, ge=0)
    lower_boundary: float | None = None
    upper_boundary: float | None = None
    created: AwareDatetime
    replaced: AwareDatetime | None = None


class JsonThresholdModel(_Bencher):
    uuid: UUID
    project: UUID
    metric: str | None = None
    model: JsonModel
    created: AwareDatetime


class JsonBoundary(_Bencher):
    baseline: float | None = None
    lower_limit: float | None = None
    upper_limit: float | None = None


class JsonReportBoundary(_Bencher):
    threshold: JsonThresholdModel
    boundary: JsonBoundary


class JsonReportMetric(_Bencher):
    uuid: UUID
    name: str
    value: float
    boundaries: list[JsonReportBoundary]


class JsonMetricTriple(_Bencher):
    uuid: UUID
    value: float
    lower_value: float | None = None
    upper_value: float | None = None


class JsonReportMeasure(_Bencher):
    measure: JsonMeasure
    metrics: list[JsonReportMetric]
    metric: JsonMetricTriple | None = None
    threshold: JsonThresholdModel | None = None
    boundary: JsonBoundary | None = None


class JsonReportVariant(_Bencher):
    uuid: UUID
    parameters: dict[str, ParameterValue] = Field(max_length=8)


class JsonReportResult(_Bencher):
    iteration: Uint = Field(ge=0)
    benchmark: JsonBenchmark
    variant: JsonReportVariant
    measures: list[JsonReportMeasure]


class JsonPubUser(_Bencher):
    uuid: UUID
    name: str
    slug: str


Adapter = Literal[
    "magic",
    "json",
    "json_v0",
    "json_v1",
    "rust",
    "rust_bench",
    "rust_criterion",
    "rust_iai",
    "rust_gungraun",
    "rust_gungraun_stdout",
    "rust_gungraun_json",
    "cpp",
    "cpp_google",
    "cpp_catch2",
    "go",
    "go_bench",
    "java",
    "java_jmh",
    "c_sharp",
    "c_sharp_dot_net",
    "js",
    "js_benchmark",
    "js_time",
    "js_vitest",
    "python",
    "python_asv",
    "python_pytest",
    "ruby",
    "ruby_benchmark",
    "shell",
    "shell_hyperfine",
    "dart",
    "dart_benchmark_harness",
]


class JsonThreshold(_Bencher):
    uuid: UUID
    project: UUID
    branch: JsonBranch
    testbed: JsonTestbed
    measure: JsonMeasure
    metric: str | None = None
    model: JsonModel | None = None
    created: AwareDatetime
    modified: AwareDatetime


class JsonVariant(_Bencher):
    uuid: UUID
    benchmark: UUID
    parameters: dict[str, ParameterValue] = Field(max_length=8)
    archived: AwareDatetime | None = None
    created: AwareDatetime
    modified: AwareDatetime


class JsonAlert(_Bencher):
    uuid: UUID
    report: UUID
    iteration: Uint = Field(ge=0)
    benchmark: JsonBenchmark
    variant: JsonVariant
    value: float
    metric: JsonMetricTriple | None = None
    threshold: JsonThreshold
    boundary: JsonBoundary
    limit: Literal["lower", "upper"]
    status: Literal["active", "dismissed", "silenced"]
    created: AwareDatetime
    modified: AwareDatetime


class JsonReport(_Bencher):
    uuid: UUID
    user: JsonPubUser | None = None
    project: JsonProject
    branch: JsonBranch
    testbed: JsonTestbed
    start_time: AwareDatetime
    end_time: AwareDatetime
    adapter: Adapter
    results: list[list[JsonReportResult]] | None = None
    alerts: list[JsonAlert] | None = None
    job: UUID | None = None
    created: AwareDatetime


class JsonIterationOutput(_Bencher):
    exit_code: int
    stdout: str | None = None
    stderr: str | None = None
    output: dict[str, str] | None = None


class JsonJobOutput(_Bencher):
    results: list[JsonIterationOutput]
    error: str | None = None


JobStatus = Literal[
    "pending", "claimed", "running", "completed", "processed", "failed", "canceled", "unknown"
]


class JsonJob(_Bencher):
    uuid: UUID
    report: UUID
    status: JobStatus
    spec: JsonSpec
    config: dict[str, Any] | None = None
    runner: UUID | None = None
    claimed: AwareDatetime | None = None
    started: AwareDatetime | None = None
    completed: AwareDatetime | None = None
    timeout: Uint = Field(ge=0)
    created: AwareDatetime
    modified: AwareDatetime
    output: JsonJobOutput | None = None
