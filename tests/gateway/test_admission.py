"""The gateway's bounds: budgets never exceed their capacity, and the gate waits for requests in progress."""

from __future__ import annotations

import threading

from otel_shapecheck.gateway._admission import Budget, RequestGate


class TestBudget:
    def test_takes_what_fits_and_refuses_the_rest(self) -> None:
        """Amounts are taken while they fit; a refusal takes nothing; a release makes room again."""
        budget = Budget(10)
        assert budget.take(6)
        assert not budget.fits(5)
        assert not budget.take(5)
        assert budget.take(4)
        assert budget.in_use == 10
        budget.release(5)
        assert budget.take(5)

    def test_one_unit_larger_than_the_budget_passes_alone(self) -> None:
        """With nothing taken, even an amount above the capacity passes, so it never waits for ever."""
        budget = Budget(10)
        assert budget.take(11)
        assert not budget.take(1)
        budget.release(11)
        assert budget.in_use == 0

    def test_concurrent_takers_never_exceed_the_capacity(self) -> None:
        """Many threads taking and releasing never hold more than the capacity between them."""
        budget = Budget(100)
        peak = [0]
        lock = threading.Lock()

        def work() -> None:
            for size in (7, 13, 29, 41) * 50:
                if budget.take(size):
                    with lock:
                        peak[0] = max(peak[0], budget.in_use)
                    budget.release(size)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert 0 < peak[0] <= 100
        assert budget.in_use == 0


class TestRequestGate:
    def test_close_waits_for_requests_in_progress_and_refuses_new_ones(self) -> None:
        """Closing waits for a running request; afterwards nothing new is let in."""
        gate = RequestGate()
        assert gate.begin_request()
        ending = threading.Timer(0.1, gate.end_request)
        ending.start()
        assert gate.close(30.0)
        ending.join()
        assert not gate.begin_request()
        assert gate.closing

    def test_close_gives_up_after_its_timeout(self) -> None:
        """A request that never ends makes close return False after the timeout."""
        gate = RequestGate()
        assert gate.begin_request()
        assert not gate.close(0.05)
