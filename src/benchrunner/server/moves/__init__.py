"""A job's status changes: every one a ``Move`` of ``move``, the one way a job's status changes
outside the store."""
