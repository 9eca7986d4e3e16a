import { isConditionalFailure } from "../db/errors";
import { randomUUID } from "node:crypto";
import { AppError } from "../error";
import { db } from "../db/service";
import type { CallUsage } from "../ai/ports";

export type AgentType = "synthesis" | "recommendation" | "drafting" | "chat" | "block_action" | "embedding";

/** Largest input/output summary kept on a run, in characters (items must stay well under 400 KB). */
const MAX_DATA_CHARS = 20_000;
const clip = (v: unknown) => {
  const s = JSON.stringify(v ?? null);
  return s.length <= MAX_DATA_CHARS ? v : { truncated: true, preview: s.slice(0, MAX_DATA_CHARS) };
};

/**
 * Run `work` as one recorded agent run (spec 02 Agent run): latency, tokens, cost and status are written whether
 * it succeeds or fails; a failure is re-thrown after recording. `work` reports model usage through `usage.add`.
 */
export async function recordRun<T>(
  opts: { workspaceId: string; agentType: AgentType; toolName: string; engine: string; input: unknown },
  work: (usage: { add(u: CallUsage): void }) => Promise<T>,
  summarize: (result: T) => unknown = (r) => r,
): Promise<T> {
  const started = Date.now();
  let tokens = 0;
  let cost = 0;
  let modelId: string | undefined;
  const usage = {
    add(u: CallUsage) {
      tokens += u.inputTokens + u.outputTokens;
      cost += u.costUsd;
      modelId = u.modelId;
    },
  };
  const write = (status: "success" | "failed", output: unknown, error?: string) =>
    db()
      .entities.agentRun.create({
        id: randomUUID(),
        workspace_id: opts.workspaceId,
        agent_type: opts.agentType,
        tool_name: opts.toolName,
        engine: opts.engine,
        model_id: modelId,
        input_data: clip(opts.input),
        output_data: clip(output),
        latency_ms: Date.now() - started,
        tokens_used: tokens,
        cost_usd: Math.round(cost * 1e6) / 1e6,
        status,
        ...(error ? { error_message: error.slice(0, 2000) } : {}),
      })
      .go();
  try {
    const result = await work(usage);
    await write("success", summarize(result));
    return result;
  } catch (err) {
    await write("failed", null, err instanceof Error ? err.message : String(err));
    throw err;
  }
}

/** Agent runs of a workspace, newest first. */
export async function runsOf(workspaceId: string, limit = 50) {
  const { data } = await db().entities.agentRun.query.byWorkspace({ workspace_id: workspaceId }).go({ order: "desc", limit });
  return data;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

/**
 * Try to take an exclusive lock named `name` in `scope` for `seconds`. The lock survives a crash only until it
 * expires: the condition treats an expired lock as free (DynamoDB's TTL deletes it later).
 * @returns a release function, or null when the lock is held.
 */
export async function tryLock(scope: string, name: string, seconds: number): Promise<(() => Promise<void>) | null> {
  const owner: string = randomUUID();
  try {
    await db()
      .entities.guard.put({ scope, name, owner, ttl: nowSeconds() + seconds })
      .where((attr, op) => `${op.notExists(attr.owner)} OR ${op.lt(attr.ttl, nowSeconds())}`)
      .go();
  } catch (err) {
    if (isConditionalFailure(err)) return null;
    throw err;
  }
  return async () => {
    try {
      await db().entities.guard.delete({ scope, name }).where((attr, op) => op.eq(attr.owner, owner)).go();
    } catch (err) {
      if (!isConditionalFailure(err)) throw err; // already expired and taken by someone else: nothing to release
    }
  };
}

/**
 * Take an exclusive lock (`tryLock`) or fail.
 * @returns a release function. @throws AppError with `code` when the lock is held.
 */
export async function acquireLock(scope: string, name: string, seconds: number, code: "SYNTHESIS_IN_PROGRESS", message: string) {
  const release = await tryLock(scope, name, seconds);
  if (!release) throw new AppError(code, message);
  return release;
}

/** The rate limiter lives in core/rate-limit; re-exported for the callers that knew it here. */
export { rateLimit } from "../rate-limit";
