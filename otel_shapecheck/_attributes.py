"""Names of the public contract: the attributes and events users query in their trace backends.

These strings are a public API (TraceQL queries and dashboards are written against them). Our own
namespace is ``shapecheck.*``; the only ``gen_ai.*`` names written are the standard evaluation event's,
and, as metric attributes, the standard names of the agent, the model and the provider.
"""

from __future__ import annotations

from typing import Final

# Every evaluated span.
FLAGGED: Final = "shapecheck.flagged"
FLAGS: Final = "shapecheck.flags"

# Tool choice, on an LLM-call span that offered tools.
TOOL_CHOICE_OFFERED_COUNT: Final = "shapecheck.tool_choice.offered_count"
TOOL_CHOICE_CHOSEN: Final = "shapecheck.tool_choice.chosen"
TOOL_CHOICE_TOP: Final = "shapecheck.tool_choice.top"
TOOL_CHOICE_MARGIN: Final = "shapecheck.tool_choice.margin"
TOOL_CHOICE_NARROW: Final = "shapecheck.tool_choice.narrow"
TOOL_CHOICE_PROXY_DISAGREEMENT: Final = "shapecheck.tool_choice.proxy_disagreement"
TOOL_CHOICE_SKIPPED: Final = "shapecheck.tool_choice.skipped"
TOOL_CHOICE_EMBEDDER: Final = "shapecheck.tool_choice.embedder"
TOOL_CHOICE_MENU_SOURCE: Final = "shapecheck.tool_choice.menu_source"
TOOL_CHOICE_SCORING: Final = "shapecheck.tool_choice.scoring"
TOOL_CHOICE_COSINE_MARGIN: Final = "shapecheck.tool_choice.cosine_margin"
TOOL_CHOICE_RELATIVE_MARGIN: Final = "shapecheck.tool_choice.relative_margin"
TOOL_CHOICE_WEAKEST: Final = "shapecheck.tool_choice.weakest_chosen"
TOOL_CHOICE_TRUNCATED: Final = "shapecheck.tool_choice.truncated"

# Conformance, on an analyst span.
CONFORMANCE_ANALYST_ID: Final = "shapecheck.conformance.analyst_id"
CONFORMANCE_ATTEMPTS: Final = "shapecheck.conformance.attempts"
CONFORMANCE_EMITTED_PEAK: Final = "shapecheck.conformance.emitted_peak"
CONFORMANCE_EMITTED_FINAL: Final = "shapecheck.conformance.emitted_final"
CONFORMANCE_ACCEPTED: Final = "shapecheck.conformance.accepted"
CONFORMANCE_COLLAPSED: Final = "shapecheck.conformance.collapsed"
CONFORMANCE_RECOVERED: Final = "shapecheck.conformance.recovered"
CONFORMANCE_RATE: Final = "shapecheck.conformance.rate"
CONFORMANCE_UNREADABLE: Final = "shapecheck.conformance.unreadable"

# Attempt spans written by the retry wrapper (and by any emitter following the same convention).
ANALYST_ID: Final = "shapecheck.analyst.id"
ANALYST_ATTEMPT: Final = "shapecheck.analyst.attempt"
ROWS_EMITTED: Final = "shapecheck.rows.emitted"
ROWS_ACCEPTED: Final = "shapecheck.rows.accepted"
ROWS_UNREADABLE: Final = "shapecheck.rows.unreadable"

# Figures, on a span that carries a final answer.
FIGURES_CHECKED: Final = "shapecheck.figures.checked"
FIGURES_CARRIED: Final = "shapecheck.figures.carried"
FIGURES_COMPUTED: Final = "shapecheck.figures.computed"
FIGURES_INFERRED: Final = "shapecheck.figures.inferred"
FIGURES_UNSUPPORTED: Final = "shapecheck.figures.unsupported"
FIGURES_UNSUPPORTED_COUNT: Final = "shapecheck.figures.unsupported_count"
FIGURES_DERIVATIONS: Final = "shapecheck.figures.derivations"
FIGURES_TRUNCATED: Final = "shapecheck.figures.truncated"
FIGURES_SKIPPED: Final = "shapecheck.figures.skipped"

# An LLM-call span that records a call another span already records (a second instrumentation).
DUPLICATE_OF: Final = "shapecheck.duplicate_of"

