"""The spool: nothing acknowledged is lost to a stop with the destination down or slow, nor to kill -9."""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from pathlib import Path

import pytest
from otlp_receiver import OTLPReceiver, unused_endpoint

from gateway.otlp_requests import plain_spans, post, trace_request
from gateway.running import eventually
from gateway.serve_process import ServeProcess, parse_summary
from otel_shapecheck.cli._exit import EXIT_LEFT_IN_SPOOL, EXIT_LOST, EXIT_OK
from otel_shapecheck.gateway._spool import SpoolError, SqliteSpool
from otel_shapecheck.gateway._spool_entry import count_bits
from otel_shapecheck.gateway._spool_files import DATABASE_NAME

SPANS_PER_REQUEST = 100


def _send(port: int, requests: int, first: int = 1) -> set[str]:
    """POST ``requests`` requests of plain spans; the span ids of those acknowledged with 200."""
    acknowledged: set[str] = set()
    for number in range(requests):
        start = first + number * SPANS_PER_REQUEST
        spans = plain_spans(SPANS_PER_REQUEST, first=start)
        try:
            answer = post(port, "/v1/traces", trace_request(spans).SerializeToString())
        except OSError:  # the gateway was killed mid-request: not acknowledged
            break
        if answer.status == 200:
            acknowledged.update(span.span_id.hex() for span in spans)
    return acknowledged


def _stored(spool: Path) -> list[tuple[int, int, int]]:
    """What the spool database in ``spool`` holds now, read by a connection of its own (as after a
    crash): each entry's items, items marked sent and items marked done."""
    database = sqlite3.connect(spool / DATABASE_NAME)
    try:
        rows = database.execute("SELECT items, sent, done FROM entries ORDER BY id").fetchall()
    finally:
        database.close()
    return [(items, count_bits(sent or b""), count_bits(done or b"")) for items, sent, done in rows]


class TestStopWithTheDestinationDown:
    def test_what_was_not_forwarded_stays_in_the_spool_and_goes_out_at_the_next_start(
        self, tmp_path: Path, receiver: OTLPReceiver
    ) -> None:
        """Destination down at SIGTERM: exit 4, every accepted span left in the spool (accounted for);
        the next start with the destination up forwards all of them."""
        spool = tmp_path / "spool"
        down, _ = unused_endpoint()
        with ServeProcess(f"http://{down}", spool, "--shutdown-timeout-seconds", "2") as gateway:
            acknowledged = _send(gateway.ports["http"], 20)
            code = gateway.stop()
        summary = parse_summary(gateway.stderr)
        assert code == EXIT_LEFT_IN_SPOOL, gateway.stderr
        assert len(acknowledged) == summary.accepted == summary.left == 2000
        assert not summary.unaccounted
        with ServeProcess(f"http://{receiver.grpc_endpoint}", spool) as again:
            assert receiver.wait_for(lambda r: len({s.span_id for s in r.spans}) == 2000, timeout=120)
            code = again.stop()
        summary = parse_summary(again.stderr)
        assert code == EXIT_OK, again.stderr
        assert (summary.carried_over, summary.forwarded, summary.left) == (2000, 2000, 0)
        assert {span.span_id for span in receiver.spans} == acknowledged

    def test_a_slow_destination_forwards_what_it_can_and_spools_the_rest(
        self, tmp_path: Path, receiver: OTLPReceiver
    ) -> None:
        """Destination slow at SIGTERM: forwarded + left in the spool = accepted, nothing unaccounted."""
        receiver.behave(delay_seconds=1.5)
        with ServeProcess(
            f"http://{receiver.grpc_endpoint}", tmp_path / "spool", "--shutdown-timeout-seconds", "3"
        ) as gw:
            acknowledged = _send(gw.ports["http"], 30)
            code = gw.stop()
        summary = parse_summary(gw.stderr)
        assert code in (EXIT_OK, EXIT_LEFT_IN_SPOOL), gw.stderr
        assert summary.forwarded + summary.left == summary.accepted == len(acknowledged) == 3000
        assert not summary.unaccounted

    def test_without_a_spool_what_is_left_is_reported_lost(self, receiver: OTLPReceiver) -> None:
        """With --no-spool and the destination down, the stop says how many were lost and exits 5."""
        down, _ = unused_endpoint()
        with ServeProcess(f"http://{down}", None, "--shutdown-timeout-seconds", "1") as gateway:
            acknowledged = _send(gateway.ports["http"], 3)
            code = gateway.stop()
        summary = parse_summary(gateway.stderr)
        assert code == EXIT_LOST, gateway.stderr
        assert summary.left == len(acknowledged) == 300
        assert "lost (no spool)" in gateway.stderr


