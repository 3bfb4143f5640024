// One JavaScript row of the framework matrix: a real Node agent against the scripted OpenAI-compatible
// server, exporting its spans with a standard OpenTelemetry JS exporter to an OTLP endpoint.
//
// Usage: node agent.mjs ROW MODE EXPORTER OTLP_ENDPOINT BASE_URL EXPORT_FILE SCENARIO_JSON
//   ROW       ai-sdk-v6 | ai-sdk-legacy | ai-sdk-otel | ai-sdk-openinference | openai-traceloop
//   MODE      generate | stream
//   EXPORTER  http-proto | http-json | grpc
//
// The scenario (question, instructions, tools, usage rows) comes from the Python side as JSON, so both
// matrices play the same turn. EXPORT_FILE receives every exported span as OTLP/JSON: what the agent
// sent, for `otel-shapecheck check` to read beside what the gateway forwarded.

import { writeFileSync } from 'node:fs';

import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPTraceExporter as GrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  InMemorySpanExporter,
} from '@opentelemetry/sdk-trace-base';

const [row, mode, exporterKind, endpoint, baseURL, exportFile, scenarioJson] = process.argv.slice(2);
const scenario = JSON.parse(scenarioJson);

const PARAMETERS = {
  volume_usage: scenario.region_parameters,
  volume_usage_report: scenario.region_parameters,
  weather_forecast: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
  },
  send_email: {
    type: 'object',
    properties: { to: { type: 'string' }, body: { type: 'string' } },
    required: ['to', 'body'],
  },
};

const RUN = {
  volume_usage: ({ region }) => ({ region, rows: scenario.usage[region] ?? [] }),
  volume_usage_report: ({ region }) => ({ region, rows: scenario.usage[region] ?? [] }),
  weather_forecast: ({ city }) => `Sunny in ${city}.`,
  send_email: ({ to }) => `sent to ${to}`,
};

/** The OTLP exporter the row names, to the gateway's endpoint. */
function otlpExporter() {
  switch (exporterKind) {
    case 'http-proto':
      return new ProtoExporter({ url: `${endpoint}/v1/traces` });
    case 'http-json':
      return new JsonExporter({ url: `${endpoint}/v1/traces` });
    case 'grpc':
      return new GrpcExporter({ url: endpoint });
    default:
      throw new Error(`unknown exporter ${exporterKind}`);
  }
}

/** Every batch goes to the OTLP exporter and is kept, to be written as OTLP/JSON at the end. */
class TeeExporter {
  constructor(inner) {
    this.inner = inner;
    this.kept = new InMemorySpanExporter();
    this.failures = 0;
  }

  export(spans, done) {
    this.kept.export(spans, () => {});
    this.inner.export(spans, result => {
      if (result.code !== 0) this.failures += 1;
      done(result);
    });
  }

  forceFlush() {
    return this.inner.forceFlush();
  }

  shutdown() {
    return this.inner.shutdown();
  }
}

async function main() {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const tee = new TeeExporter(otlpExporter());
  // Batch processors, as NodeSDK and the integrations' guides set up: the run's spans leave in end order.
  let processor = new BatchSpanProcessor(tee);
  if (row === 'ai-sdk-openinference') {
    const { OpenInferenceBatchSpanProcessor } = await import('@arizeai/openinference-vercel');
    processor = new OpenInferenceBatchSpanProcessor({ exporter: tee });
  }
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': `js-${row}` }),
    spanProcessors: [processor],
  });
  trace.setGlobalTracerProvider(provider);
  const tracer = provider.getTracer('otel-shapecheck-js-matrix');

  const agents = { 'openai-traceloop': openaiAgent, 'ai-sdk-v6': aiSdk6Agent };
  const answer = await (agents[row] ?? aiSdkAgent)(provider, tracer);
  console.log(answer);

  await provider.forceFlush();
  await provider.shutdown();
  const body = JsonTraceSerializer.serializeRequest(tee.kept.getFinishedSpans());
  writeFileSync(exportFile, Buffer.from(body));
  if (tee.failures > 0) {
    console.error(`${tee.failures} export(s) failed`);
    process.exitCode = 1;
  }
}

