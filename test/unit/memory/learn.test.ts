/**
 * Learning from statements (core/memory/learn.ts) against DynamoDB Local, with the local embedder (Universal Sentence
 * Encoder): what each reconciliation outcome writes, and the model engine's extraction through the Bedrock adapter
 * over a stand-in Converse answer (aws-sdk-client-mock), reconciled by the same rules.
 */
import { randomUUID } from "node:crypto";
import { BedrockRuntimeClient, ConverseCommand } from "@aws-sdk/client-bedrock-runtime";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { BedrockModel } from "../../../core/ai/bedrock";
import { learnFromStatement, type Statement } from "../../../core/memory/learn";
import { allFacts, forgetCached, headVersion, loadMemory } from "../../../core/memory/store";
import { embedder } from "../../../core/ai/select";

let clock = Date.parse("2025-03-03T09:00:00Z");
const scope = () => ({ workspaceId: randomUUID(), userId: randomUUID(), conversationId: randomUUID() });
type Scope = ReturnType<typeof scope>;
const statement = (s: Scope, text: string, messageId = randomUUID()): Statement => ({ ...s, messageId, text, at: new Date((clock += 60_000)).toISOString() });
const say = (s: Scope, text: string, opts = {}) => learnFromStatement(statement(s, text), { model: null, ...opts });
const byContent = async (s: Scope) => new Map((await allFacts(s.workspaceId, s.userId)).map((f) => [f.content, f]));

describe("learnFromStatement with the local rules", () => {
  it("stores a fact with its source message, time and vector; a restatement stores nothing", async () => {
    const s = scope();
    const said = statement(s, "Hi, I'm the PM of Jupyter Notebook. We use Mixpanel for product analytics.");
    const first = await learnFromStatement(said, { model: null });
    expect(first.extractor).toBe("rules");
    expect(first.facts.map((f) => [f.content, f.action])).toEqual([
      ["I'm the PM of Jupyter Notebook.", "new"],
      ["We use Mixpanel for product analytics.", "new"],
    ]);
    const [role, tool] = await allFacts(s.workspaceId, s.userId);
    expect(tool).toMatchObject({
      content: "We use Mixpanel for product analytics.", kind: "static", subject: "tool.for:analytic-product", value: "mixpanel",
      source_conversation_id: s.conversationId, source_message_id: said.messageId, valid_at: said.at, extractor: "rules", embedder_id: "local:use-lite:512",
    });
    expect(tool!.invalid_at).toBeUndefined();
    expect(Buffer.from(tool!.vector!, "base64").byteLength).toBe(512 * 4);
    expect(role!.subject).toBe("user.role");

    const again = await say(s, "Right now we use Mixpanel for analytics.");
    expect(again.facts).toEqual([expect.objectContaining({ action: "same", id: tool!.id })]);
    expect(await allFacts(s.workspaceId, s.userId)).toHaveLength(2);
  });

  it("an exchange that comes again after its facts were written finishes: what it wrote is found, even a fact that is history by now", async () => {
    const s = scope();
    const said = statement(s, "We use Mixpanel for product analytics. Actually, we switched to Amplitude for product analytics.");
    const first = await learnFromStatement(said, { model: null });
    expect(first.facts.map((f) => f.action)).toEqual(["new", "changed"]);
    // The exchange is delivered again (its last write was cancelled, say): the Mixpanel fact is history by now.
    forgetCached(s.workspaceId, s.userId);
    const again = await learnFromStatement(said, { model: null });
    expect(again.facts.map((f) => [f.action, f.id])).toEqual(first.facts.map((f) => ["same", f.id]));
    expect(await allFacts(s.workspaceId, s.userId)).toHaveLength(2);
  });

  it("a change supersedes the old fact: kept as history with the time it stopped being true and what replaced it", async () => {
    const s = scope();
    await say(s, "We use Mixpanel for product analytics.");
    const before = await headVersion(s.workspaceId, s.userId);
    const change = statement(s, "Actually, we switched to Amplitude for product analytics.");
    const res = await learnFromStatement(change, { model: null });
    expect(res.facts).toEqual([expect.objectContaining({ action: "changed", content: "We switched to Amplitude for product analytics." })]);
    const facts = await byContent(s);
    const old = facts.get("We use Mixpanel for product analytics.")!;
    const now = facts.get("We switched to Amplitude for product analytics.")!;
    expect(old).toMatchObject({ invalid_at: change.at, superseded_by: now.id });
    expect(now.invalid_at).toBeUndefined();
    expect(res.facts[0]!.supersedes).toEqual([old.id]);
    // The write bumped the head in the same transaction (caches revalidate on it).
    expect(await headVersion(s.workspaceId, s.userId)).toBe(before + 1);
  });

  it("two sources that disagree are both kept and flagged; a later correction settles it and clears the flag", async () => {
    const s = scope();
    await say(s, "Our users are mostly data scientists in universities.");
    const res = await say(s, "Our users are mostly hospital IT admins.");
    expect(res.facts[0]!.action).toBe("contradicting");
    let facts = await byContent(s);
    const scientists = facts.get("Our users are mostly data scientists in universities.")!;
    const admins = facts.get("Our users are mostly hospital IT admins.")!;
    expect(scientists.contradicts).toEqual([admins.id]);
    expect(admins.contradicts).toEqual([scientists.id]);
    expect(scientists.invalid_at ?? admins.invalid_at).toBeUndefined();

    const settled = await say(s, "Correction: our users are mostly hospital IT admins.");
    expect(settled.facts[0]).toMatchObject({ action: "same", id: admins.id, supersedes: [scientists.id] });
    facts = await byContent(s);
    expect(facts.get("Our users are mostly data scientists in universities.")).toMatchObject({ superseded_by: admins.id });
    expect(facts.get("Our users are mostly hospital IT admins.")!.contradicts ?? []).toEqual([]);
    expect(facts.size).toBe(2);
  });

  it("a retraction supersedes every fact naming the tool; the retraction itself is remembered", async () => {
    const s = scope();
    await say(s, "We use Slack for team chat. We use Linear for issue tracking.");
    const res = await say(s, "We no longer use Slack.");
    expect(res.facts[0]!.action).toBe("changed");
    const facts = await byContent(s);
    expect(facts.get("We use Slack for team chat.")!.superseded_by).toBe(facts.get("We no longer use Slack.")!.id);
    expect(facts.get("We use Linear for issue tracking.")!.invalid_at).toBeUndefined();
  });

  it("a redelivered statement (same message) writes nothing new, and a statement with no fact writes nothing", async () => {
    const s = scope();
    const said = statement(s, "We are a team of 8 engineers. Our goal this quarter is to reduce churn below 4%.");
    await learnFromStatement(said, { model: null });
    const version = await headVersion(s.workspaceId, s.userId);
    const again = await learnFromStatement(said, { model: null });
    expect(again.facts.map((f) => f.action)).toEqual(["same", "same"]);
    expect(await allFacts(s.workspaceId, s.userId)).toHaveLength(2);
    expect(await headVersion(s.workspaceId, s.userId)).toBe(version);
    const none = await say(s, "What do users struggle with when they sign in?");
    expect(none).toEqual({ extractor: "rules", facts: [] });
    expect(await headVersion(s.workspaceId, s.userId)).toBe(version);
  });

  it("newer dated context replaces older context of the same subject", async () => {
    const s = scope();
    await say(s, "We're focused on onboarding this sprint.");
    const res = await say(s, "We're focused on billing this sprint.");
    expect(res.facts[0]!.action).toBe("changed");
    const facts = await byContent(s);
    expect(facts.get("We're focused on onboarding this sprint.")!.superseded_by).toBe(facts.get("We're focused on billing this sprint.")!.id);
  });
});