# The run summary, on a run's agent span (the outermost agent span of its trace).
RUN_EVALUATED: Final = "shapecheck.run.evaluated"
RUN_DUPLICATES: Final = "shapecheck.run.duplicates"
RUN_FLAGGED: Final = "shapecheck.run.flagged"
RUN_LLM_CALLS_WITH_TOOLS: Final = "shapecheck.run.llm_calls_with_tools"
RUN_CHOICES: Final = "shapecheck.run.choices"
RUN_SCORED: Final = "shapecheck.run.scored"
RUN_NARROW: Final = "shapecheck.run.narrow"
RUN_PROXY_DISAGREEMENT: Final = "shapecheck.run.proxy_disagreement"
RUN_SKIPPED: Final = "shapecheck.run.skipped"
RUN_ANSWERS_CHECKED: Final = "shapecheck.run.answers_checked"
RUN_ANSWERS_SKIPPED: Final = "shapecheck.run.answers_skipped"
RUN_FIGURES_CHECKED: Final = "shapecheck.run.figures_checked"
RUN_FIGURES_CARRIED: Final = "shapecheck.run.figures_carried"
RUN_FIGURES_COMPUTED: Final = "shapecheck.run.figures_computed"
RUN_FIGURES_INFERRED: Final = "shapecheck.run.figures_inferred"
RUN_FIGURES_UNSUPPORTED: Final = "shapecheck.run.figures_unsupported"
RUN_ANALYSTS: Final = "shapecheck.run.analysts"
RUN_COLLAPSED: Final = "shapecheck.run.collapsed"
RUN_RECOVERED: Final = "shapecheck.run.recovered"
RUN_INCOMPLETE: Final = "shapecheck.run.incomplete"
RUN_LLM_CALLS: Final = "shapecheck.run.llm_calls"
RUN_COVERAGE: Final = "shapecheck.run.coverage"

# Values of ``shapecheck.run.coverage``: how much of a run the checks could read.
COVERAGE_NONE: Final = "none"
"""No model call of the run was seen: its zero counts say nothing about the run."""
COVERAGE_PARTIAL: Final = "partial"
"""Some model calls were seen without their content, menu or output (their checks skipped)."""
COVERAGE_FULL: Final = "full"
"""Every model call seen was read whole."""

# Values of ``shapecheck.flags``.
FLAG_TOOL_CHOICE_NARROW: Final = "tool_choice.narrow"
FLAG_TOOL_CHOICE_PROXY_DISAGREEMENT: Final = "tool_choice.proxy_disagreement"
FLAG_CONFORMANCE_COLLAPSED: Final = "conformance.collapsed"
FLAG_CONFORMANCE_UNRECOVERED: Final = "conformance.unrecovered"
FLAG_CONFORMANCE_UNREADABLE: Final = "conformance.unreadable"
FLAG_FIGURES_UNSUPPORTED: Final = "figures.unsupported"

# The standard evaluation event (OTel GenAI semantic conventions, v1.38+).
EVALUATION_EVENT: Final = "gen_ai.evaluation.result"
EVALUATION_NAME: Final = "gen_ai.evaluation.name"
EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"
RESPONSE_ID: Final = "gen_ai.response.id"
ERROR_TYPE: Final = "error.type"

# Values of ``gen_ai.evaluation.name``.
EVALUATION_TOOL_CHOICE: Final = "shapecheck.tool_choice"
EVALUATION_CONFORMANCE: Final = "shapecheck.conformance"
EVALUATION_FIGURES: Final = "shapecheck.figures"

# Verdict metrics (OpenTelemetry metrics API, meter ``otel_shapecheck``): instruments, then attributes.
METRIC_VERDICTS: Final = "shapecheck.verdicts"
METRIC_RUNS: Final = "shapecheck.runs"
METRIC_TOOL_CHOICE_MARGIN_PLUS_ONE: Final = "shapecheck.tool_choice.margin_plus_one"
METRIC_FIGURES_SUPPORT: Final = "shapecheck.figures.support"
METRIC_FIGURES_UNSUPPORTED: Final = "shapecheck.figures.unsupported"
METRIC_CHECK: Final = "shapecheck.check"
METRIC_LABEL: Final = "shapecheck.label"
METRIC_FLAGGED: Final = "shapecheck.flagged"
METRIC_COVERAGE: Final = RUN_COVERAGE
METRIC_AGENT_NAME: Final = "gen_ai.agent.name"
METRIC_REQUEST_MODEL: Final = "gen_ai.request.model"
METRIC_PROVIDER_NAME: Final = "gen_ai.provider.name"
METRIC_TOOL_NAME: Final = "gen_ai.tool.name"
