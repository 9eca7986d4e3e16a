/**
 * `context_metrics` (spec 02: tool-result context consumption, emitted just before `done`): how much of the model's
 * context the run's tool results took. Token figures are estimates at 4 characters a token, the same estimate the
 * local engine reports; `input_tokens` is what the model calls reported (summed over calls).
 */

/** A tool step as the metrics read it (core/agent/loop.ts ToolStep). */
export interface MeteredStep {
  name: string;
  result_chars?: number;
  truncated?: boolean;
}

/** The `context_metrics` payload. */
export interface ContextMetrics {
  tool_results: number;
  tool_result_chars: number;
  tool_result_tokens: number;
  largest_tool_result: { name: string; chars: number } | null;
  truncated_tool_results: number;
  /** Input tokens of every model call of the run, summed. */
  input_tokens: number;
  /** tool_result_tokens / input_tokens (0..1), null when no model input was counted. */
  tool_share: number | null;
  model_calls: number;
}

/** Characters per estimated token. */
export const CHARS_PER_TOKEN = 4;

/** The run's context metrics from its tool steps and model usage. */
export function contextMetrics(steps: MeteredStep[], usage: { inputTokens: number; calls: number }): ContextMetrics {
  const chars = steps.reduce((s, x) => s + (x.result_chars ?? 0), 0);
  const largest = steps.reduce<MeteredStep | undefined>((a, b) => ((b.result_chars ?? 0) > (a?.result_chars ?? -1) ? b : a), undefined);
  const tokens = Math.ceil(chars / CHARS_PER_TOKEN);
  return {
    tool_results: steps.length,
    tool_result_chars: chars,
    tool_result_tokens: tokens,
    largest_tool_result: largest ? { name: largest.name, chars: largest.result_chars ?? 0 } : null,
    truncated_tool_results: steps.filter((s) => s.truncated).length,
    input_tokens: usage.inputTokens,
    tool_share: usage.inputTokens ? Math.min(1, Math.round((tokens / usage.inputTokens) * 1000) / 1000) : null,
    model_calls: usage.calls,
  };
}
