"""The perf query: metric series over time with their boundaries and alerts, as JSON, CSV and a
PNG plot (docs/decisions/processing.md)."""
