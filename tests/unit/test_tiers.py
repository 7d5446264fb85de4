from __future__ import annotations

import pytest

from benchrunner.core.tiers import Plan, Tier, priority_for, tier_of


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
