"""What one perf query may ask, as the API and the console's perf page both check it."""

from __future__ import annotations

import datetime as dt

MAX_REFS = 64
"""Items in one of the four lists."""
DEFAULT_SPAN = dt.timedelta(days=365)
"""The window asked for when the query gives no start."""
MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z
