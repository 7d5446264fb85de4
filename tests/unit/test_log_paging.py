"""Pages of a job's log (seed 004): offsets on the redacted UTF-8 text, at most ``limit``
bytes, never a split character, and every page of a log read in turn gives the whole log."""

from __future__ import annotations

import pytest

from benchrunner.core.log_paging import OffsetError, slice_log
from benchrunner.core.redaction import JobLogRedactor

TEXT = "héllo wörld ✓ 𝄞 end\n"  # 1-, 2-, 3- and 4-byte characters
PIECES = [TEXT[:4].encode(), TEXT[4:13].encode(), TEXT[13:].encode()]


def read_all(pieces: list[bytes], limit: int) -> list[bytes]:
    offset, pages = 0, []
    while True:
        page = slice_log(pieces, offset, limit)
        pages.append(page.content)
        if page.at_end:
            return pages
        assert page.next_offset > offset, "a page that does not advance would loop forever"
        offset = page.next_offset


@pytest.mark.parametrize("limit", range(4, len(TEXT.encode()) + 2))
def test_pages_never_split_a_character_and_never_exceed_the_limit(limit: int) -> None:
    pages = read_all(PIECES, limit)
    for content in pages:
        assert len(content) <= limit
        content.decode()  # raises on a split character
    assert b"".join(pages) == TEXT.encode()


def test_a_page_ends_before_a_character_that_does_not_fit() -> None:
    data = "ab𝄞".encode()  # a, b, then 4 bytes
    page = slice_log([data], 0, 5)
    assert (page.content, page.next_offset, page.at_end) == (b"ab", 2, False)
    assert slice_log([data], 2, 5).content == "𝄞".encode()


def test_the_end_of_the_log_is_an_empty_last_page() -> None:
    size = len(TEXT.encode())
    page = slice_log(PIECES, size, 16)
    assert (page.content, page.next_offset, page.at_end) == (b"", size, True)
    assert slice_log([], 0, 16).at_end


@pytest.mark.parametrize(
    ("offset", "message"),
    [(2, "inside a UTF-8 character"), (len(TEXT.encode()) + 1, "past the end")],
)
def test_bad_offsets_are_refused(offset: int, message: str) -> None:
    with pytest.raises(OffsetError, match=message):
        slice_log(PIECES, offset, 16)


def test_a_page_stops_reading_once_it_is_full() -> None:
    read: list[int] = []

    def pieces() -> object:
        for index in range(1000):
            read.append(index)
            yield b"0123456789"

    assert slice_log(pieces(), 0, 25).content == b"0123456789012345678901234"  # type: ignore[arg-type]
    assert len(read) == 3


def test_the_limit_counts_bytes_after_redaction() -> None:
    """Redaction makes ``Bearer abcdefgh`` longer: the limit still holds on what is returned,
    and offsets count the redacted text, so pages join up into it exactly."""
    redactor = JobLogRedactor(["hunter22"])
    raw = ["token Bearer abcdefgh\n", "pw=hunter22 ", "ok ✓\n"] * 5
    redacted = [redactor(chunk).encode() for chunk in raw]
    whole = b"".join(redacted)
    assert b"abcdefgh" not in whole and b"hunter22" not in whole
    assert len(whole) > len("".join(raw).encode())
    for limit in (4, 7, 16, 100):
        assert b"".join(read_all(redacted, limit)) == whole
