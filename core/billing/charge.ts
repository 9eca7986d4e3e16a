/**
 * Charging an AI run (spec 02 Credits; DESIGN.md 6.3): every AI operation reserves its estimated maximum from the
 * workspace owner's account before it starts and settles to what it cost when it ends. `recordRun`
 * (core/agent/index.ts) does both around every recorded run; the copilot's streams reserve in their pre-flight, so
 * a blocked account is refused (402) before the stream opens and before any model call.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { Config } from "../config";
import { crashPointReached } from "../crash-point";
import { db } from "../db/service";
import { Errors } from "../error";
import { costUsd, type ModelTier } from "../ai/ports";
import { creditsFor, type RunOutcome } from "./credits";
import { accountOf, grant, lastSeenEntitlement, lastSeenPlan, milestoneSource, release, reserve, settle, TRIAL_MILESTONE_CREDITS, type BillingAccount, type Closing, type LedgerItem } from "./ledger";
import { consistentGet } from "../db/read";
import type { Plan } from "./plans";
import type { Entitlement } from "./entitlement";

/** The copilot's effort levels (spec 02 Streaming `effort`). */
export type Effort = "low" | "medium" | "high" | "max";

/**
 * Token envelope of one typical run per effort (input and output tokens, thinking included), the one table both
 * `GET /api/billing/estimate` and a run's reservation price. Figures from the copilot's shape: a system prompt with
 * workspace context plus tool results (~10k tokens a turn), a few turns per effort; `max` adds the 16k thinking budget
 * of `modelChoice`. A run's reservation (its estimated maximum, DESIGN.md 6.3) is twice the envelope: the figure the
 * estimate calls `creditRangeHigh`, so an estimate that says `blocked` means a run would be refused, and the reverse.
 */
export const EFFORT_ENVELOPE: Record<Effort, { input: number; output: number }> = {
  low: { input: 15_000, output: 1_500 },
  medium: { input: 40_000, output: 4_000 },
  high: { input: 80_000, output: 8_000 },
  max: { input: 150_000, output: 20_000 },
};

/** The model tier an effort runs on (the copilot's `modelChoice` takes the higher of this and `reasoning_mode`'s). */
export const EFFORT_TIER: Record<Effort, ModelTier> = { low: "small", medium: "mid", high: "large", max: "large" };

/** The effort a run on `tier` is priced at when it names none: the effort that runs on that tier (`max` aside). */
export const effortOfTier = (tier: ModelTier): Effort => (Object.keys(EFFORT_TIER) as Effort[]).find((e) => e !== "max" && EFFORT_TIER[e] === tier)!;

/** The effort whose envelope a run reserves: `max` when it thinks (extended thinking), else the one it asked for, else its tier's. */
const reservedEffort = (tier: ModelTier, thinking: boolean, effort?: Effort): Effort => (thinking ? "max" : (effort ?? effortOfTier(tier)));

/** How far above the typical envelope a run's reservation reaches (and the estimate's `creditRangeHigh`). */
export const RESERVATION_FACTOR = 2;

/**
 * Credits of `effort`'s envelope scaled by `factor`, priced at `tier`'s rates as a success (`creditsFor`): the
 * estimate's three figures are factors 0.5, 1 and `RESERVATION_FACTOR`; a run's reservation is the last.
 * @param opts.chatMessage a copilot message (charged at least 0.25)
 */
export function envelopeCredits(tier: ModelTier, effort: Effort, factor: number, opts: { chatMessage?: boolean } = {}): number {
  const env = EFFORT_ENVELOPE[effort];
  return creditsFor(costUsd(tier, env.input * factor, env.output * factor), "success", opts);
}

/** Most trial credits an account can earn from milestones (spec 02 Limits: Plans, "milestone-based, up to 25"). */
export const TRIAL_CREDIT_CAP = 25;

/** The engines that cost nothing in USD (the embedded runtime's local engine): only the minimum charges apply. */
const FREE_ENGINES = new Set(["local"]);

/** Whether a run on `engine` costs nothing in USD, so it reserves and is charged only its minimum (`reservationFor`). */
export const isFreeEngine = (engine: string): boolean => FREE_ENGINES.has(engine);

