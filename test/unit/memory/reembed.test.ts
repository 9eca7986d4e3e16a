/**
 * Re-embedding a user's memory on load (core/memory/store.ts `loadMemory`), against DynamoDB Local: after an embedder
 * change or with vectors missing, every stale fact is embedded and its vector stored by a patch. The patches are
 * bounded in concurrency (thousands at once would be throttled by the table), and a patch that fails does not fail the
 * load: the vectors are in memory for it, and a later load stores them.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { dynamoClient } from "../../../core/db/client";
import { db } from "../../../core/db/service";
import { REEMBED_PATCH_CONCURRENCY, allFacts, forgetCached, loadMemory } from "../../../core/memory/store";
import { storeFails } from "../../support/store-faults";
import { hashEmbedder } from "../ai/helpers";

/** A user's memory of `count` current facts, stored without vectors (as written before embeddings, or by a failed embed). */
async function factsWithoutVectors(count: number): Promise<{ ws: string; user: string }> {
  const ws = randomUUID();
  const user = randomUUID();
  const at = Date.now();
  for (let i = 0; i < count; i++) {
    await db()
      .entities.memoryFact.put({
        id: randomUUID(),
        workspace_id: ws,
        user_id: user,
        content: `We track metric number ${i} weekly.`,
        kind: "static",
        subject: `metric ${i}`,
        value: "weekly",
        multi: false,
        source_conversation_id: randomUUID(),
        source_message_id: randomUUID(),
        extractor: "rules",
        valid_at: new Date(at + i).toISOString(),
        created_at: new Date(at + i).toISOString(),
      })
      .go();
  }
  await db().entities.memoryHead.put({ workspace_id: ws, user_id: user, version: 1 }).go();
  return { ws, user };
}

/** Count the user's UpdateItem calls in flight at once (each held a moment, so unbounded ones would overlap). */
function countPatchesInFlight(user: string): { max: () => number; remove: () => void } {
  const name = `patchesInFlight-${Math.random()}`;
  let inFlight = 0;
  let max = 0;
  dynamoClient().middlewareStack.add(
    (next, context) => async (args) => {
      if (!/^UpdateItem/.test(context.commandName ?? "") || !JSON.stringify(args.input).includes(`memory#${user}#`)) return next(args);
      inFlight++;
      max = Math.max(max, inFlight);
      try {
        await new Promise((r) => setTimeout(r, 10));
        return await next(args);
      } finally {
        inFlight--;
      }
    },
    { step: "initialize", name },
  );
  return { max: () => max, remove: () => dynamoClient().middlewareStack.remove(name) };
}

describe("loadMemory re-embedding stale facts", () => {
  it("answers every fact with its vector when some vector patches fail, and a later load stores the rest", async () => {
    const { ws, user } = await factsWithoutVectors(12);
    const emb = hashEmbedder(64);
    const fault = storeFails(/^UpdateItem/, `memory#${user}#`, 3);
    try {
      const loaded = await loadMemory(ws, user, emb);
      expect(fault.failed()).toBe(3);
      expect(loaded.current).toHaveLength(12);
      expect(loaded.facts).toHaveLength(12);
      expect(loaded.current.every((f) => f.vector && f.embedder_id === emb.id)).toBe(true);
      expect(loaded.matrix?.rows).toBe(12);
    } finally {
      fault.remove();
    }
    // The three failed patches left their facts without a stored vector ...
    expect((await allFacts(ws, user)).filter((f) => !f.vector)).toHaveLength(3);
    // ... which the next load that reads the facts (another container, or after a memory change) embeds and stores.
    forgetCached(ws, user);
    const again = await loadMemory(ws, user, emb);
    expect(emb.calls.at(-1)).toHaveLength(3);
    expect(again.current).toHaveLength(12);
    expect((await allFacts(ws, user)).every((f) => f.vector && f.embedder_id === emb.id)).toBe(true);
  });

  it(`stores re-embedded vectors at most ${REEMBED_PATCH_CONCURRENCY} patches at a time`, async () => {
    const count = 5 * REEMBED_PATCH_CONCURRENCY;
    const { ws, user } = await factsWithoutVectors(count);
    const emb = hashEmbedder(64);
    const counter = countPatchesInFlight(user);
    try {
      const loaded = await loadMemory(ws, user, emb);
      expect(loaded.matrix?.rows).toBe(count);
    } finally {
      counter.remove();
    }
    expect(counter.max()).toBeGreaterThan(1);
    expect(counter.max()).toBeLessThanOrEqual(REEMBED_PATCH_CONCURRENCY);
    expect((await allFacts(ws, user)).every((f) => f.embedder_id === emb.id)).toBe(true);
  });
});
