"""The low-cardinality names metrics are broken down by: the agent, the model and the provider of a call.

Each convention spells them differently; these readers answer in the GenAI semantic conventions' terms
(``gen_ai.agent.name``, ``gen_ai.request.model``, ``gen_ai.provider.name``) and never raise. Only short
strings count: a value that is not a string, is empty, or is longer than :data:`MAX_DIMENSION_CHARS`
is unknown (a metric attribute must never carry content by accident).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from otel_shapecheck.readers._openllmetry import TRACELOOP_SPAN_KIND

MAX_DIMENSION_CHARS: Final = 128

_AGENT_NAME_KEYS = ("gen_ai.agent.name", "agent.name")
_TRACELOOP_ENTITY_NAME = "traceloop.entity.name"
_TRACELOOP_NAMED_KINDS = ("agent", "workflow")
_MODEL_KEYS = ("gen_ai.request.model", "llm.model_name", "gen_ai.response.model")
_PROVIDER_KEYS = ("gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system")


def agent_name(attributes: Mapping[str, object]) -> str | None:
    """The agent's name: ``gen_ai.agent.name``, OpenInference's ``agent.name``, a Traceloop entity name."""
    name = _first(attributes, _AGENT_NAME_KEYS)
    if name is None and attributes.get(TRACELOOP_SPAN_KIND) in _TRACELOOP_NAMED_KINDS:
        name = _first(attributes, (_TRACELOOP_ENTITY_NAME,))
    return name


def request_model(attributes: Mapping[str, object]) -> str | None:
    """The model asked for (else OpenInference's model name, else the model that answered)."""
    return _first(attributes, _MODEL_KEYS)


def provider_name(attributes: Mapping[str, object]) -> str | None:
    """The provider (``gen_ai.provider.name``, the deprecated ``gen_ai.system``, OpenInference's)."""
    return _first(attributes, _PROVIDER_KEYS)


def _first(attributes: Mapping[str, object], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = attributes.get(key)
        if isinstance(value, str) and 0 < len(value.strip()) <= MAX_DIMENSION_CHARS:
            return value.strip()
    return None
