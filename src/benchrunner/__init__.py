"""benchrunner: a self-hosted continuous-benchmarking job runner."""

__version__ = "0.1.0"
