/**
 * Bedrock adapter of the streaming Model port (core/ai/ports.ts `StreamingModel`, DESIGN.md 6.1): Claude through
 * `ConverseStream`, driven by the copilot's agent loop (core/agent) in AWS.
 *
 * What the stream looks like and what we make of it:
 * - `contentBlockDelta.delta.text` → `text`.
 * - A reasoning block arrives as `delta.reasoningContent.text` fragments (→ `thinking` deltas), then its
 *   `reasoningContent.signature`, or as `reasoningContent.redactedContent` bytes; at the block's stop it becomes one
 *   `thinking_block` (text + signature, or the redacted bytes as base64), which the loop keeps in the assistant turn
 *   and this adapter sends back unchanged as `reasoningContent.reasoningText` / `redactedContent`.
 * - A tool call arrives as `contentBlockStart.start.toolUse` (id, name), then its input as JSON string fragments in
 *   `delta.toolUse.input` that split anywhere (mid-key, mid-value), then `contentBlockStop`. Fragments are joined
 *   per block index and parsed once at the block's stop, so the loop only ever sees complete tool calls.
 * - `messageStop.stopReason` and `metadata.usage` become the single final `stop` event with a `CallUsage`.
 *
 * Request rules (Anthropic's, as Bedrock enforces them): the conversation goes through `validTurns` (no blank
 * blocks, alternating roles, tool blocks only with a toolConfig, thinking only while thinking is on); with thinking,
 * `maxTokens` is above the budget and within the model's output limit, and no temperature is sent; thinking on a
 * model whose catalogue entry does not support it is refused before any call.
 *
 * Transient failures (throttling, unavailability, internal errors, model stream errors) can come from `send` (an HTTP
 * error status) or arrive inside an open stream as an exception frame. Before anything was yielded the call is retried
 * with the same backoff as core/ai/bedrock.ts (exponential, factor 2, jitter in [1, 2), capped), announcing each retry
 * with a `retry` event. Once output was yielded a retry would duplicate it downstream, so the call fails instead.
 * The SDK's own retry is off on clients we create (`maxAttempts: 1`): one retry layer, attempts counted in usage.
 */
import { abortError, backoffDelay, describe, sleep } from "./retry";
import {
  BedrockRuntimeClient,
  ConverseStreamCommand,
  ModelStreamErrorException,
  type ContentBlock,
  type ConverseStreamCommandInput,
  type ConverseStreamOutput,
  type Message,
  type ToolResultContentBlock,
  type ToolUseBlock,
} from "@aws-sdk/client-bedrock-runtime";
import { AppError } from "../error";
import { DEFAULT_RETRY, isTransient, type RetrySettings } from "./bedrock";
import { catalogue, modelCostUsd, outputTokens, type Catalogue, type CatalogueModel } from "./catalogue";
import { validTurns } from "./turns";
import {
  estimatedTokens,
  MODEL_RATES,
  type CallUsage,
  type ConversationTurn,
  type ModelStreamEvent,
  type ModelTier,
  type StopReason,
  type StreamRequest,
  type StreamingModel,
  type ThinkingContent,
  type TurnContent,
} from "./ports";

/** The SDK's JSON document type (tool inputs, tool results, extra model fields), without importing @smithy/types. */
type Doc = NonNullable<ToolUseBlock["input"]>;


/** Stop reasons we pass on as they are; the SDK may add others (see `stopReason`). */
const KNOWN_STOP_REASONS = new Set<string>([
  "end_turn",
  "tool_use",
  "max_tokens",
  "stop_sequence",
  "guardrail_intervened",
  "content_filtered",
]);

/** Options of `BedrockStreamingModel`. */
export interface BedrockStreamingModelOptions {
  /** The Bedrock Runtime client (default: `new BedrockRuntimeClient({ maxAttempts: 1 })`, region from the env). */
  client?: BedrockRuntimeClient;
  /** Model id per tier (default: the catalogue's tier defaults). */
  modelIds?: Partial<Record<ModelTier, string>>;
  /** The models, their rates, output limits and thinking support (default: `catalogue()` from the settings). */
  catalogue?: Catalogue;
  /** Backoff for transient errors before any output (default `DEFAULT_RETRY`: 5 retries, 500 ms to 8 s). */
  retry?: Partial<RetrySettings>;
}

