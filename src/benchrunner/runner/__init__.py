"""The runner: an agent on a benchmark machine that holds one channel to the server, executes
claimed jobs one at a time and reports their results (docs/decisions/channel.md).

Public surface: ``RunnerOptions`` and ``run_agent`` (what ``benchrunner runner up`` calls), and
``Agent`` for embedding (``Agent(options).run()``, stopped with ``request_drain()``). They are
loaded on first use: the runner's guard process (``guard.py``) imports this package and needs
none of the agent's dependencies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchrunner.runner.agent import Agent, RunnerOptions, run_agent

__all__ = ["Agent", "RunnerOptions", "run_agent"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from benchrunner.runner import agent

        return getattr(agent, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
