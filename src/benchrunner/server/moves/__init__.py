"""A job's status changes: ``move`` is the one way a job's status changes outside the store."""