class TestKilled:
    def test_kill_9_mid_stream_then_restart_delivers_every_acknowledged_span(
        self, tmp_path: Path, receiver: OTLPReceiver
    ) -> None:
        """kill -9 while senders stream and the destination lags: after a restart every acknowledged span
        has arrived at least once, and the duplicates are at most the count the restart reports."""
        spool = tmp_path / "spool"
        receiver.behave(delay_seconds=0.3)
        acknowledged: set[str] = set()
        with ServeProcess(f"http://{receiver.grpc_endpoint}", spool) as gateway:
            port = gateway.ports["http"]
            senders = [
                threading.Thread(target=lambda n=n: acknowledged.update(_send(port, 40, 1 + n * 10_000)))
                for n in range(3)
            ]
            for sender in senders:
                sender.start()
            assert receiver.wait_for(lambda r: len(r.spans) >= 300, timeout=120)
            gateway.kill()
            for sender in senders:
                sender.join(60)
        forwarded_before = len(receiver.spans)
        assert acknowledged and forwarded_before < len(acknowledged)  # killed with work outstanding
        receiver.behave()
        with ServeProcess(f"http://{receiver.grpc_endpoint}", spool) as again:
            assert receiver.wait_for(
                lambda r: acknowledged <= {span.span_id for span in r.spans}, timeout=180
            ), len(acknowledged - {span.span_id for span in receiver.spans})
            code = again.stop()
        summary = parse_summary(again.stderr)
        assert code == EXIT_OK, again.stderr
        twice = sum(count - 1 for count in Counter(span.span_id for span in receiver.spans).values())
        assert twice <= summary.in_doubt
        assert summary.forwarded == summary.carried_over
        assert not summary.unaccounted

    def test_kill_9_after_forwarding_before_the_deferred_deletes_forwards_again_at_restart(
        self, tmp_path: Path, receiver: OTLPReceiver
    ) -> None:
        """Killed once every span reached the destination but before the spool wrote its deletes: the
        entries are still there, marked sent, and the restart forwards them again, every one counted as
        possibly sent twice; nothing is lost."""
        spool = tmp_path / "spool"
        with ServeProcess(f"http://{receiver.grpc_endpoint}", spool, "--spool-flush-seconds", "3600") as gw:
            acknowledged = _send(gw.ports["http"], 5)  # fewer deletes than are written at once
            assert len(acknowledged) == 500
            assert receiver.wait_for(lambda r: len(r.spans) == 500, timeout=60)
            assert eventually(lambda: _stored(spool) == [(100, 100, 0)] * 5, timeout=30), _stored(spool)
            gw.kill()
        with ServeProcess(f"http://{receiver.grpc_endpoint}", spool) as again:
            assert receiver.wait_for(lambda r: len(r.spans) == 1000, timeout=60)
            assert eventually(lambda: _stored(spool) == [], timeout=30), _stored(spool)
            code = again.stop()
        summary = parse_summary(again.stderr)
        assert code == EXIT_OK, again.stderr
        assert (summary.carried_over, summary.in_doubt, summary.forwarded) == (500, 500, 500)
        assert Counter(span.span_id for span in receiver.spans) == dict.fromkeys(acknowledged, 2)


