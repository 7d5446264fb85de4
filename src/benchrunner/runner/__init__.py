"""The runner: an agent on a benchmark machine that holds one channel to the server, executes
claimed jobs one at a time and reports their results (SPEC sections 5 and 6).

Public surface: ``RunnerOptions`` and ``run_agent`` (what ``benchrunner runner up`` calls), and
``Agent`` for embedding (``Agent(options).run()``, stopped with ``request_drain()``).
"""

from benchrunner.runner.agent import Agent, RunnerOptions, run_agent

__all__ = ["Agent", "RunnerOptions", "run_agent"]