/**
 * Claude on Bedrock through ConverseStream (StreamingModel port, DESIGN.md 6.1).
 *
 * `stream(req)` yields, in order: `text` / `thinking` deltas as they arrive, each tool call once complete
 * (`input` parsed from the joined fragments; an empty input is `{}`), `retry` before each retry of a transient
 * failure that happened before any output, then exactly one `stop` with the stop reason and the call's `CallUsage`
 * (tokens from `metadata.usage`, `costUsd` at the tier's rates, `attempts` = ConverseStream calls made, `latencyMs` =
 * wall time in ms from the first call to the end of the stream, retries included).
 *
 * Request mapping: model id `req.modelId ?? modelIds[req.tier]`; `system` as one text block; turns made valid
 * (`validTurns`) then mapped to Converse messages (thinking → `reasoningContent`, tool_use → `toolUse`, tool_result →
 * `toolResult` with `[{json}]` for objects, `[{text}]` otherwise); `toolConfig` only when tools are offered;
 * `maxTokens` per `outputTokens` (default 4,096 within the model's limit; above the budget with thinking); with
 * `thinking`, Anthropic's `thinking: {type: "enabled", budget_tokens}` as an additional model field and no
 * temperature (Anthropic rejects one with thinking on). Cost at the called model's catalogue rates.
 *
 * @throws AppError SERVICE_UNAVAILABLE ("The AI model is busy; please retry shortly", `retry_after_seconds`) when a
 *   transient error persists after `retry.retries` retries, or happens after output was already yielded
 * @throws AppError INTERNAL when a tool call's input is not valid JSON (or not an object), the stream breaks its own
 *   protocol (tool input without a tool block, a tool block never stopped, no `messageStop`), or the model stops
 *   with `malformed_model_output` / `malformed_tool_use`
 * @throws an Error named "AbortError" (as the SDK's HTTP handler throws) when `req.signal` fires, also while waiting
 *   between retries
 * @throws the SDK error unchanged for other failures (AccessDenied, Validation, ResourceNotFound, ...)
 */
export class BedrockStreamingModel implements StreamingModel {
  /** Recorded on agent runs. */
  readonly engine = "bedrock";
  private readonly client: BedrockRuntimeClient;
  private readonly modelIds: Record<ModelTier, string>;
  private readonly retry: RetrySettings;
  private readonly catalogue: Catalogue;

  constructor(opts: BedrockStreamingModelOptions = {}) {
    this.client = opts.client ?? new BedrockRuntimeClient({ maxAttempts: 1 });
    this.catalogue = opts.catalogue ?? catalogue();
    const d = this.catalogue.defaults;
    this.modelIds = { small: d.small.id, mid: d.mid.id, large: d.large.id, ...opts.modelIds };
    this.retry = { ...DEFAULT_RETRY, ...opts.retry };
  }

  /** The catalogue entry of the model a request calls; a model outside the catalogue (tests) at its tier's rates. */
  private entryOf(modelId: string, tier: ModelTier): CatalogueModel {
    return (
      this.catalogue.find(modelId) ?? {
        id: modelId,
        tier,
        inputUsdPer1M: MODEL_RATES[tier].input,
        outputUsdPer1M: MODEL_RATES[tier].output,
        maxOutputTokens: this.catalogue.defaults[tier].maxOutputTokens,
        thinking: this.catalogue.defaults[tier].thinking,
      }
    );
  }

  /** The model id used for a tier when the request names none. */
  modelId(tier: ModelTier): string {
    return this.modelIds[tier];
  }