class TestDeferredWrites:
    def test_forwarded_requests_leave_the_spool_on_their_own_while_the_gateway_runs(
        self, tmp_path: Path, receiver: OTLPReceiver
    ) -> None:
        """With the default flush interval the deletes reach the database without a stop or another
        request to carry them."""
        spool = tmp_path / "spool"
        with ServeProcess(f"http://{receiver.grpc_endpoint}", spool) as gateway:
            assert len(_send(gateway.ports["http"], 5)) == 500
            assert receiver.wait_for(lambda r: len(r.spans) == 500, timeout=60)
            assert eventually(lambda: _stored(spool) == [], timeout=30), _stored(spool)
            assert gateway.stop() == EXIT_OK, gateway.stderr

    def test_sent_marks_are_committed_at_once_deletes_at_the_flush(self, tmp_path: Path) -> None:
        """``mark_sent`` is in the database when it returns; ``mark`` and ``delete`` only after
        ``flush``, all at once, and a delete wins over a later mark of the same entry."""
        spool = SqliteSpool(tmp_path, 1 << 20, flush_seconds=3600)
        first = spool.put("traces", b"one", 4, 3)
        second = spool.put("traces", b"two", 4, 3)
        assert _stored(tmp_path) == [(4, 0, 0), (4, 0, 0)]
        first.sent[0] = second.sent[0] = 0b1111
        spool.mark_sent([first, second])
        assert _stored(tmp_path) == [(4, 4, 0), (4, 4, 0)]
        first.done[0] = 0b1111
        second.done[0] = 0b0011
        spool.delete([first])
        spool.mark([second, first])
        assert _stored(tmp_path) == [(4, 4, 0), (4, 4, 0)]
        assert spool.space.used == 3  # the space of a deleted entry is free at once
        spool.flush()
        assert _stored(tmp_path) == [(4, 4, 2)]
        spool.close()

    def test_close_writes_what_was_deferred(self, tmp_path: Path) -> None:
        """A stop loses no deferred write: after ``close`` the database holds the deletes and marks."""
        spool = SqliteSpool(tmp_path, 1 << 20, flush_seconds=3600)
        first = spool.put("traces", b"one", 2, 3)
        second = spool.put("logs", b"two", 2, 3)
        second.done[0] = 0b01
        spool.delete([first])
        spool.mark([second])
        spool.close()
        assert _stored(tmp_path) == [(2, 0, 1)]
        reopened = SqliteSpool(tmp_path, 1 << 20)
        assert [(entry.id, entry.remaining) for entry in reopened.recover()] == [(second.id, 1)]
        reopened.close()

    def test_a_few_deferred_deletes_are_written_at_once_without_waiting_for_the_interval(
        self, tmp_path: Path
    ) -> None:
        """Deletes are written in small batches (eight entries) by the thread that deferred the last
        one, so a steady stream does not pile up an interval's worth."""
        spool = SqliteSpool(tmp_path, 1 << 20, flush_seconds=3600)
        entries = [spool.put("traces", b"body", 1, 4) for _ in range(9)]
        spool.delete(entries[:7])
        assert len(_stored(tmp_path)) == 9
        spool.delete(entries[7:8])
        assert _stored(tmp_path) == [(1, 0, 0)]
        spool.close()

    def test_the_flusher_writes_deferred_deletes_without_being_asked(self, tmp_path: Path) -> None:
        """With a short interval the flusher thread commits a delete with no other write to carry it."""
        spool = SqliteSpool(tmp_path, 1 << 20, flush_seconds=0.05)
        spool.delete([spool.put("traces", b"one", 1, 3)])
        assert eventually(lambda: _stored(tmp_path) == [], timeout=30), _stored(tmp_path)
        spool.close()


class TestSpoolStore:
    def test_entries_survive_reopening_with_their_progress(self, tmp_path: Path) -> None:
        """What was stored and marked is found again, oldest first, with its sent and done bits."""
        spool = SqliteSpool(tmp_path, 1 << 20)
        first = spool.put("traces", b"one", 10, 3)
        second = spool.put("logs", b"two", 3, 3)
        first.sent[0] |= 0b111
        first.done[0] |= 0b001
        spool.mark([first])
        spool.close()
        reopened = SqliteSpool(tmp_path, 1 << 20)
        found = reopened.recover()
        assert [(entry.id, entry.kind, entry.items) for entry in found] == [
            (first.id, "traces", 10),
            (second.id, "logs", 3),
        ]
        assert (found[0].remaining, found[0].in_doubt) == (9, 2)
        assert reopened.body(found[1]) == b"two"
        assert reopened.space.used == 6
        reopened.delete(found)
        assert reopened.recover() == [] and reopened.space.used == 0
        reopened.close()

    def test_two_gateways_cannot_share_a_spool(self, tmp_path: Path) -> None:
        """The directory is locked while a gateway uses it: a second one is refused, naming it."""
        spool = SqliteSpool(tmp_path, 1 << 20)
        with pytest.raises(SpoolError, match="in use by another gateway"):
            SqliteSpool(tmp_path, 1 << 20)
        spool.close()
        SqliteSpool(tmp_path, 1 << 20).close()

    def test_space_is_bounded_by_bytes(self, tmp_path: Path) -> None:
        """Reservations past the limit are refused while anything is stored or reserved."""
        spool = SqliteSpool(tmp_path, 100)
        assert spool.space.reserve(80)
        assert not spool.space.reserve(30)
        spool.put("traces", b"x" * 80, 1, 80)
        assert not spool.space.reserve(30)
        assert spool.space.reserve(20)
        spool.close()