/**
 * What a run reserves, in credits: on a free engine its largest minimum charge (success: 0.5; a chat message at
 * least 0.25), on a model engine `RESERVATION_FACTOR` times the envelope of the run's effort (`max`'s when the run
 * thinks; without one, the effort of its tier), priced at the tier's rates — the estimate's `creditRangeHigh` for
 * that effort and model.
 * @param engine the engine's name as recorded on the agent run (`local`, `bedrock`, `openai-compatible`, ...)
 * @param tier the model tier the run uses (default mid)
 * @param opts.thinking the run uses extended thinking (effort max or reasoning_mode deep)
 * @param opts.effort the effort the run asked for (a copilot message's `effort`), when it named one
 */
export function reservationFor(engine: string, tier: ModelTier = "mid", opts: { chatMessage?: boolean; thinking?: boolean; effort?: Effort } = {}): number {
  const message = { chatMessage: opts.chatMessage };
  if (isFreeEngine(engine)) return creditsFor(0, "success", message);
  return envelopeCredits(tier, reservedEffort(tier, opts.thinking ?? false, opts.effort), RESERVATION_FACTOR, message);
}

/** Owners of workspaces this process has looked up: a workspace's owner is set at creation and never changes. */
const owners = new Map<string, string>();
/** Bound on the cache: past it, it starts again (a container serves far fewer workspaces). */
const MAX_OWNERS = 10_000;

/**
 * The owner of a workspace: the account its AI runs are charged to. Cached per process (the owner never changes; a
 * deleted workspace's runs fail on their own reads first).
 * @throws AppError NOT_FOUND when the workspace is gone.
 */
export async function payerOf(workspaceId: string): Promise<string> {
  const cached = owners.get(workspaceId);
  if (cached) return cached;
  const { data } = await db().entities.workspace.get({ id: workspaceId }).go();
  if (!data) throw Errors.notFound("Workspace");
  if (owners.size >= MAX_OWNERS) owners.clear();
  owners.set(workspaceId, data.owner_id);
  return data.owner_id;
}

/** A run's charge: credits held before the work, settled once after it. */
export interface Charge {
  readonly payer: string;
  readonly runId: string;
  readonly workspaceId: string;
  /** Credits held by the reservation. */
  readonly held: number;
  /** The payer's plan as the reservation saw it (`lastSeenPlan`). */
  readonly plan?: Plan;
  /** The plan in effect and its limits as the reservation saw them (`lastSeenEntitlement`). */
  readonly entitlement?: Entitlement;
  /** Milliseconds `startCharge` took (finding the payer and reserving). */
  readonly reserveMs: number;
  /**
   * Milliseconds the reservation kept the request waiting: `reserveMs`, or less when it ran beside the operation's own
   * reads (`reserveAlongside`).
   */
  waitMs: number;
  readonly chatMessage: boolean;
  /** Credits charged by the settlement; null until settled (or after a release). */
  charged: number | null;
  /**
   * Settle once: charge `creditsFor(costUsd, outcome)` and give the rest back (ledger `settle`); the compute counters
   * get the run's tokens and cost. A second call returns the first figure; after a failed call, the next one tries again.
   */
  settle(outcome: RunOutcome, usage: { tokens: number; costUsd: number }): Promise<number>;
  /**
   * Give the held credits back if the run never settled (a stream that never ran). An approved action's run that
   * carries earlier attempts' use (`carried`) settles that use as a failure instead: it was spent, and this is the
   * run's one settlement.
   */
  release(): Promise<void>;
  /**
   * Whether the run, stopping on `err` before it settled, must leave its hold open: it is an approved action's run
   * (`withDelivery`) and the executor will run the action again after `err` (`Delivery.retriedAfter`). The retry runs
   * under the same run id, for which the ledger reserves once, so this hold is the one its settle (or the credit
   * sweeper's, once the action ends) closes. False for every other run: it releases or settles at once.
   */
  keepsHoldAfter(err: unknown): Promise<boolean>;
  /**
   * Model use of the run's earlier attempts that failed and kept the hold for this one (`Delivery.carried`; zero for
   * every other run): `recordRun` counts from it, so the settle and the record cover the whole run.
   */
  readonly carried: { tokens: number; costUsd: number };
  /**
   * Add one model call's use to the run's (`recordRun` reports each call as it happens), so `owed` can price the run
   * before it settles. `tokens` input plus output, `costUsd` in USD, `modelId` the model that answered.
   * @returns resolves once the run's use so far is kept where the action's next attempt finds it (an approved
   *   action's run: the row's `spent`, `Delivery.keepUse`), so an attempt that dies after this call still has its use
   *   charged; at once, with no write, for every other run (the copilot's streams among them). Never rejects.
   */
  noteUsage(u: { tokens: number; costUsd: number; modelId?: string }): Promise<void>;
  /**
   * Describe the run for its agent-run record (`recordRun` calls it before the work): from then on `owed` carries
   * what that record needs (`OwedCharge.run`), so whoever settles a recorded charge can write the record too.
   * @param run.started_at when the run started (epoch ms), for its latency
   */
  describeRun(run: Omit<OwedRun, "executed_at" | "latency_ms" | "model_id"> & { started_at: number }): void;
  /**
   * The time (ISO 8601) the run's agent-run record is keyed at, fixed by the first `owed` of a described run (the
   * charge recorded with its work): the run's own record and one the credit sweeper writes for it are then the same
   * item, so whichever is written first stands. Undefined until then: the run records its end time.
   */
  readonly recordAt: string | undefined;
  /**
   * What settling now as `outcome` would charge: `creditsFor` of the use noted so far (the figure `settle` charges for
   * the same use and outcome), with that use. Null once a settlement has started: the ledger has the run's charge.
   */
  owed(outcome: RunOutcome): OwedCharge | null;
}