  async *stream(req: StreamRequest): AsyncGenerator<ModelStreamEvent, void, undefined> {
    const modelId = req.modelId ?? this.modelIds[req.tier];
    const entry = this.entryOf(modelId, req.tier);
    const input = converseStreamInput(req, entry);
    const started = performance.now();
    let attempts = 0;
    // What a call cut short is billed at (the `cut` event): the request as sent, and the output streamed so far.
    const requestChars = JSON.stringify({ system: input.system, messages: input.messages, toolConfig: input.toolConfig }).length;

    for (;;) {
      attempts++;
      // Output already handed to the consumer by this call: once true, a retry would repeat it.
      let yielded = false;
      // Whether Bedrock accepted the request (its stream opened), and the characters of output it streamed since.
      let opened = false;
      let streamedChars = 0;
      // The usage the provider reported (at the stream's end), when it did.
      let inputTokens = 0;
      let outputTokens = 0;
      try {
        req.signal?.throwIfAborted();
        const res = await this.client.send(new ConverseStreamCommand(input), { abortSignal: req.signal });
        if (!res.stream) throw new AppError("INTERNAL", "Bedrock ConverseStream answered without an event stream");
        opened = true;

        const tools = new Map<number, { id: string; name: string; parts: string[] }>();
        const reasoning = new Map<number, { parts: string[]; signature?: string; redacted?: Uint8Array[] }>();
        let reason: StopReason | undefined;
        const unparsed: AppError[] = [];
        for await (const ev of res.stream) {
          // The SDK only notices an abort on its next read; stop handing out events at once.
          if (req.signal?.aborted) throw abortError(req.signal);
          throwIfException(ev);
          const index =
            ev.contentBlockStart?.contentBlockIndex ??
            ev.contentBlockDelta?.contentBlockIndex ??
            ev.contentBlockStop?.contentBlockIndex ??
            0;
          if (ev.contentBlockStart?.start?.toolUse) {
            const { toolUseId, name } = ev.contentBlockStart.start.toolUse;
            tools.set(index, { id: toolUseId ?? "", name: name ?? "", parts: [] });
          } else if (ev.contentBlockDelta?.delta) {
            const delta = ev.contentBlockDelta.delta;
            if (delta.text !== undefined) {
              if (delta.text !== "") {
                yielded = true;
                streamedChars += delta.text.length;
                yield { type: "text", delta: delta.text };
              }
            } else if (delta.reasoningContent) {
              const block = reasoning.get(index) ?? { parts: [] };
              reasoning.set(index, block);
              const r = delta.reasoningContent;
              if (r.signature !== undefined) block.signature = (block.signature ?? "") + r.signature;
              if (r.redactedContent !== undefined) (block.redacted ??= []).push(r.redactedContent);
              if (r.text !== undefined && r.text !== "") {
                block.parts.push(r.text);
                yielded = true;
                streamedChars += r.text.length;
                yield { type: "thinking", delta: r.text };
              }
            } else if (delta.toolUse) {
              const tool = tools.get(index);
              if (!tool) {
                throw new AppError("INTERNAL", `Bedrock streamed tool input for content block ${index}, which did not start as a tool call`);
              }
              tool.parts.push(delta.toolUse.input ?? "");
              streamedChars += delta.toolUse.input?.length ?? 0;
            }
          } else if (ev.contentBlockStop) {
            const thought = reasoning.get(index);
            if (thought) {
              reasoning.delete(index);
              yielded = true;
              yield { type: "thinking_block", block: thinkingBlock(thought) };
            }
            const tool = tools.get(index);
            if (tool) {
              tools.delete(index);
              // Input that does not parse is kept aside until the stop reason is known: a call the output cap cut off
              // (max_tokens) is dropped, and the turn ends as cut; any other is the model's error.
              const input = parsedToolInput(tool);
              if (input instanceof AppError) unparsed.push(input);
              else {
                yielded = true;
                yield { type: "tool_call" as const, id: tool.id, name: tool.name, input };
              }
            }
          } else if (ev.messageStop) {
            reason = stopReason(ev.messageStop.stopReason);
          } else if (ev.metadata?.usage) {
            inputTokens = ev.metadata.usage.inputTokens ?? 0;
            outputTokens = ev.metadata.usage.outputTokens ?? 0;
          }
        }
        if (req.signal?.aborted) throw abortError(req.signal);
        if (!reason) throw new AppError("INTERNAL", "The Bedrock stream ended without a stop reason (no messageStop event)");
        // A tool call cut by the output cap is dropped: the loop ends the run as cut (partial), keeping what came before.
        if (reason !== "max_tokens") {
          if (unparsed.length) throw unparsed[0];
          // A tool block that never stopped would be a call silently lost.
          for (const tool of tools.values()) {
            throw new AppError("INTERNAL", `The Bedrock stream ended inside the ${tool.name} tool call (${tool.id})`);
          }
        }
        // A reasoning block the stream never closed still belongs to the turn (Anthropic wants it back whole).
        for (const thought of reasoning.values()) yield { type: "thinking_block", block: thinkingBlock(thought) };
        const usage: CallUsage = {
          modelId,
          tier: entry.tier,
          inputTokens,
          outputTokens,
          costUsd: modelCostUsd(entry, inputTokens, outputTokens),
          latencyMs: Math.round(performance.now() - started),
          attempts,
        };
        yield { type: "stop", reason, usage };
        return;
      } catch (err) {
        // A call Bedrock accepted and that ends here is billed once the model generated (or the caller
        // aborted it while it ran); one refused or throttled before any output is not. Its usage goes before the error.
        // Only for a call that ends here: an attempt that is retried reports nothing (its use could only be guessed).
        const retried = !req.signal?.aborted && isRetryable(err) && !yielded && attempts <= this.retry.retries;
        if (opened && !retried && (req.signal?.aborted || yielded || streamedChars > 0)) {
          const billedIn = inputTokens || estimatedTokens(requestChars);
          const billedOut = outputTokens || estimatedTokens(streamedChars);
          yield {
            type: "cut",
            usage: { modelId, tier: entry.tier, inputTokens: billedIn, outputTokens: billedOut, costUsd: modelCostUsd(entry, billedIn, billedOut), latencyMs: Math.round(performance.now() - started), attempts },
          };
        }
        // A destroyed connection surfaces as some stream error; the caller asked for the abort, so say so.
        if (req.signal?.aborted) throw abortError(req.signal);
        if (!isRetryable(err)) throw err;
        if (yielded || attempts > this.retry.retries) throw this.busy();
        const delayMs = backoffDelay(attempts, this.retry);
        yield { type: "retry", attempt: attempts + 1, delayMs, reason: describe(err) };
        await sleep(delayMs, req.signal);
      }
    }
  }

