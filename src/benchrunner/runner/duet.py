"""A duet job on the runner: the baseline and the contender prepared by the runner's executor
as two jobs, and run interleaved, round after round, on the same cores.

Interleaved, not simultaneous on sibling cores: two benchmarks running side by side share the
core's caches, memory bandwidth and (on SMT siblings) execution units, so each perturbs the
other and the ratio measures the pairing as much as the change; run one after the other on
the same cores, each side sees the machine exactly as the other does a moment later, and
the random order per round (``core.duet_order``) keeps the drift between them unbiased.

Iteration ``i`` of a duet job is entry ``i`` of ``run_sequence(seed, iter)``: a job of
``iter`` rounds has ``2 * iter`` iterations, each result tagged with its side and round.
"""

from __future__ import annotations

from benchrunner.core.duet_order import BASELINE, CONTENDER, Side, run_sequence
from benchrunner.protocol import IterationResult, JsonClaimedJob, JsonDuet
from benchrunner.runner.executors.base import Executor, PreparedJob


def side_job(job: JsonClaimedJob, duet: JsonDuet, side: Side) -> JsonClaimedJob:
    """The job as one side alone: that side's image or arguments, no duet."""
    chosen = duet.baseline if side == BASELINE else duet.contender
    config = job.config.model_copy(
        update={
            "duet": None,
            "digest": chosen.digest if chosen.digest is not None else job.config.digest,
            "args": chosen.args if chosen.args is not None else job.config.args,
        }
    )
    return job.model_copy(update={"config": config})


def iterations(job: JsonClaimedJob) -> int:
    """How many times the job's ``run_iteration`` is called."""
    return job.config.iter * (2 if job.config.duet is not None else 1)


def prepare(executor: Executor, job: JsonClaimedJob) -> PreparedJob:
    """The executor's prepared job, or for a duet both sides prepared behind one
    ``PreparedJob``. ExecutorError as ``Executor.prepare``."""
    duet = job.config.duet
    if duet is None:
        return executor.prepare(job)
    baseline = executor.prepare(side_job(job, duet, BASELINE))
    try:
        contender = executor.prepare(side_job(job, duet, CONTENDER))
    except BaseException:
        baseline.cleanup()
        raise
    return DuetJob(baseline, contender, run_sequence(duet.seed, job.config.iter))


class DuetJob(PreparedJob):
    def __init__(
        self,
        baseline: PreparedJob,
        contender: PreparedJob,
        sequence: list[tuple[int, Side]],
    ) -> None:
        self._sides: dict[Side, PreparedJob] = {BASELINE: baseline, CONTENDER: contender}
        self._sequence = sequence

    def run_iteration(self, index: int) -> IterationResult:
        round_index, side = self._sequence[index]
        job = self._sides[side]
        job.on_start = self.on_start
        job.on_output = self.on_output
        # The job's iteration index, not the round: it names the iteration's container, which
        # must differ between the two sides of a round.
        result = job.run_iteration(index)
        return result.model_copy(update={"side": side, "round": round_index})

    def cancel(self) -> None:
        for job in self._sides.values():
            job.cancel()

    def cleanup(self) -> None:
        for job in self._sides.values():
            job.cleanup()
