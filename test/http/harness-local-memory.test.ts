/**
 * The local engine plans the memory reads (core/agent/local-engine.ts; core/agent/tools/memory.ts), over the wire:
 * what a user told it in one conversation (learned by the memory consumer off the response path) is what it answers
 * "what do you know about me" with (memory_profile), and a question about one thing they said searches it
 * (search_memory). Nothing is added to what the tools returned.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registeredQueue } from "../../core/queue";
import type { LocalFifoQueue } from "../../core/queue/local";
import { newWorkspace } from "../support/api";
import { liveGateway, orderProblems, readStream, type WireEvent } from "../support/sse";

let gw: Awaited<ReturnType<typeof liveGateway>>;
const of = (events: WireEvent[], name: string) => events.filter((e) => e.event === name).map((e) => e.data);
const text = (events: WireEvent[]) => events.filter((e) => e.event === "token").map((e) => e.data.content).join("");
const learned = () => (registeredQueue("memory") as LocalFifoQueue).idle();

let token: string;
let ws: string;
const ask = async (prompt: string) => {
  const events = await readStream(gw.base, "/api/stream/chat", token, { workspace_id: ws, prompt });
  expect(orderProblems(events)).toEqual([]);
  expect(of(events, "error")).toEqual([]);
  return events;
};

beforeAll(async () => {
  gw = await liveGateway();
  const w = await newWorkspace("Local memory");
  token = w.owner.token;
  ws = w.workspace.id;
});
afterAll(async () => gw.close());

describe("the local engine reads the user's memory", () => {
  it("answers 'what do you know about me?' with nothing remembered yet, from memory_profile", async () => {
    const events = await ask("What do you know about me?");
    expect(of(events, "tool_use").map((t) => t.name)).toEqual(["memory_profile"]);
    expect(text(events)).toContain("I do not remember anything you told me in this workspace yet.");
  }, 60_000);

  it("answers from the profile once facts are learned, and searches for one thing the user said", async () => {
    await ask("Hi! I'm the PM of Acme, and we use Mixpanel for product analytics.");
    await learned();

    const profile = await ask("What do you know about me?");
    expect(of(profile, "tool_use").map((t) => t.name)).toEqual(["memory_profile"]);
    const answer = text(profile);
    expect(answer).toContain("- I'm the PM of Acme.");
    expect(answer).toContain("- We use Mixpanel for product analytics.");
    expect(of(profile, "harness_complexity")[0]).toMatchObject({ level: "simple" });

    const mine = await ask("Show my profile");
    expect(of(mine, "tool_use").map((t) => t.name)).toEqual(["memory_profile"]);

    const search = await ask("Do you remember which analytics tool we use?");
    expect(of(search, "tool_use").map((t) => [t.name, JSON.parse(t.input_summary).query])).toEqual([["search_memory", "Do you remember which analytics tool we use?"]]);
    const found = text(search);
    expect(found).toContain("From what you told me in earlier conversations in this workspace:");
    expect(found).toMatch(/- We use Mixpanel for product analytics\. \(you said so on \d{4}-\d{2}-\d{2}\)/);
    expect(of(search, "harness_contract")).toEqual([expect.objectContaining({ passed: true })]);

    // A question about the workspace's research is not a memory question.
    const research = await ask("What do users struggle with?");
    expect(of(research, "tool_use").map((t) => t.name)).toEqual(["search_insights"]);
  }, 120_000);
});