  /** The error for a transient failure we cannot (or may no longer) retry; same wording as BedrockModel. */
  private busy(): AppError {
    return new AppError("SERVICE_UNAVAILABLE", "The AI model is busy; please retry shortly", {
      retry_after_seconds: Math.ceil(this.retry.maxTimeoutMs / 1000),
    });
  }
}

/** A finished reasoning block as port content: redacted bytes as base64, else the text with its signature. */
function thinkingBlock(b: { parts: string[]; signature?: string; redacted?: Uint8Array[] }): ThinkingContent {
  if (b.redacted?.length) return { type: "redacted_thinking", data: Buffer.concat(b.redacted.map((r) => Buffer.from(r))).toString("base64") };
  return { type: "thinking", text: b.parts.join(""), ...(b.signature !== undefined ? { signature: b.signature } : {}) };
}

/** The ConverseStream request for a stream request (the mapping documented on `BedrockStreamingModel`). */
function converseStreamInput(req: StreamRequest, entry: CatalogueModel): ConverseStreamCommandInput {
  const turns = validTurns(req.messages, { tools: req.tools.length > 0, thinking: !!req.thinking });
  if (turns.length === 0) throw new AppError("VALIDATION_ERROR", "The conversation holds no user text to answer");
  const input: ConverseStreamCommandInput = {
    modelId: entry.id,
    system: [{ text: req.system }],
    messages: turns.map(toMessage),
    inferenceConfig: {
      maxTokens: outputTokens(entry, req),
      // Anthropic rejects a temperature with extended thinking on.
      ...(req.thinking || req.temperature === undefined ? {} : { temperature: req.temperature }),
    },
  };
  // Converse rejects an empty tools list; without tools, validTurns has turned any tool blocks into text.
  if (req.tools.length > 0) {
    input.toolConfig = {
      tools: req.tools.map((t) => ({
        toolSpec: { name: t.name, description: t.description, inputSchema: { json: t.inputSchema as Doc } },
      })),
    };
  }
  if (req.thinking) {
    input.additionalModelRequestFields = { thinking: { type: "enabled", budget_tokens: req.thinking.budgetTokens } };
  }
  return input;
}

