import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { AppError } from "../../../core/error";
import type { CallUsage, Model, StructuredRequest } from "../../../core/ai/ports";
import { costUsd } from "../../../core/ai/ports";
import type { InsightInput } from "../../../core/recommendation/engine/types";

const dir = fileURLToPath(new URL("../../fixtures/bedrock-delivery/", import.meta.url));

/** Reads a fixture file of test/fixtures/bedrock-delivery. */
export function fixture<T = Record<string, unknown>>(name: string): T {
  return JSON.parse(readFileSync(dir + name, "utf8")) as T;
}

/** The realistic VA insight set (24 insights, verbatim quotes from shared/realdata/va-mobile-app). */
export const vaInsights = (): InsightInput[] => fixture<InsightInput[]>("va-insights.json");

export interface RecordedResponse {
  output: unknown;
  usage: { inputTokens: number; outputTokens: number };
}

/**
 * A fake of the Model port that replays recorded tool answers in order, behaving like the Bedrock adapter: each
 * answer is parsed with the request's tool schema; an invalid answer is "repaired" by the next recorded one (the
 * adapter's repair turn), and when the answers run out the call fails with AppError INTERNAL, as the adapter does.
 */
export class ReplayModel implements Model {
  readonly requests: StructuredRequest<unknown>[] = [];
  readonly rejected: string[] = [];
  private readonly queue: RecordedResponse[];

  constructor(responses: RecordedResponse[], private readonly toolName?: string) {
    this.queue = [...responses];
  }

  static fromFixture(name: string): ReplayModel {
    const f = fixture<{ tool: string; responses: RecordedResponse[] }>(name);
    return new ReplayModel(f.responses, f.tool);
  }

  async structured<T>(req: StructuredRequest<T>): Promise<{ output: T; usage: CallUsage }> {
    this.requests.push(req as StructuredRequest<unknown>);
    if (this.toolName && req.tool.name !== this.toolName) throw new Error(`expected tool ${this.toolName}, got ${req.tool.name}`);
    let inputTokens = 0;
    let outputTokens = 0;
    let attempts = 0;
    while (this.queue.length) {
      const r = this.queue.shift()!;
      attempts++;
      inputTokens += r.usage.inputTokens;
      outputTokens += r.usage.outputTokens;
      const parsed = req.tool.schema.safeParse(r.output);
      if (parsed.success) {
        return {
          output: parsed.data,
          usage: { modelId: "replay", tier: req.tier, inputTokens, outputTokens, costUsd: costUsd(req.tier, inputTokens, outputTokens), latencyMs: 0, attempts },
        };
      }
      this.rejected.push(parsed.error.issues.map((i) => i.message).join("; "));
    }
    throw new AppError("INTERNAL", "The AI model returned malformed output after all recorded answers");
  }
}
