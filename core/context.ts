import { AsyncLocalStorage } from "node:async_hooks";

/**
 * The request context (DESIGN.md 6.1): what one request has already resolved, so it is resolved once. The HTTP
 * middy stack and the stream handlers open a scope per request; inside it, `requireMember` (core/workspace)
 * answers a repeated check of the same user and workspace from the scope instead of DynamoDB, so the agent's tools
 * can call the ordinary core operations without re-checking membership on every call. Outside a scope (step
 * functions, the pending-action executor, tests calling core directly) every check goes to the table.
 */
export interface RequestScope {
  /** Membership items verified in this request, keyed `${userId}#${workspaceId}` (core/workspace owns the type). */
  memberships: Map<string, unknown>;
  /**
   * Reads this request made that a later step of it may reuse for a short, stated time, keyed by their owner: the
   * insights' search head and the user's memory head, read ahead with a copilot stream's membership check and used by
   * its pre-flight, first search and memory hook (core/insight/search.ts, core/memory/store.ts).
   */
  recent: Map<string, { at: number; value: unknown }>;
  /**
   * Aborts when the person the request serves is gone or its time budget is spent (a stream's client disconnected,
   * its 300 s ran out). Model calls and recorded runs started inside the scope stop on it (`currentSignal`).
   */
  signal?: AbortSignal;
}

const storage = new AsyncLocalStorage<RequestScope>();

/** Run `fn` inside a fresh request scope. */
export function withRequestScope<T>(fn: () => T): T {
  return storage.run({ memberships: new Map(), recent: new Map() }, fn);
}

/** The current request scope, or undefined outside one. */
export const requestScope = (): RequestScope | undefined => storage.getStore();

/**
 * Run `fn` outside any request scope. The embedded runtime's stand-ins for asynchronous AWS services (the SQS queues,
 * the Step Functions runners) start their work with this: in AWS that work is an invocation of its own, which sees
 * nothing of the request that caused it (its verified memberships, its kept reads, its abort signal), and neither
 * must it here, although Node would carry the request's context into every callback it schedules.
 */
export function outsideRequestScope<T>(fn: () => T): T {
  return storage.exit(fn);
}

/**
 * Run `fn` in a scope whose work stops on `signal` (DESIGN.md 6.1: the client's disconnect and the budget reach every
 * step): the memberships already verified carry over; every model call and recorded run inside reads the signal
 * through `currentSignal()`, so an operation need not pass it down by hand.
 */
export function withAbortSignal<T>(signal: AbortSignal, fn: () => T): T {
  const outer = storage.getStore();
  return storage.run({ memberships: outer?.memberships ?? new Map(), recent: outer?.recent ?? new Map(), signal }, fn);
}

/** The abort signal of the current scope (`withAbortSignal`), or undefined. */
export const currentSignal = (): AbortSignal | undefined => storage.getStore()?.signal;
