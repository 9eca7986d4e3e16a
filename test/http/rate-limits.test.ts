/**
 * Per-user rate limits (issue #10 point 11): recommendation generation, document drafts, insight search, intent
 * parsing and access-code redemption answer 429 RATE_LIMITED with `Retry-After` once a user's window is used up;
 * synthesis's 429 (spec 01 Limits: 10 a minute) carries `Retry-After` too. Limits are per user and per action.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { call, newUser, newWorkspace, type ApiResponse } from "../support/api";
import { expectEnvelope, headersOf, withEnv } from "./_helpers";

type Attempt = (token: string) => Promise<ApiResponse>;

/**
 * Make `max` attempts as one fresh user, then one more, and check that only the last is a 429 with a `Retry-After`
 * within the window. Windows are fixed (aligned to the epoch): if one turns over mid-run, start again with a new user.
 * @returns the limited user's token
 */
async function expectLimitedAfter(max: number, windowSeconds: number, attempt: Attempt, user: () => Promise<{ token: string }> = newUser) {
  const windowNow = () => Math.floor(Date.now() / 1000 / windowSeconds);
  for (;;) {
    const { token } = await user();
    const window = windowNow();
    const allowed: ApiResponse[] = [];
    for (let i = 0; i < max; i++) allowed.push(await attempt(token));
    const over = await attempt(token);
    if (windowNow() !== window) continue;
    for (const res of allowed) expect(res.status, res.text).not.toBe(429);
    expectEnvelope(over, 429, "RATE_LIMITED");
    const retryAfter = headersOf(over)["retry-after"];
    expect(retryAfter, "429 without Retry-After").toMatch(/^\d+$/);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(retryAfter)).toBeLessThanOrEqual(windowSeconds);
    expect(over.body.retry_after_seconds).toBe(Number(retryAfter));
    // Another user is not limited by it.
    expect((await attempt((await user()).token)).status).not.toBe(429);
    return token;
  }
}

const generate: Attempt = (token) =>
  call("POST", "/api/recommendations/generate", { token, body: { workspace_id: randomUUID(), insight_ids: [randomUUID()] } });
const draft: Attempt = (token) => call("POST", "/api/documents/draft", { token, body: { workspace_id: randomUUID(), document_type: "prd" } });
const search: Attempt = (token) => call("POST", "/api/insights/search", { token, body: { workspace_id: randomUUID(), query: "onboarding" } });
const intent: Attempt = (token) => call("POST", "/api/intent/parse", { token, body: { raw_input: "Users drop off at sign-up; add social login." } });
const redeem: Attempt = (token) => call("POST", "/api/auth/redeem-code", { token, body: { code: `WRONG${randomUUID().slice(0, 6).toUpperCase()}` } });
/** A user still waiting for product access (the one who redeems codes). */
const pendingUser = () => withEnv({ ACCESS_GATING: "true" }, () => newUser());

describe("per-user limits, as configured", () => {
  it("POST /api/recommendations/generate", async () => {
    await withEnv({ RATE_LIMIT_RECOMMENDATIONS_GENERATE: "3/3600" }, () => expectLimitedAfter(3, 3600, generate));
  });

  it("POST /api/documents/draft", async () => {
    await withEnv({ RATE_LIMIT_DOCUMENTS_DRAFT: "3/3600" }, () => expectLimitedAfter(3, 3600, draft));
  });

  it("POST /api/insights/search", async () => {
    await withEnv({ RATE_LIMIT_INSIGHTS_SEARCH: "4/3600" }, () => expectLimitedAfter(4, 3600, search));
  });

  it("POST /api/intent/parse", async () => {
    await withEnv({ RATE_LIMIT_INTENT_PARSE: "4/3600" }, () => expectLimitedAfter(4, 3600, intent));
  });

  it("POST /api/auth/redeem-code counts wrong codes", async () => {
    await withEnv({ RATE_LIMIT_ACCESS_CODE_REDEEM: "3/3600" }, () => expectLimitedAfter(3, 3600, redeem, pendingUser));
  });

  it("each action has its own budget: a user limited on generation can still search and draft", async () => {
    await withEnv({ RATE_LIMIT_RECOMMENDATIONS_GENERATE: "1/3600" }, async () => {
      const token = await expectLimitedAfter(1, 3600, generate);
      expect((await search(token)).status).not.toBe(429);
      expect((await draft(token)).status).not.toBe(429);
    });
  });
});

describe("defaults", () => {
  it("30 wrong access codes in a row from one user end in 429 long before the 30th", async () => {
    const { token } = await pendingUser();
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) statuses.push((await redeem(token)).status);
    // A few typos are fine; then every further attempt is refused.
    expect(statuses.slice(0, 3)).toEqual([400, 400, 400]);
    const firstLimited = statuses.indexOf(429);
    expect(firstLimited).toBeGreaterThan(0);
    expect(firstLimited).toBeLessThan(15);
    expect(statuses.slice(firstLimited).every((s) => s === 429)).toBe(true);
  });

  it("synthesis: the 11th request in a minute is 429 with Retry-After", async () => {
    const windowNow = () => Math.floor(Date.now() / 60_000);
    for (;;) {
      const { owner, workspace } = await newWorkspace("Rate limited synthesis");
      const window = windowNow();
      const results: ApiResponse[] = [];
      for (let i = 0; i < 11; i++) {
        results.push(await call("POST", "/api/research/synthesize", { token: owner.token, body: { workspace_id: workspace.id, source_ids: [randomUUID()] } }));
      }
      if (windowNow() !== window) continue;
      const over = results.at(-1)!;
      expectEnvelope(over, 429, "RATE_LIMITED");
      expect(headersOf(over)["retry-after"]).toMatch(/^\d+$/);
      expect(Number(headersOf(over)["retry-after"])).toBeLessThanOrEqual(60);
      break;
    }
  });
});
