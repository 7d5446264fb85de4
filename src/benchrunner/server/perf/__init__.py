"""The perf query: metric series over time with their boundaries and alerts, as JSON, CSV and a
PNG plot (issue 9, point 6)."""
