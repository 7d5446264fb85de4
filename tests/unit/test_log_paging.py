"""Pages of a job's log (docs/decisions/live-logs.md): offsets on the redacted UTF-8 text, at most
``limit`` bytes, never a split character, and every page of a log read in turn gives the whole
log."""

from __future__ import annotations

import pytest

from benchrunner.core.log_paging import OffsetError, slice_log
from benchrunner.core.redaction import JobLogRedactor
from benchrunner.server.logs.log_index import LogIndex

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


def test_a_page_can_start_from_a_known_position_of_the_log() -> None:
    """What the server's index of positions (``server/logs/log_index.py``) relies on."""
    whole = slice_log(PIECES, 10, 8)
    from_known = slice_log(PIECES[1:], 10, 8, start=len(PIECES[0]))
    assert from_known == whole
    with pytest.raises(OffsetError, match="past the end of the log \\(27 bytes\\)"):
        slice_log(PIECES[1:], 40, 8, start=len(PIECES[0]))


def test_the_index_of_positions_points_at_the_last_checkpoint_before_an_offset() -> None:
    index = LogIndex(every=100, max_jobs=2)
    assert index.before(1, 500) == (0, 0)
    for chunk_id, position in [(1, 60), (2, 120), (3, 150), (4, 260), (5, 340)]:
        index.note(1, chunk_id, position)
    assert index.before(1, 119) == (0, 0)
    assert index.before(1, 120) == (2, 120)
    assert index.before(1, 300) == (4, 260)  # 150 is under 100 past 120: not kept
    index.note(2, 1, 500)
    index.note(3, 1, 500)  # a third job: the least recently used one is forgotten
    assert index.before(1, 300) == (0, 0)
    assert index.before(3, 600) == (1, 500)
