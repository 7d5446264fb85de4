from __future__ import annotations

import pytest

from benchrunner.core.tiers import Plan, Tier, is_eligible, priority_for, tier_of


@pytest.mark.parametrize(
    ("plan", "claimed", "priority"),
    [
        (Plan.ENTERPRISE, True, 300),
        (Plan.TEAM, True, 200),
        (Plan.FREE, True, 100),
        (Plan.ENTERPRISE, False, 0),
        (Plan.FREE, False, 0),
    ],
)
def test_priority_is_fixed_from_plan_and_membership(
    plan: Plan, claimed: bool, priority: int
) -> None:
    assert priority_for(plan, claimed=claimed) == priority


@pytest.mark.parametrize(
    ("priority", "tier"),
    [
        (300, Tier.ENTERPRISE),
        (250, Tier.TEAM),
        (200, Tier.TEAM),
        (199, Tier.FREE),
        (100, Tier.FREE),
        (99, Tier.UNCLAIMED),
        (0, Tier.UNCLAIMED),
    ],
)
def test_tier_bands(priority: int, tier: Tier) -> None:
    assert tier_of(priority) is tier


@pytest.mark.parametrize(
    ("priority", "org_busy", "ip_busy", "eligible"),
    [
        (300, True, True, True),
        (200, True, True, True),
        (100, False, True, True),
        (100, True, False, False),
        (0, True, False, True),
        (0, False, True, False),
    ],
)
def test_concurrency_rule_per_tier(
    priority: int, org_busy: bool, ip_busy: bool, eligible: bool
) -> None:
    assert (
        is_eligible(priority, organization_in_flight=org_busy, source_ip_in_flight=ip_busy)
        is eligible
    )