function toMessage(turn: ConversationTurn): Message {
  return { role: turn.role, content: turn.content.flatMap(toContentBlock) };
}

function toContentBlock(part: TurnContent): ContentBlock[] {
  switch (part.type) {
    case "text":
      // Bedrock rejects blank text blocks with a ValidationException; they carry nothing anyway.
      return part.text.trim() === "" ? [] : [{ text: part.text }];
    case "thinking":
      return [{ reasoningContent: { reasoningText: { text: part.text, ...(part.signature !== undefined ? { signature: part.signature } : {}) } } }];
    case "redacted_thinking":
      return [{ reasoningContent: { redactedContent: Buffer.from(part.data, "base64") } }];
    case "tool_use":
      return [{ toolUse: { toolUseId: part.id, name: part.name, input: part.input as Doc } }];
    case "tool_result":
      return [{ toolResult: { toolUseId: part.id, status: part.status, content: toolResultContent(part.content) } }];
  }
}

/** Objects go as JSON (the model reads their structure); anything else as text, JSON-encoded unless a string. */
function toolResultContent(content: unknown): ToolResultContentBlock[] {
  if (typeof content === "string") return [{ text: content }];
  if (content !== null && typeof content === "object" && !Array.isArray(content)) return [{ json: content as Doc }];
  return [{ text: JSON.stringify(content) ?? "null" }];
}

/** Exception members of the stream union: the SDK throws them, but a yielded one must fail the call the same way. */
function throwIfException(ev: ConverseStreamOutput): void {
  const err =
    ev.throttlingException ??
    ev.serviceUnavailableException ??
    ev.internalServerException ??
    ev.modelStreamErrorException ??
    ev.validationException;
  if (err) throw err;
}

/** The joined input fragments of a finished tool block, parsed; no fragments (a tool without parameters) is `{}`. */
/** `parseToolInput`, its refusal returned instead of thrown. */
function parsedToolInput(tool: { id: string; name: string; parts: string[] }): Record<string, unknown> | AppError {
  try {
    return parseToolInput(tool);
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
}

function parseToolInput(tool: { id: string; name: string; parts: string[] }): Record<string, unknown> {
  const raw = tool.parts.join("");
  if (raw.trim() === "") return {};
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    throw new AppError(
      "INTERNAL",
      `The AI model sent tool input that is not valid JSON for ${tool.name} (${tool.id}): ${(err as Error).message}`,
      { model_error: raw.slice(0, 500) },
    );
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new AppError("INTERNAL", `The AI model sent tool input for ${tool.name} (${tool.id}) that is not a JSON object`, {
      model_error: raw.slice(0, 500),
    });
  }
  return value as Record<string, unknown>;
}

/** Converse's stop reason as the port's; other reasons mean no usable answer (or a filled context window). */
function stopReason(reason: string | undefined): StopReason {
  if (reason && KNOWN_STOP_REASONS.has(reason)) return reason as StopReason;
  // The output was cut short by the context window rather than maxTokens: for the loop it is the same situation.
  if (reason === "model_context_window_exceeded") return "max_tokens";
  throw new AppError("INTERNAL", `The AI model stopped with stopReason ${reason ?? "(none)"}`);
}

/** Transient per bedrock.ts, plus a model stream error (ConverseStream's "retry your request" exception). */
function isRetryable(err: unknown): boolean {
  return isTransient(err) || err instanceof ModelStreamErrorException;
}
