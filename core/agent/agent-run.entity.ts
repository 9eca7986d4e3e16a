import { createConversions, Entity } from "electrodb";
import type { SlimIndex } from "../db/slim-index";
import { indexKeysOf, RUN_LIST_ATTRIBUTES, type IndexKeys } from "../db/table";

/** One AI call (spec 02 Agent run): what ran, how long, what it cost. Newest first by sort key. */
export const buildAgentRunEntity = () => new Entity({
  model: { entity: "agent_run", version: "1", service: "r2d" },
  attributes: {
    id: { type: "string", required: true },
    workspace_id: { type: "string", required: true },
    /** The member whose request (or approved pending action) started the run; absent on runs before billing. */
    user_id: { type: "string" },
    agent_type: { type: ["synthesis", "recommendation", "drafting", "chat", "block_action", "embedding"] as const, required: true },
    tool_name: { type: "string" },
    engine: { type: "string", required: true },
    model_id: { type: "string" },
    input_data: { type: "any" },
    output_data: { type: "any" },
    latency_ms: { type: "number", required: true },
    tokens_used: { type: "number", required: true, default: 0 },
    cost_usd: { type: "number", required: true, default: 0 },
    /** Credits the run was charged (spec 02 Credits; 0 for internal runs and runs before billing). */
    credits_charged: { type: "number", required: true, default: 0 },
    status: { type: ["success", "failed", "partial"] as const, required: true },
    error_message: { type: "string" },
    executed_at: { type: "string", required: true, default: () => new Date().toISOString() },
    /**
     * Research quality score of the run, 0 to 100 (issue #21; defined in docs/decisions.md "Research quality score"),
     * written by the harness's post-flight. Absent on runs the harness did not judge (embeddings, internal calls).
     */
    rqs: { type: "number" },
    /** Whether the run's output met its workflow's contract (post-flight `harness_contract`). */
    contract_passed: { type: "boolean" },
    /** Whether the independent verifier passed the run's output (`harness_verifier`). */
    verifier_passed: { type: "boolean" },
    /** The harness's findings: {workflow_type, contract: {score, issues}, verifier: {score, issues}, grounding, retries, degraded, mission_id, abandoned_repairs?, turn_budget_spent?}. */
    quality: { type: "any" },
  },
  indexes: {
    byWorkspace: {
      pk: { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" },
      sk: { field: "sk", composite: ["executed_at", "id"], template: "agentrun#${executed_at}#${id}", casing: "none" },
    },
    /**
     * gsi5, slim: the workspace's runs newest first by their key (`wsruns#<ws>` / `run#<executed_at>#<id>`), each entry
     * only `RUN_LIST_ATTRIBUTES` (core/db/table.ts): the admin list counts and filters, and its stats add up, without
     * reading the runs' inputs and outputs.
     */
    listed: {
      index: "gsi5",
      projection: RUN_LIST_ATTRIBUTES,
      pk: { field: "gsi5pk", composite: ["workspace_id"], template: "wsruns#${workspace_id}", casing: "none" },
      sk: { field: "gsi5sk", composite: ["executed_at", "id"], template: "run#${executed_at}#${id}", casing: "none" },
    },
  },
});
export type AgentRunEntity = ReturnType<typeof buildAgentRunEntity>;

let runConversions: ReturnType<typeof createConversions> | undefined;

/** The keys of a run's `listed` (gsi5) entry, built by ElectroDB from the index above, for the backfill of older runs. */
const runListKeysOf = (workspaceId: string, run: { executed_at: string; id: string }): IndexKeys<"gsi5"> =>
  indexKeysOf("gsi5", (runConversions ??= createConversions(buildAgentRunEntity() as never)).byAccessPattern.listed.fromComposite.toKeys({ workspace_id: workspaceId, ...run }));

/**
 * The agent runs' slim list for core/db/slim-index.ts: the partition's `agentrun#` items of entity `agent_run`, each
 * keyed as `listed` writes it; the backfill reads back what the admin list and stats use. The workspace's mark is the
 * raw item `ws#<ws>` / `runindex`.
 */
export const AGENT_RUN_LIST_INDEX: SlimIndex<"gsi5"> = {
  index: "gsi5",
  markSk: "runindex",
  skPrefix: "agentrun#",
  entity: "agent_run",
  attributes: ["id", "executed_at", "status", "agent_type", "tool_name", "cost_usd"],
  keysOf: (workspaceId, r) => {
    if (typeof r.id !== "string" || typeof r.executed_at !== "string") return undefined;
    return runListKeysOf(workspaceId, { executed_at: r.executed_at, id: r.id });
  },
};

/** Short-lived guard items: the per-workspace synthesis lock and fixed-window rate counters. Expire by TTL. */
export const buildGuardEntity = () => new Entity({
  model: { entity: "guard", version: "1", service: "r2d" },
  attributes: {
    scope: { type: "string", required: true },
    name: { type: "string", required: true },
    owner: { type: "string" },
    count: { type: "number" },
    /** Epoch seconds after which the guard no longer holds (also the DynamoDB TTL). */
    ttl: { type: "number", required: true },
  },
  indexes: {
    byName: {
      pk: { field: "pk", composite: ["scope"], template: "${scope}", casing: "none" },
      sk: { field: "sk", composite: ["name"], template: "guard#${name}", casing: "none" },
    },
  },
});
export type GuardEntity = ReturnType<typeof buildGuardEntity>;
