"""Logs: a job's live log (held in memory and written in batches, read back redacted and
paged by offset, followed to its end) and the server's own log (one JSON object a line,
and the line each status change leaves)."""