/**
 * What a run's agent-run record needs beyond its charge (spec 02 Agent run), recorded with the charge so that the
 * credit sweeper, settling a run that died before its own settle, can write the record the run would have.
 */
export interface OwedRun {
  /** The record's time (ISO 8601), part of its key (`Charge.recordAt`). */
  executed_at: string;
  /** The member who asked for the run (an approved action's approver), the record's `user_id`. */
  requested_by: string;
  /** The agent type (core/agent `AgentType`), tool and engine names, as `recordRun` records them. */
  agent_type: string;
  tool_name: string;
  engine: string;
  /** The model of the run's last call, when it called one. */
  model_id?: string;
  /** Milliseconds from the run's start to the recording of its charge. */
  latency_ms: number;
}

/**
 * What a run owes, recorded where its work is stored before the run settles (an approved pending action's flip to
 * executed, the row's `charge`): who pays, which run, and what `settle` is to charge it.
 */
export interface OwedCharge {
  /** The payer's account (the workspace owner's user id). */
  user_id: string;
  run_id: string;
  /** Credits to charge (`creditsFor(cost_usd, outcome)`, a multiple of 0.25). */
  credits: number;
  /** Model tokens of the run (input plus output) and its cost in USD, for the compute counters. */
  tokens: number;
  cost_usd: number;
  /** What the run's record needs, when `recordRun` described the run (absent on charges recorded before it did). */
  run?: OwedRun;
}

/**
 * The execution of an approved pending action (core/pending-action/executor.ts) as charging sees it: the run that does
 * the action's work (its id derived from the action, `runIdFor`) reserves with the action named on its hold, and
 * leaves its charge here, so the executor can record what the run owes in the action's flip to executed.
 */
