"""The real MiniLM embedder: offline loading, batching that keeps vectors, obvious choices ranked first."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from otel_shapecheck import Embedder, MiniLMEmbedder, Subject, ToolChoiceCheck
from otel_shapecheck._model import LLMCall, OfferedTool, ToolCall


@pytest.fixture(name="minilm", scope="module")
def _minilm() -> Iterator[MiniLMEmbedder]:
    yield MiniLMEmbedder()


class TestOffline:
    def test_loads_and_embeds_with_the_network_blocked(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """With HF_HUB_OFFLINE=1 and every socket connect refused, the model still loads and embeds."""
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")

        def refuse(*args: object, **kwargs: object) -> None:
            raise OSError("network disabled in this test")

        monkeypatch.setattr(socket.socket, "connect", refuse)
        monkeypatch.setattr(socket, "create_connection", refuse)
        embedder = MiniLMEmbedder()
        assert not embedder.loaded
        vectors = embedder.embed(["the weather in Paris", "send an email"])
        assert embedder.loaded
        assert isinstance(embedder, Embedder)
        assert vectors.shape == (2, 384) and vectors.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)

    def test_empty_batch_loads_nothing(self) -> None:
        """Embedding no texts returns an empty matrix without loading the model."""
        embedder = MiniLMEmbedder()
        assert embedder.embed([]).shape == (0, 384)
        assert not embedder.loaded


class TestBatching:
    TEXTS = [
        "hi",
        "Get the current weather forecast for a city, for when the user asks about weather.",
        "Search for flights between two airports on a given date " * 3,
        "word " * 400,
        "ok",
    ]

    def test_padding_and_chunking_do_not_change_vectors(self, minilm: MiniLMEmbedder) -> None:
        """Each text embeds the same alone, in a mixed-length batch, and in chunks of two, to the last bit
        (a cached vector computed in another batch must be the vector this batch would compute)."""
        alone = np.stack([minilm.embed([text])[0] for text in self.TEXTS])
        together = minilm.embed(self.TEXTS)
        chunked = MiniLMEmbedder(batch_size=2).embed(self.TEXTS)
        reversed_ = minilm.embed(self.TEXTS[::-1])[::-1]
        np.testing.assert_array_equal(together, alone)
        np.testing.assert_array_equal(chunked, alone)
        np.testing.assert_array_equal(reversed_, alone)

    def test_concurrent_first_use_is_safe(self) -> None:
        """Threads racing to the first embed all get the same vectors from one loaded model."""
        embedder = MiniLMEmbedder()
        with ThreadPoolExecutor(max_workers=4) as pool:
            results = list(pool.map(lambda _: embedder.embed(["a shared sentence"]), range(4)))
        for result in results[1:]:
            np.testing.assert_allclose(result, results[0], atol=1e-6)

    def test_threads_setting(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """intra_op_num_threads must be a whole number ≥ 1; the error names it."""
        with pytest.raises(ValueError, match="intra_op_num_threads"):
            MiniLMEmbedder(intra_op_num_threads=0)
        monkeypatch.setenv("OTEL_SHAPECHECK_EMBEDDER_THREADS", "2")
        assert MiniLMEmbedder().embed(["two threads"]).shape == (1, 384)


MENU = (
    OfferedTool("get_weather", "Get the current weather and forecast for a city."),
    OfferedTool("send_email", "Send an email message to a recipient with a subject and body."),
    OfferedTool("search_flights", "Search for flights between two airports on a date."),
    OfferedTool("convert_currency", "Convert an amount of money from one currency to another."),
)
CASES = [
    ("Will it rain in Lisbon tomorrow?", "get_weather"),
    ("Email Maria that the meeting moved to 3pm.", "send_email"),
    ("Find me a flight from Boston to Denver next Friday.", "search_flights"),
    ("How much is 250 euros in Japanese yen?", "convert_currency"),
]


class TestRanking:
    @pytest.mark.parametrize(("user", "tool"), CASES)
    def test_obvious_tool_ranks_first(self, minilm: MiniLMEmbedder, user: str, tool: str) -> None:
        """For an unambiguous request the right tool is top-scored, with a positive margin."""
        check = ToolChoiceCheck(minilm)
        call = LLMCall("a" * 16, "0" * 32, offered_tools=MENU, tool_calls=(ToolCall(tool),), user_text=user)
        (verdict,) = check.evaluate([Subject("a" * 16, "0" * 32, llm_call=call)])
        assert verdict is not None
        (row,) = check.calls()
        assert row.result is not None and row.result.top == tool
        assert verdict.label in ("clear", "narrow") and verdict.score is not None and verdict.score > 0

    def test_wrong_choice_is_flagged(self, minilm: MiniLMEmbedder) -> None:
        """Answering a weather question by sending an email is a proxy disagreement."""
        call = LLMCall(
            "a" * 16,
            "0" * 32,
            offered_tools=MENU,
            tool_calls=(ToolCall("send_email"),),
            user_text=CASES[0][0],
        )
        (verdict,) = ToolChoiceCheck(minilm).evaluate([Subject("a" * 16, "0" * 32, llm_call=call)])
        assert verdict is not None and verdict.label == "disagreement"
