"""Hostile inputs to ``check``: bombs, devices, FIFOs, endless lines and damaged gzip cost bounded work."""

from __future__ import annotations

import gzip
import json
import os
import zlib
from pathlib import Path

import pytest
from cli.console_script import run_cli

from otel_shapecheck.otlp._errors import UnreadableTraceFile
from otel_shapecheck.otlp._files import InputLimits, load_telemetry, parse_telemetry

SPAN = {
    "traceId": "0af7651916cd43dd8448eb211c80319c",
    "spanId": "b7ad6b7169203331",
    "name": "plain",
    "startTimeUnixNano": "1",
    "endTimeUnixNano": "2",
}
DOCUMENT = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [SPAN]}]}]}).encode()


def _zeros_gz(path: Path, megabytes: int) -> Path:
    compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    chunk = b"0" * (1024 * 1024)
    with path.open("wb") as stream:
        for _ in range(megabytes):
            stream.write(compressor.compress(chunk))
        stream.write(compressor.flush())
    return path


class TestLimits:
    def test_a_gzip_bomb_stops_at_the_input_limit(self, tmp_path: Path) -> None:
        """A small .gz that inflates past the limit is refused, naming the file and the limit."""
        bomb = _zeros_gz(tmp_path / "bomb.json.gz", 64)
        assert bomb.stat().st_size < 200_000
        with pytest.raises(UnreadableTraceFile, match="inflates to more than 1048576 bytes") as raised:
            load_telemetry(str(bomb), InputLimits(max_input_bytes=1024 * 1024))
        assert str(bomb) in str(raised.value)
        assert "--max-input-bytes" in str(raised.value)

    def test_a_plain_file_over_the_limit_is_refused_before_parsing(self, tmp_path: Path) -> None:
        """An uncompressed input larger than the limit is refused after reading at most limit + 1 bytes."""
        big = tmp_path / "big.json"
        big.write_bytes(DOCUMENT + b" " * 10_000)
        with pytest.raises(UnreadableTraceFile, match="holds more than 5000 bytes"):
            load_telemetry(str(big), InputLimits(max_input_bytes=5000))

    def test_a_line_over_the_limit_is_refused(self) -> None:
        """One JSON Lines document longer than the line limit is refused; shorter ones are read."""
        lines = DOCUMENT + b"\n" + DOCUMENT
        assert len(parse_telemetry(lines, "ok.jsonl", InputLimits(max_line_bytes=len(DOCUMENT))).spans) == 2
        with pytest.raises(UnreadableTraceFile, match="line of more than 100 bytes"):
            parse_telemetry(lines, "long.jsonl", InputLimits(max_line_bytes=100))

    def test_bad_limits_are_value_errors(self) -> None:
        """A limit below 1 is a programming error naming the limit."""
        with pytest.raises(ValueError, match="max_line_bytes"):
            InputLimits(max_line_bytes=0)


class TestNotRegularFiles:
    def test_a_link_to_a_device_is_refused(self, tmp_path: Path) -> None:
        """A symlink to /dev/zero is not read (it would stream forever)."""
        link = tmp_path / "zero.json"
        link.symlink_to("/dev/zero")
        with pytest.raises(UnreadableTraceFile, match="not a regular file"):
            load_telemetry(str(link))

    @pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX-only")
    def test_a_fifo_is_refused_without_blocking(self, tmp_path: Path) -> None:
        """A FIFO with no writer is refused at once instead of blocking the command forever."""
        fifo = tmp_path / "pipe.json"
        os.mkfifo(fifo)
        with pytest.raises(UnreadableTraceFile, match="not a regular file"):
            load_telemetry(str(fifo))

    def test_the_command_exits_2_naming_the_file(self, tmp_path: Path) -> None:
        """check on a device link exits 2 with the file and the reason on stderr."""
        link = tmp_path / "zero.json"
        link.symlink_to("/dev/zero")
        completed = run_cli("check", "--embedder", "hashing", str(link))
        assert completed.returncode == 2
        assert f"{link}: is not a regular file" in completed.stderr

    def test_the_command_applies_its_input_limit(self, tmp_path: Path) -> None:
        """check --max-input-bytes refuses a bomb with exit 2; a bad limit is a usage error."""
        bomb = _zeros_gz(tmp_path / "bomb.json.gz", 8)
        completed = run_cli("check", "--embedder", "hashing", "--max-input-bytes", "100000", str(bomb))
        assert completed.returncode == 2
        assert "inflates to more than 100000 bytes" in completed.stderr
        assert run_cli("check", "--max-line-bytes", "0", str(bomb)).returncode == 2


class TestGzipIntegrity:
    def test_concatenated_members_are_read_whole(self) -> None:
        """Two gzip members (as `cat a.gz b.gz` makes) give the spans of both."""
        data = gzip.compress(DOCUMENT + b"\n") + gzip.compress(DOCUMENT)
        assert len(parse_telemetry(data, "two.gz").spans) == 2

    def test_a_member_cut_before_its_trailer_is_refused(self) -> None:
        """Data that ends before the CRC/length trailer is damaged, not silently short."""
        data = gzip.compress(DOCUMENT)[:-4]
        with pytest.raises(UnreadableTraceFile, match="damaged gzip data"):
            parse_telemetry(data, "cut.gz")

    def test_trailing_garbage_is_refused(self) -> None:
        """Bytes after the last member that are not another member are refused."""
        with pytest.raises(UnreadableTraceFile, match="trailing bytes"):
            parse_telemetry(gzip.compress(DOCUMENT) + b"garbage", "tail.gz")

    def test_a_wrong_crc_is_refused(self) -> None:
        """A member whose CRC does not match its content is refused."""
        data = bytearray(gzip.compress(DOCUMENT))
        data[-8] ^= 0xFF
        with pytest.raises(UnreadableTraceFile, match="damaged gzip data"):
            parse_telemetry(bytes(data), "crc.gz")


class TestHugeIntegers:
    """Past Python's 4 300-digit conversion limit int() raises a ValueError of its own: refused cleanly."""

    HUGE = "9" * 5000

    @pytest.mark.parametrize(
        "span",
        [
            {**SPAN, "startTimeUnixNano": HUGE},
            {**SPAN, "attributes": [{"key": "n", "value": {"intValue": HUGE}}]},
            {**SPAN, "attributes": [{"key": "n", "value": {"intValue": "-" + HUGE}}]},
        ],
        ids=["time", "attribute", "negative-attribute"],
    )
    def test_an_integer_string_past_any_field_is_out_of_range(self, span: dict[str, object]) -> None:
        document = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
        with pytest.raises(UnreadableTraceFile, match="out of range"):
            parse_telemetry(document, "huge.json")

    def test_a_json_number_past_the_limit_is_unreadable(self) -> None:
        document = DOCUMENT.replace(b'"1"', self.HUGE.encode(), 1)
        with pytest.raises(UnreadableTraceFile, match="huge.json"):
            parse_telemetry(document, "huge.json")