export interface Delivery {
  readonly workspaceId: string;
  readonly actionId: string;
  /** The id of the run doing the action's work (`idFor(actionId, "agent-run")`). */
  readonly runId: string;
  /** That run's charge, once it reserved (set by `startCharge`). */
  charge?: Charge;
  /**
   * Whether the executor will run the action again after the run fails with `err` (a transient failure with retries
   * left), or the action is no longer this execution's (its lease lost to another executor of the same run, which
   * shares the hold): the run then neither releases nor settles its hold.
   * Absent: never (the run settles or releases at once).
   */
  retriedAfter?: (err: unknown) => Promise<boolean>;
  /**
   * Model use of earlier attempts of this run that failed and left the hold for a retry (the row's `spent`): the
   * run's charge starts from it, so the one settle charges the run's whole use, not only the last attempt's.
   */
  carried?: { tokens: number; cost_usd: number };
  /**
   * Write the run's use so far (`carried` included; tokens input plus output, USD) on the action's row as its
   * `spent`, while this execution still holds the row: called as each model call's use is noted, so an attempt that
   * dies before its deferral is written (a crash, a timeout) leaves its use for the next attempt's charge. Never
   * rejects (a lost lease or a failed write leaves the row's figure as it was). Absent: nothing is written.
   */
  keepUse?: (spent: { tokens: number; cost_usd: number }) => Promise<void>;
}

const deliveries = new AsyncLocalStorage<Delivery>();

/**
 * Run `fn` (a gated tool's execution) as `delivery`: a run started inside it under `delivery.runId` reserves with the
 * action named on its hold and registers its charge on `delivery` (read it with `owedBy`).
 */
export function withDelivery<T>(delivery: Delivery, fn: () => Promise<T>): Promise<T> {
  return deliveries.run(delivery, fn);
}

/**
 * What the delivery's run owes if it succeeds (`Charge.owed("success")`): an action flipped to executed delivered its
 * work. Undefined when no run of it reserved, or its settlement has started (it is the ledger's then).
 */
export function owedBy(delivery: Delivery): OwedCharge | undefined {
  return delivery.charge?.owed("success") ?? undefined;
}

/**
 * Reserve for a run before it starts (DESIGN.md 6.3). Refuses a run the account cannot carry, before any work:
 * the compute budget used up (402 `reason: compute_budget`) or too few spendable credits for the reservation (402
 * `reason: credits_exhausted`, with `required` and `available`).
 * @param input.runId the run's id: one reservation and one settlement per run (a replayed pending action derives it)
 * @param input.engine the engine that will run (free engines reserve the minimum charge)
 * @param input.effort the effort the run asked for (`reservationFor`); input.tier its model's tier
 * @throws AppError USAGE_LIMIT_EXCEEDED (402), NOT_FOUND (workspace gone), SERVICE_UNAVAILABLE (account contended).
 */
