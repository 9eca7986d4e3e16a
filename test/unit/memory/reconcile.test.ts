/**
 * Reconciliation (core/memory/reconcile.ts): same, changed, contradicting, new — for facts the rules extract from
 * real sentences, with vectors from a bag-of-words embedder (texts sharing words are near) or set by hand where a
 * test needs an exact similarity.
 */
import { describe, expect, it } from "vitest";
import { reconcile, sameSubject, type KnownFact } from "../../../core/memory/reconcile";
import { extractByRules } from "../../../core/memory/rules";
import { hashEmbedder } from "../ai/helpers";

const emb = hashEmbedder(256);
let n = 0;

/** A known fact from a sentence, as the rules read it, stated in message `message`. */
async function known(text: string, message = `m${++n}`): Promise<KnownFact> {
  const [f] = extractByRules(text);
  if (!f) throw new Error(`no fact in "${text}"`);
  const [vector] = await emb.embed([f.content]);
  return { id: `id-${++n}`, content: f.content, kind: f.kind, subject: f.subject, value: f.value, multi: f.multi, source_message_id: message, vector: vector! };
}

async function incoming(text: string, message = `m${++n}`) {
  const [f] = extractByRules(text);
  if (!f) throw new Error(`no fact in "${text}"`);
  const [vector] = await emb.embed([f.content]);
  return { ...f, vector: vector!, source_message_id: message };
}

describe("reconcile", () => {
  it("same: a restatement is not stored twice (same text, or same subject and value in other words)", async () => {
    const mixpanel = await known("We use Mixpanel for product analytics.");
    expect(reconcile(await incoming("We use Mixpanel for product analytics."), [mixpanel])).toEqual({ action: "same", existing: mixpanel.id, supersedes: [] });
    expect(reconcile(await incoming("Right now we use Mixpanel for analytics."), [mixpanel])).toEqual({ action: "same", existing: mixpanel.id, supersedes: [] });
  });

  it("changed: a switch supersedes the tool of the same job; a retraction supersedes every fact naming the tool", async () => {
    const mixpanel = await known("We use Mixpanel for product analytics.");
    const linear = await known("We use Linear for issue tracking.");
    expect(reconcile(await incoming("Actually, we switched to Amplitude for product analytics."), [mixpanel, linear])).toEqual({ action: "changed", supersedes: [mixpanel.id] });
    expect(reconcile(await incoming("We no longer use Mixpanel."), [mixpanel, linear])).toEqual({ action: "changed", supersedes: [mixpanel.id] });
    const jira = await known("We use Jira.");
    expect(reconcile(await incoming("We switched from Jira to Linear."), [jira, mixpanel])).toEqual({ action: "changed", supersedes: [jira.id] });
  });

  it("changed: newer dated context replaces older context of the same subject", async () => {
    const beta = await known("We're in private beta this month.");
    expect(reconcile(await incoming("We're in public beta this month."), [beta])).toEqual({ action: "changed", supersedes: [beta.id] });
  });

  it("contradicting: two messages give one single-valued subject two values and nothing says which holds", async () => {
    const students = await known("Our users are mostly students.");
    const decision = reconcile(await incoming("Our users are mostly hospital IT admins."), [students]);
    expect(decision).toEqual({ action: "contradicting", contradicts: [students.id] });
    // The same message stating two values is not two sources disagreeing.
    expect(reconcile(await incoming("Our users are mostly hospital IT admins.", students.source_message_id), [students])).toEqual({ action: "new" });
  });

  it("a correction restating one side of a disagreement settles it: the other side is superseded by the known fact", async () => {
    const students = await known("Our users are mostly students.");
    const admins = await known("Our users are mostly hospital IT admins.");
    expect(reconcile(await incoming("Actually, our users are mostly hospital IT admins."), [students, admins])).toEqual({ action: "same", existing: admins.id, supersedes: [students.id] });
  });

  it("new: another value of a multi-valued subject, or an unrelated fact", async () => {
    const hate = await known("Our users hate the export flow.");
    expect(reconcile(await incoming("Our users love the dark theme."), [hate])).toEqual({ action: "new" });
    expect(reconcile(await incoming("We are a team of 8 engineers."), [hate])).toEqual({ action: "new" });
  });

  it("a near-identical sentence with other numbers is not the same fact", () => {
    const v = new Float32Array([1, 0]);
    const churn5: KnownFact = { id: "c5", content: "Churn was 5% in May.", kind: "static", subject: "x.note", value: "a", multi: true, source_message_id: "m", vector: v };
    const base = { kind: "static" as const, subject: "y.note", value: "b", multi: true, change: false, replaces: [], source_message_id: "m2", vector: v };
    expect(reconcile({ ...base, content: "Churn was 7% in May." }, [churn5])).toEqual({ action: "new" });
    expect(reconcile({ ...base, content: "Churn was 5% in May!" }, [churn5])).toEqual({ action: "same", existing: "c5", supersedes: [] });
  });

  it("a change without a shared subject supersedes the nearest fact of its family only when it is very near", () => {
    const at = (cos: number) => new Float32Array([cos, Math.sqrt(1 - cos * cos)]);
    const team: KnownFact = { id: "t", content: "We are a team of five.", kind: "static", subject: "team.size", value: "five", multi: false, source_message_id: "m", vector: at(1) };
    const change = { content: "We have grown to eight.", kind: "static" as const, subject: "team.headcount", value: "eight", multi: false, change: true, replaces: [], source_message_id: "m2" };
    expect(reconcile({ ...change, vector: at(0.85) }, [team])).toEqual({ action: "changed", supersedes: ["t"] });
    expect(reconcile({ ...change, vector: at(0.6) }, [team])).toEqual({ action: "new" });
  });
});

describe("sameSubject", () => {
  it("matches equal subjects and tool purposes that share a stem", () => {
    expect(sameSubject("team.size", "team.size")).toBe(true);
    expect(sameSubject("tool.for:analytic", "tool.for:analytic-product")).toBe(true);
    expect(sameSubject("tool.for:analytic", "tool.for:issue-track")).toBe(false);
    expect(sameSubject("tool:jira", "tool:linear")).toBe(false);
  });
});
