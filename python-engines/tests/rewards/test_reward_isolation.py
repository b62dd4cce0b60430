"""The verifier worker pool: results come back, overruns are cut and their worker replaced, failures are reported."""
import asyncio
import operator
import time

import pytest

from rollflow_engines.rewards.isolation import IsolatedRunner, IsolationError, IsolationTimeout


@pytest.fixture
def runner():
    r = IsolatedRunner(workers=2)
    yield r
    r.close()


def run(coro):
    return asyncio.run(coro)


def test_returns_the_result(runner):
    assert run(runner.run(operator.add, (2, 3), timeout_s=60)) == 5


def test_overrun_is_cut_and_the_worker_replaced(runner):
    with pytest.raises(IsolationTimeout):
        run(runner.run(time.sleep, (600,), timeout_s=0.2))
    assert runner.alive_workers == 0  # the sleeping worker was killed, not left running
    assert run(runner.run(operator.mul, (6, 7), timeout_s=60)) == 42


def test_exception_in_the_call_is_an_isolation_error(runner):
    with pytest.raises(IsolationError, match="ZeroDivisionError"):
        run(runner.run(operator.truediv, (1, 0), timeout_s=60))
    assert run(runner.run(operator.add, (1, 1), timeout_s=60)) == 2  # the worker survives a failed call


def test_calls_run_concurrently_up_to_the_worker_count(runner):
    async def many():
        return await asyncio.gather(*[runner.run(operator.add, (i, i), timeout_s=60) for i in range(6)])

    assert run(many()) == [2 * i for i in range(6)]
    assert runner.alive_workers <= 2


def test_closed_runner_refuses_calls():
    r = IsolatedRunner(workers=1)
    assert run(r.run(operator.add, (1, 2), timeout_s=60)) == 3
    r.close()
    r.close()  # idempotent
    assert r.alive_workers == 0
    with pytest.raises(IsolationError, match="closed"):
        run(r.run(operator.add, (1, 2), timeout_s=60))


def test_memory_cap_turns_a_huge_allocation_into_an_error():
    r = IsolatedRunner(workers=1, memory_mb=512)
    try:
        with pytest.raises(IsolationError, match="MemoryError"):
            run(r.run(bytearray, (8 * 1024**3,), timeout_s=60))
        assert run(r.run(operator.add, (1, 2), timeout_s=60)) == 3  # the worker lives on
    finally:
        r.close()
