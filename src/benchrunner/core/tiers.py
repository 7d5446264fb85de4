"""Plans, priorities and the concurrency rule each priority tier obeys
(docs/decisions/claims.md)."""

from __future__ import annotations

import enum


class Plan(enum.StrEnum):
    ENTERPRISE = "enterprise"
    TEAM = "team"
    FREE = "free"


class Tier(enum.StrEnum):
    ENTERPRISE = "enterprise"
    TEAM = "team"
    FREE = "free"
    UNCLAIMED = "unclaimed"


PLAN_PRIORITY = {Plan.ENTERPRISE: 300, Plan.TEAM: 200, Plan.FREE: 100}
UNCLAIMED_PRIORITY = 0

# Priority bands: >= 200 unlimited; 100-199 one in flight per organization;
# below 100 one in flight per source IP.
UNLIMITED_MIN_PRIORITY = 200
PER_ORGANIZATION_MIN_PRIORITY = 100


def priority_for(plan: Plan, *, claimed: bool) -> int:
    """Priority fixed at job creation: an organization with no members is unclaimed."""
    return PLAN_PRIORITY[plan] if claimed else UNCLAIMED_PRIORITY


def tier_of(priority: int) -> Tier:
    if priority >= 300:
        return Tier.ENTERPRISE
    if priority >= UNLIMITED_MIN_PRIORITY:
        return Tier.TEAM
    if priority >= PER_ORGANIZATION_MIN_PRIORITY:
        return Tier.FREE
    return Tier.UNCLAIMED