describe("a statement learned after newer ones (re-sent by the outbox, or retried behind later exchanges)", () => {
  it("does not replace newer dated context: the newer fact stays current and the late one is history", async () => {
    const s = scope();
    const early = statement(s, "We're focused on onboarding this sprint.");
    const late = statement(s, "We're focused on billing this sprint.");
    await learnFromStatement(late, { model: null });
    const res = await learnFromStatement(early, { model: null });
    expect(res.facts[0]!.action).toBe("changed");
    expect(res.facts[0]!.supersedes).toEqual([]);
    const facts = await byContent(s);
    const billing = facts.get("We're focused on billing this sprint.")!;
    const onboarding = facts.get("We're focused on onboarding this sprint.")!;
    expect(billing.invalid_at).toBeUndefined();
    expect(onboarding).toMatchObject({ valid_at: early.at, invalid_at: late.at, superseded_by: billing.id });
    // The learner's cache agrees with the table: only the newer fact is current.
    const memory = await loadMemory(s.workspaceId, s.userId, await embedder());
    expect(memory.current.map((f) => f.content)).toEqual(["We're focused on billing this sprint."]);
    expect(memory.matrix!.rows).toBe(1);
  });

  it("a late change still supersedes what was said before it, and is itself superseded by what was said after", async () => {
    const s = scope();
    const first = statement(s, "We use Mixpanel for product analytics.");
    const change = statement(s, "Actually, we switched to Amplitude for product analytics.");
    const latest = statement(s, "Actually, we switched to Heap for product analytics.");
    await learnFromStatement(first, { model: null });
    await learnFromStatement(latest, { model: null });
    // The middle statement arrives last.
    await learnFromStatement(change, { model: null });
    const facts = await byContent(s);
    const heap = facts.get("We switched to Heap for product analytics.")!;
    const amplitude = facts.get("We switched to Amplitude for product analytics.")!;
    expect(heap.invalid_at).toBeUndefined();
    expect(amplitude).toMatchObject({ invalid_at: latest.at, superseded_by: heap.id });
    const current = [...facts.values()].filter((f) => !f.invalid_at).map((f) => f.content);
    expect(current).toEqual(["We switched to Heap for product analytics."]);
  });
});

