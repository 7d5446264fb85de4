"""A console list's pages: which rows one page shows and the links to its neighbours."""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Pager:
    page: int
    per_page: int
    total: int

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.per_page))

    @property
    def first_row(self) -> int:
        return min(self.total, self.offset + 1)

    @property
    def last_row(self) -> int:
        return min(self.total, self.offset + self.per_page)

    def link(self, page: int, params: Mapping[str, str | None]) -> str:
        """The query string of page ``page`` with the list's other ``params`` (None: left out)."""
        kept = {k: v for k, v in params.items() if v is not None and v != ""}
        return "?" + urllib.parse.urlencode({**kept, "page": str(page)})

    @property
    def previous(self) -> int | None:
        return self.page - 1 if self.page > 1 else None

    @property
    def next(self) -> int | None:
        return self.page + 1 if self.page < self.pages else None