/** The AI SDK's tool loop, with the telemetry integration the row names. */
async function aiSdkAgent(provider, tracer) {
  const { generateText, jsonSchema, registerTelemetry, stepCountIs, streamText, tool } = await import('ai');
  const { createOpenAI } = await import('@ai-sdk/openai');
  const { LegacyOpenTelemetry, OpenTelemetry } = await import('@ai-sdk/otel');
  registerTelemetry(row === 'ai-sdk-otel' ? new OpenTelemetry({ tracer }) : new LegacyOpenTelemetry({ tracer }));

  const openai = createOpenAI({ baseURL, apiKey: 'scripted' });
  const call = {
    model: openai.chat('gpt-4o-mini'),
    instructions: scenario.instructions,
    prompt: scenario.question,
    tools: aiSdkTools(tool, jsonSchema),
    stopWhen: stepCountIs(5),
    telemetry: { functionId: 'storage-ops' },
  };
  return mode === 'stream' ? streamedText(streamText(call)) : (await generateText(call)).text;
}

/** The AI SDK 6's tool loop with its built-in telemetry (`experimental_telemetry`), before `@ai-sdk/otel`. */
async function aiSdk6Agent(provider, tracer) {
  const { generateText, jsonSchema, stepCountIs, streamText, tool } = await import('ai-v6');
  const { createOpenAI } = await import('ai-sdk-openai-v3');
  const openai = createOpenAI({ baseURL, apiKey: 'scripted' });
  const call = {
    model: openai.chat('gpt-4o-mini'),
    system: scenario.instructions,
    prompt: scenario.question,
    tools: aiSdkTools(tool, jsonSchema),
    stopWhen: stepCountIs(5),
    experimental_telemetry: { isEnabled: true, functionId: 'storage-ops', tracer },
  };
  return mode === 'stream' ? streamedText(streamText(call)) : (await generateText(call)).text;
}

/** The scenario's tools, built with the AI SDK's own `tool` and `jsonSchema` helpers. */
function aiSdkTools(tool, jsonSchema) {
  return Object.fromEntries(
    Object.entries(scenario.tools).map(([name, description]) => [
      name,
      tool({ description, inputSchema: jsonSchema(PARAMETERS[name]), execute: async input => RUN[name](input) }),
    ]),
  );
}

/** A streamed call's whole text. */
async function streamedText(result) {
  let text = '';
  for await (const chunk of result.textStream) text += chunk;
  return text;
}

/** A hand-written tool loop over the `openai` client, instrumented by Traceloop's OpenAI instrumentation. */
async function openaiAgent(provider, tracer) {
  const { default: OpenAI } = await import('openai');
  const { OpenAIInstrumentation } = await import('@traceloop/instrumentation-openai');
  const instrumentation = new OpenAIInstrumentation({ traceContent: true, enrichTokens: false });
  instrumentation.setTracerProvider(provider);
  instrumentation.manuallyInstrument(OpenAI);

  const client = new OpenAI({ baseURL, apiKey: 'scripted' });
  const tools = Object.entries(scenario.tools).map(([name, description]) => ({
    type: 'function',
    function: { name, description, parameters: PARAMETERS[name] },
  }));
  const messages = [
    { role: 'system', content: scenario.instructions },
    { role: 'user', content: scenario.question },
  ];
  return tracer.startActiveSpan(
    'invoke_agent storage-ops',
    { attributes: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'storage-ops' } },
    async agentSpan => {
      try {
        for (let step = 0; step < 5; step++) {
          const message = await complete(client, { model: 'gpt-4o-mini', messages, tools });
          messages.push(message);
          if (!message.tool_calls?.length) return message.content;
          for (const toolCall of message.tool_calls) {
            const result = RUN[toolCall.function.name](JSON.parse(toolCall.function.arguments));
            const content = typeof result === 'string' ? result : JSON.stringify(result);
            messages.push({ role: 'tool', tool_call_id: toolCall.id, content });
          }
        }
        throw new Error('the model did not answer in five steps');
      } finally {
        agentSpan.end();
      }
    },
  );
}

/** One chat completion, streamed or not; the assistant message it produced. */
async function complete(client, request) {
  if (mode !== 'stream') return (await client.chat.completions.create(request)).choices[0].message;
  const stream = await client.chat.completions.create({ ...request, stream: true });
  const message = { role: 'assistant', content: '', tool_calls: [] };
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta ?? {};
    if (delta.content) message.content += delta.content;
    for (const part of delta.tool_calls ?? []) {
      const call = (message.tool_calls[part.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
      if (part.id) call.id = part.id;
      if (part.function?.name) call.function.name += part.function.name;
      if (part.function?.arguments) call.function.arguments += part.function.arguments;
    }
  }
  if (!message.tool_calls.length) delete message.tool_calls;
  return message;
}

await main();