export async function startCharge(input: { workspaceId: string; runId: string; engine: string; tier?: ModelTier; thinking?: boolean; effort?: Effort; chatMessage?: boolean; payer?: string }): Promise<Charge> {
  const started = performance.now();
  const payer = input.payer ?? (await payerOf(input.workspaceId));
  const chatMessage = input.chatMessage ?? false;
  const held = reservationFor(input.engine, input.tier, { chatMessage, thinking: input.thinking, effort: input.effort });
  // The run of an approved action being executed: its hold names the action, whose flip records what the run owes.
  const delivery = deliveries.getStore();
  const forAction = delivery?.runId === input.runId ? delivery : undefined;
  const action = forAction ? { workspaceId: forAction.workspaceId, actionId: forAction.actionId } : undefined;
  const reservation = await reserve(payer, input.runId, held, { computeBudget: true, ...(action ? { action } : {}) });
  let settling: Promise<Closing> | null = null;
  // An action's retry starts from what its failed attempts used: the run settles once, for all of it.
  const carried = { tokens: forAction?.carried?.tokens ?? 0, costUsd: forAction?.carried?.cost_usd ?? 0 };
  const used: { tokens: number; costUsd: number; modelId?: string } = { ...carried };
  let described: (Omit<OwedRun, "executed_at" | "latency_ms" | "model_id"> & { started_at: number }) | undefined;
  // The action's row is written one use at a time, in order: a later (larger) figure never lands before an earlier one.
  let keeping: Promise<void> = Promise.resolve();
  let recordAt: string | undefined;
  const charge: Charge = {
    payer,
    runId: input.runId,
    workspaceId: input.workspaceId,
    held,
    plan: lastSeenPlan(payer),
    entitlement: lastSeenEntitlement(payer),
    reserveMs: performance.now() - started,
    waitMs: performance.now() - started,
    chatMessage,
    charged: null,
    carried,
    async settle(outcome, usage) {
      // Crash tests stop a run here: its work (an approved action's flip with it) is stored, its charge is not yet.
      await crashPointReached("before-settle");
      // One settlement; a failed one is forgotten, so the next call tries again (the ledger settles a run once).
      settling ??= settle(payer, input.runId, creditsFor(usage.costUsd, outcome, { chatMessage }), { tokens: usage.tokens, costUsd: usage.costUsd }, reservation).catch((err: unknown) => {
        settling = null;
        throw err;
      });
      const closing = await settling;
      charge.charged = closing.charged;
      return closing.charged;
    },
    async release() {
      if (settling) return;
      // Earlier attempts of this action's run used the model and kept the hold for this one: that use is charged, as
      // a failure, by the run's one settlement, not given back.
      if (carried.tokens > 0 || carried.costUsd > 0) {
        await charge.settle("failed", { tokens: used.tokens, costUsd: used.costUsd });
        return;
      }
      await release(payer, input.runId);
    },
    async keepsHoldAfter(err) {
      return (await forAction?.retriedAfter?.(err)) ?? false;
    },
    noteUsage(u) {
      used.tokens += u.tokens;
      used.costUsd += u.costUsd;
      if (u.modelId) used.modelId = u.modelId;
      // Only an action's run that has not settled: its use is then the run's own, owed by its one settle.
      const keepUse = forAction?.keepUse;
      if (!keepUse || settling || charge.charged !== null) return keeping;
      const spent = { tokens: used.tokens, cost_usd: used.costUsd };
      keeping = keeping.then(() => keepUse(spent)).catch(() => undefined);
      return keeping;
    },
    describeRun(run) {
      described = run;
    },
    get recordAt() {
      return recordAt;
    },
    owed(outcome) {
      if (settling || charge.charged !== null) return null;
      const owed: OwedCharge = { user_id: payer, run_id: input.runId, credits: creditsFor(used.costUsd, outcome, { chatMessage }), tokens: used.tokens, cost_usd: used.costUsd };
      if (!described) return owed;
      // Fixed once: a flip retried within the run, the run's own record and the sweeper's all name the same record.
      recordAt ??= new Date().toISOString();
      const { started_at, ...run } = described;
      return { ...owed, run: { ...run, executed_at: recordAt, latency_ms: Math.max(0, Date.now() - started_at), ...(used.modelId ? { model_id: used.modelId } : {}) } };
    },
  };
  if (forAction) forAction.charge = charge;
  return charge;
}

/**
 * Trial milestones this container has seen granted (`<payer>#<milestone source>`): a ledger grant is never taken back,
 * so a run need not read it again. Bounded: past MAX_GRANTED it starts again (reads come back, nothing else changes).
 */
const grantedMilestones = new Set<string>();
const MAX_GRANTED = 10_000;
/** A grant's key in `grantedMilestones`, with its table: a process that changes tables (tests) starts afresh. */
const grantedKey = (payer: string, source: string) => `${Config.tableName()}#${payer}#${source}`;
function knowGranted(payer: string, source: string): void {
  if (grantedMilestones.size >= MAX_GRANTED) grantedMilestones.clear();
  grantedMilestones.add(grantedKey(payer, source));
}

/**
 * Grant the trial milestones a finished run earns (spec 02 Trial milestones: first_run at the first successful agent
 * run, engagement at 3 or more agent runs; 5.0 credits each, once per workspace), while the payer is on the trial and
 * under `TRIAL_CREDIT_CAP`. Keyed `milestone#<name>#<workspace id>` in the payer's ledger (signup is the account's
 * own, granted when it is created), so concurrent runs grant once. A grant this container has seen is not read again
 * (`grantedMilestones`): once both are granted, a run reads nothing here.
 * @param countRuns the workspace's agent runs so far (embedding runs left out), read only when engagement is open
 * @param knownPlan the payer's plan as the run's reservation saw it, if it did
 * @returns the milestones this call granted: the ledger's condition grants each once, so of two runs settling at the
 *   same time only the one whose grant committed gets the milestone back (and announces it, spec 02 `milestone_unlocked`).
 */
