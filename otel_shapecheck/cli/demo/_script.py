"""A scripted model's script: the replies it plays and the tool calls they request, in any wire format."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ScriptedToolCall:
    """One tool call the scripted model requests: its id, function name and JSON arguments."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    call_id: str | None = None

    def arguments_json(self) -> str:
        """The arguments as the OpenAI API sends them: a JSON string."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(dict(self.arguments))


@dataclass(frozen=True)
class ScriptedReply:
    """One canned chat completion: assistant text and/or tool calls, with the response metadata.

    ``finish_reason`` defaults to ``tool_calls`` when the reply requests tools, else ``stop``.
    """

    text: str | None = None
    tool_calls: Sequence[ScriptedToolCall] = ()
    finish_reason: str | None = None
    completion_id: str | None = None
    prompt_tokens: int = 11
    completion_tokens: int = 7

    def resolved_finish_reason(self) -> str:
        """The finish reason the reply reports."""
        if self.finish_reason is not None:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"