describe("the learner's cache", () => {
  it("after its own writes equals a fresh read of the table (facts, current set, vectors, version)", async () => {
    const s = scope();
    await say(s, "We use Mixpanel for product analytics. Our users are mostly students.");
    await say(s, "Our users are mostly hospital IT admins. We're in private beta this month.");
    await say(s, "Actually, we switched to Amplitude for product analytics. We're in public beta this month.");
    const emb = await embedder();
    const cached = await loadMemory(s.workspaceId, s.userId, emb);
    forgetCached(s.workspaceId, s.userId);
    const fresh = await loadMemory(s.workspaceId, s.userId, emb);
    expect(cached).not.toBe(fresh);
    expect(cached.version).toBe(fresh.version);
    const shape = (m: typeof fresh) => m.facts.map((f) => ({ id: f.id, invalid_at: f.invalid_at, superseded_by: f.superseded_by, contradicts: [...(f.contradicts ?? [])].sort() })).sort((a, b) => a.id.localeCompare(b.id));
    expect(shape(cached)).toEqual(shape(fresh));
    expect(cached.current.map((f) => f.id).sort()).toEqual(fresh.current.map((f) => f.id).sort());
    const rows = (m: typeof fresh) => new Map(m.current.map((f, i) => [f.id, Array.from(m.matrix!.data.subarray(i * 512, (i + 1) * 512))]));
    const [a, b] = [rows(cached), rows(fresh)];
    for (const [id, v] of a) expect(v).toEqual(b.get(id));
    expect(fresh.current).toHaveLength(4);
  });
});

describe("learnFromStatement with a model engine (Bedrock Converse, stand-in answer)", () => {
  const client = new BedrockRuntimeClient({ region: "us-east-1" });
  const mock = mockClient(client);
  beforeEach(() => mock.reset());
  const model = () => new BedrockModel({ client, retry: { retries: 1, minTimeoutMs: 1, maxTimeoutMs: 2 } });
  const answer = (facts: unknown[]) => ({
    $metadata: { httpStatusCode: 200 },
    output: { message: { role: "assistant", content: [{ toolUse: { toolUseId: "tooluse_memory1", name: "record_facts", input: { facts } } }] } },
    stopReason: "tool_use",
    usage: { inputTokens: 420, outputTokens: 96, totalTokens: 516 },
    metrics: { latencyMs: 800 },
  });

  it("sends the user's message and nearest facts with their subjects, and reconciles the answer like the rules' facts", async () => {
    const s = scope();
    await say(s, "We use Mixpanel for product analytics.");
    mock.on(ConverseCommand).resolves(
      answer([
        {
          content: "The team now uses Amplitude for product analytics.", kind: "static", subject: "tool.for:analytic-product", value: "Amplitude",
          multi_valued: false, changes_earlier: true, replaces: ["Mixpanel"],
        },
        { content: "The user leads a team of six researchers.", kind: "static", subject: "team.size", value: "6 researchers", multi_valued: false, changes_earlier: false, replaces: [] },
      ]) as never,
    );
    const text = "Quick update — we moved everything off Mixpanel onto Amplitude last week, and my research team is six people now.";
    const res = await learnFromStatement(statement(s, text), { model: model() });

    const input = mock.commandCalls(ConverseCommand)[0]!.args[0].input;
    expect(input.toolConfig?.toolChoice).toEqual({ tool: { name: "record_facts" } });
    const prompt = (input.messages![0]!.content![0] as { text: string }).text;
    expect(prompt).toContain(text);
    expect(prompt).toContain("- [tool.for:analytic-product] We use Mixpanel for product analytics.");
    expect(res.extractor).toBe("model");
    expect(res.facts.map((f) => [f.action, f.subject])).toEqual([
      ["changed", "tool.for:analytic-product"],
      ["new", "team.size"],
    ]);
    const facts = await byContent(s);
    expect(facts.get("We use Mixpanel for product analytics.")!.superseded_by).toBe(facts.get("The team now uses Amplitude for product analytics.")!.id);
    expect(facts.get("The team now uses Amplitude for product analytics.")).toMatchObject({ value: "amplitude", extractor: "model" });
  });

  it("a model answer with no facts writes nothing", async () => {
    const s = scope();
    mock.on(ConverseCommand).resolves(answer([]) as never);
    const res = await learnFromStatement(statement(s, "Can you draft a PRD for the export fix?"), { model: model() });
    expect(res).toEqual({ extractor: "model", facts: [] });
    expect(await headVersion(s.workspaceId, s.userId)).toBe(0);
  });
});
