"""Tool menus recorded on an ancestor span (the ``invoke_agent``/agent span) rather than on the LLM call.

Some frameworks write the agent's tools only on its agent span: ``gen_ai.tool.definitions`` (OTel GenAI,
and OpenLLMetry's JSON form), OpenInference's ``llm.tools.<i>.tool.json_schema``, OpenLLMetry's legacy
``llm.request.functions.<i>.*``, the AI SDK's ``ai.prompt.tools``, or strands-agents'
``gen_ai.agent.tools`` (names only, when tool definitions are not opted in). An LLM call with no menu
of its own uses its nearest ancestor's.

:func:`has_own_menu` and :func:`menu_attributes` run on the application's thread (key lookups, and a
copy of the menu's few attributes from a live span); :func:`read_menu` parses them on the worker.
"""

from __future__ import annotations

from collections.abc import Mapping

from otel_shapecheck._model import OfferedTool
from otel_shapecheck.readers._adk import LLM_REQUEST
from otel_shapecheck.readers._ai_sdk import PROMPT_TOOLS, read_prompt_tools
from otel_shapecheck.readers._genai import TOOL_DEFINITIONS, read_string_list, read_tool_definitions
from otel_shapecheck.readers._openinference import read_openinference_content
from otel_shapecheck.readers._openllmetry import FUNCTIONS_PREFIX, read_openllmetry_content

AGENT_TOOLS = "gen_ai.agent.tools"
"""strands-agents: the agent's tool names, a JSON array of strings."""
OPENINFERENCE_TOOLS_PREFIX = "llm.tools."
_OPENINFERENCE_MARKER = "llm.tools.0.tool.json_schema"
_OPENLLMETRY_MARKER = "llm.request.functions.0.name"

MENU_KEYS = frozenset({TOOL_DEFINITIONS, _OPENINFERENCE_MARKER, _OPENLLMETRY_MARKER, PROMPT_TOOLS})
"""Keys of which one is present when a span carries a full menu."""
_ANCESTOR_MENU_KEYS = MENU_KEYS | {AGENT_TOOLS}
_OWN_MENU_KEYS = MENU_KEYS | {LLM_REQUEST}
"""An LLM call's own menu may also sit in google-adk's request JSON (an agent span never carries one)."""

MAX_MENU_ATTRIBUTES = 4096
"""Most attributes copied from one ancestor (an indexed menu has a few per tool)."""


def has_own_menu(attributes: Mapping[str, object]) -> bool:
    """Whether an LLM-call span's attributes carry its menu."""
    return not _OWN_MENU_KEYS.isdisjoint(attributes)


def menu_attributes(attributes: Mapping[str, object]) -> dict[str, object] | None:
    """A copy of the menu attributes of a (possibly live) span; ``None`` when it carries no menu.

    Never raises: a live span's attributes may change while they are copied, which reads as no menu.
    """
    try:
        present = _ANCESTOR_MENU_KEYS.intersection(attributes)
        if not present:
            return None
        copied = {
            key: attributes[key] for key in present if key in (TOOL_DEFINITIONS, AGENT_TOOLS, PROMPT_TOOLS)
        }
        if _OPENINFERENCE_MARKER in present or _OPENLLMETRY_MARKER in present:
            prefixes = (OPENINFERENCE_TOOLS_PREFIX, FUNCTIONS_PREFIX)
            for key, value in list(attributes.items())[:MAX_MENU_ATTRIBUTES]:
                if isinstance(key, str) and key.startswith(prefixes):
                    copied[key] = value
        return copied
    except Exception:  # a live span's attributes changed under us
        return None


def read_menu(attributes: Mapping[str, object]) -> tuple[OfferedTool, ...] | None:
    """The menu in copied menu attributes: full definitions first, then names only."""
    for offered in (
        read_tool_definitions(attributes.get(TOOL_DEFINITIONS)),
        read_prompt_tools(attributes.get(PROMPT_TOOLS)),
        read_openinference_content(attributes).offered_tools,
        read_openllmetry_content(attributes).offered_tools,
    ):
        if offered:
            return offered
    names = read_string_list(attributes.get(AGENT_TOOLS))
    return tuple(OfferedTool(name) for name in dict.fromkeys(names)) or None
