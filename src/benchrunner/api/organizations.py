"""Organizations, their projects and their members: the create and update bodies, and each
as the server answers it (docs/how-to/users.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from benchrunner.api.base import Answer, ApiBody
from benchrunner.api.users import EMAIL_PATTERN
from benchrunner.core.tiers import Plan

Role = Literal["leader", "member"]
Visibility = Literal["public", "private"]


class NewOrganization(ApiBody):
    name: str = Field(min_length=1, max_length=64)
    slug: str | None = Field(default=None, min_length=1, max_length=64)
    plan: Plan = Plan.FREE


class NewProject(ApiBody):
    name: str = Field(min_length=1, max_length=64)
    slug: str | None = Field(default=None, min_length=1, max_length=64)
    visibility: Visibility = "public"


class NewMember(ApiBody):
    email: str = Field(
        min_length=3, max_length=320, pattern=EMAIL_PATTERN, description="an existing user's"
    )
    role: Role = "member"


class MemberPatch(ApiBody):
    role: Role | None = None


class Organization(Answer):
    """``claimed``: whether a user leads it (Bencher's)."""

    uuid: str
    name: str
    slug: str
    plan: str
    claimed: bool | None = None
    created: str | None = None
    modified: str | None = None


class Project(Answer):
    uuid: str
    organization: str
    name: str
    slug: str
    visibility: str
    created: str | None = None
    modified: str | None = None


class Member(Answer):
    """A member of an organization: the user and its role there."""

    uuid: str
    name: str
    slug: str
    email: str
    role: str
    created: str | None = None
