"""What the API shows: resources as JSON in Bencher's shapes, a report's duet section,
and the perf query's series as JSON, CSV and PNG; metrics' raw samples (``samples``)."""
