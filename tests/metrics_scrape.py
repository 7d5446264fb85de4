"""Scraping a server's ``/metrics`` and reading samples back with prometheus_client's parser."""

from __future__ import annotations

from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


@dataclass(frozen=True)
class Scrape:
    samples: list[Sample]

    def value(self, name: str, **labels: str) -> float:
        """The sum of the samples named ``name`` whose labels include ``labels``."""
        return sum(
            s.value
            for s in self.samples
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
        )

    def labels_of(self, name: str, label: str) -> set[str]:
        return {s.labels[label] for s in self.samples if s.name == name and label in s.labels}


def scrape(base_url: str) -> Scrape:
    response = httpx.get(f"{base_url}/metrics", timeout=10)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return Scrape(
        [
            Sample(sample.name, dict(sample.labels), sample.value)
            for family in text_string_to_metric_families(response.text)
            for sample in family.samples
        ]
    )
