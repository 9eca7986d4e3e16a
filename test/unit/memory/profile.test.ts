/**
 * The profile's lists (core/memory profileOf) and search's "unavailable" answer when the embedder fails (rank), against
 * DynamoDB Local.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { MIN_RELEVANCE, PROFILE_DYNAMIC_DAYS, PROFILE_STATIC_MAX, profileOf, rank } from "../../../core/memory";
import { learnFromStatement } from "../../../core/memory/learn";
import type { FactItem } from "../../../core/memory/store";
import type { Embedder } from "../../../core/ai/ports";
import { hashEmbedder } from "../ai/helpers";

const day = 86_400_000;
const now = Date.parse("2025-06-30T12:00:00Z");
const fact = (content: string, kind: "static" | "dynamic", daysAgo: number): FactItem =>
  ({ id: randomUUID(), content, kind, valid_at: new Date(now - daysAgo * day).toISOString(), created_at: new Date(now - daysAgo * day).toISOString() }) as FactItem;

describe("profileOf", () => {
  it("lists static facts oldest first and recent dynamic facts newest first; stale dated context drops out", () => {
    const p = profileOf(
      [
        fact("We use Linear for issue tracking.", "static", 40),
        fact("We're focused on billing this sprint.", "dynamic", 2),
        fact("I'm the PM of Jupyter Notebook.", "static", 10),
        fact("Our churn is 5% this month.", "dynamic", 20),
        fact("We're in private beta.", "dynamic", PROFILE_DYNAMIC_DAYS + 1),
      ],
      now,
    );
    expect(p).toEqual({
      static_facts: ["We use Linear for issue tracking.", "I'm the PM of Jupyter Notebook."],
      dynamic_facts: ["We're focused on billing this sprint.", "Our churn is 5% this month."],
    });
  });

  it("keeps the newest static facts when there are more than fit, and lists a sentence once", () => {
    const many = Array.from({ length: PROFILE_STATIC_MAX + 5 }, (_, i) => fact(`Fact ${i}.`, "static", PROFILE_STATIC_MAX + 5 - i));
    const p = profileOf([...many, fact("Fact 104.", "static", 0)], now);
    expect(p.static_facts).toHaveLength(PROFILE_STATIC_MAX);
    expect(p.static_facts[0]).toBe("Fact 5.");
    expect(p.static_facts.at(-1)).toBe("Fact 104.");
  });
});

describe("rank", () => {
  it("ranks current facts by cosine above the minimum, and answers null (unavailable) when the embedder fails", async () => {
    const ws = randomUUID();
    const user = randomUUID();
    const emb = hashEmbedder(256);
    await learnFromStatement({ workspaceId: ws, userId: user, conversationId: randomUUID(), messageId: randomUUID(), text: "We use Mixpanel for product analytics. We are a team of 8 engineers.", at: new Date().toISOString() }, { model: null, embedder: emb });
    const ranked = await rank(user, [ws], "We use Mixpanel for product analytics", emb);
    expect(ranked!.hits[0]!.fact.content).toBe("We use Mixpanel for product analytics.");
    expect(ranked!.hits.every((h) => h.score >= MIN_RELEVANCE)).toBe(true);

    const broken: Embedder = { id: emb.id, dimensions: emb.dimensions, embed: async () => { throw new Error("model server down"); } };
    expect(await rank(user, [ws], "analytics", broken)).toBeNull();
    // An embedder of another id must embed the stored facts again: failing there is unavailable too.
    const other: Embedder = { id: "test:other", dimensions: 256, embed: async (texts) => (texts.length === 1 ? emb.embed(texts) : Promise.reject(new Error("down"))) };
    expect(await rank(user, [ws], "analytics", other)).toBeNull();
  });
});
