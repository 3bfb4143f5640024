"""The admission budget: whole requests in or out, never past capacity; closing waits for requests."""

from __future__ import annotations

import threading
import time

from hypothesis import given
from hypothesis import strategies as st

from otel_shapecheck.gateway._admission import Admission, AdmissionBudget


class TestAdmissionBudget:
    def test_admits_until_full_then_refuses_until_released(self) -> None:
        """Slots are taken whole; a request that does not fit is FULL until enough slots come back."""
        budget = AdmissionBudget(10)
        assert budget.admit(6) is Admission.ACCEPTED
        assert budget.admit(5) is Admission.FULL
        assert budget.admit(4) is Admission.ACCEPTED
        assert budget.in_flight == 10
        budget.release(5)
        assert budget.admit(5) is Admission.ACCEPTED
        assert budget.refused_full == 1

    def test_more_than_capacity_is_too_large_not_full(self) -> None:
        """A request that could never fit is told so, and is not counted as backpressure."""
        budget = AdmissionBudget(10)
        assert budget.admit(11) is Admission.TOO_LARGE
        assert (budget.in_flight, budget.refused_full) == (0, 0)

    def test_close_waits_for_requests_in_progress_and_refuses_new_ones(self) -> None:
        """``close`` returns once the request in progress ends; new requests and admissions are refused."""
        budget = AdmissionBudget(10)
        assert budget.begin_request()
        ending = threading.Timer(0.1, budget.end_request)
        ending.start()
        started = time.monotonic()
        assert budget.close(5.0)
        assert time.monotonic() - started >= 0.09
        assert not budget.begin_request()
        assert budget.admit(1) is Admission.CLOSING
        ending.join()

    def test_close_gives_up_after_its_timeout(self) -> None:
        """A request that never ends does not hold ``close`` past its timeout."""
        budget = AdmissionBudget(10)
        assert budget.begin_request()
        assert not budget.close(0.05)

    @given(st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=40))
    def test_concurrent_admissions_never_exceed_capacity(self, sizes: list[int]) -> None:
        """Eight threads admitting and releasing at once never hold more than the capacity."""
        budget = AdmissionBudget(16)
        peak = [0]
        lock = threading.Lock()

        def work() -> None:
            for size in sizes:
                if budget.admit(size) is Admission.ACCEPTED:
                    with lock:
                        peak[0] = max(peak[0], budget.in_flight)
                    budget.release(size)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert peak[0] <= 16
        assert budget.in_flight == 0