export async function grantMilestones(payer: string, workspaceId: string, succeeded: boolean, countRuns: () => Promise<number>, knownPlan?: Plan): Promise<Milestone[]> {
  // The reservation saw the plan: a paid account costs no read here, on every run's path.
  if (knownPlan && knownPlan !== "trial") return [];
  const keys = { first_run: milestoneSource("first_run", workspaceId), engagement: milestoneSource("engagement", workspaceId) };
  const known = { first_run: grantedMilestones.has(grantedKey(payer, keys.first_run)), engagement: grantedMilestones.has(grantedKey(payer, keys.engagement)) };
  // What this container saw granted needs no read: both, nothing is left; first_run alone, engagement waits for 3 runs.
  if (known.first_run && known.engagement) return [];
  let runs: number | undefined;
  if (known.first_run && (runs = await countRuns()) < 3) return [];
  // The account (its plan now) and both milestones' grants in one round trip.
  const e = db().entities;
  const [stored, first, engaged] = (await consistentGet([
    { entity: e.billingAccount, key: { user_id: payer } },
    { entity: e.creditLedger, key: { user_id: payer, key: `grant#${keys.first_run}` } },
    { entity: e.creditLedger, key: { user_id: payer, key: `grant#${keys.engagement}` } },
  ])) as [BillingAccount | null, LedgerItem | null, LedgerItem | null];
  if (first) knowGranted(payer, keys.first_run);
  if (engaged) knowGranted(payer, keys.engagement);
  const account = stored ?? (await accountOf(payer));
  if (account.plan !== "trial") return [];
  // The cap is a condition of each grant's transaction (`cap`), so concurrent runs of several workspaces cannot pass it.
  const give = async (source: string) => {
    const result = await grant(payer, { source, credits: TRIAL_MILESTONE_CREDITS, bucket: "trial", cap: TRIAL_CREDIT_CAP });
    // Granted now, or by a run that settled at the same time: either way it is there for good.
    if (result.applied || result.reason === "already_applied") knowGranted(payer, source);
    return result.applied;
  };
  const granted: Milestone[] = [];
  if (succeeded && !first && (await give(keys.first_run))) granted.push("first_run");
  if (!engaged && (runs ?? (await countRuns())) >= 3 && (await give(keys.engagement))) granted.push("engagement");
  return granted;
}

/** A trial milestone a workspace earns once (spec 02 Trial milestones). */
export type Milestone = "first_run" | "engagement";

/**
 * Reserve for a run while the operation reads what the run needs (its block's context, the insights), instead of
 * before: the request waits only for whichever takes longer. The reads must not write. When they fail, the
 * reservation (if it was made) is released and their error is thrown, except an approved action's reservation when the
 * executor will retry the action after that error (`Charge.keepsHoldAfter`): the retry settles against it, or the
 * credit sweeper releases it once the action has failed or is gone. When the reservation fails (402), nothing runs.
 * @param input as for `startCharge`
 * @param reads the operation's reads, started at once
 * @returns their value and the charge, whose `waitMs` is how long the request waited for the reservation after them
 * @throws whatever `reads` throws first; else as `startCharge`.
 */
export async function reserveAlongside<T>(input: Parameters<typeof startCharge>[0], reads: () => Promise<T>): Promise<{ value: T; charge: Charge }> {
  const charging = startCharge(input);
  // Awaited only after the reads: a refusal (402) that lands while they are still running must not count as an
  // unhandled rejection in between (Node would end the process).
  charging.catch(() => undefined);
  let value: T;
  try {
    value = await reads();
  } catch (err) {
    // An approved action's run that will be retried keeps its hold: it is the retry's only one (`keepsHoldAfter`).
    await charging.then(async (c) => ((await c.keepsHoldAfter(err)) ? undefined : c.release()), () => undefined);
    throw err;
  }
  const readsDone = performance.now();
  const charge = await charging;
  charge.waitMs = performance.now() - readsDone;
  return { value, charge };
}
