/**
 * The local engine's fact extractor (core/memory/rules.ts): first-person statements become facts with a subject and
 * value; questions, requests, conditionals and research-like text do not.
 */
import { describe, expect, it } from "vitest";
import { extractByRules, normalizeValue, stemKey } from "../../../core/memory/rules";

const one = (text: string) => {
  const facts = extractByRules(text);
  expect(facts, text).toHaveLength(1);
  return facts[0]!;
};

describe("extractByRules", () => {
  it("reads who the user is and the tools the team uses, one fact per clause, in the user's words", () => {
    const facts = extractByRules("Hi! I'm the PM of Jupyter Notebook. We use Mixpanel for product analytics, and we're a team of 8 engineers.");
    expect(facts.map((f) => [f.content, f.subject, f.value, f.kind])).toEqual([
      ["I'm the PM of Jupyter Notebook.", "user.role", "pm of jupyter notebook", "static"],
      ["We use Mixpanel for product analytics.", "tool.for:analytic-product", "mixpanel", "static"],
      ["We're a team of 8 engineers.", "team.size", "8 engineers", "static"],
    ]);
    expect(facts.every((f) => !f.change)).toBe(true);
  });

  it("marks corrections and switches as changes, with what they replace", () => {
    expect(one("Actually, we switched to Amplitude for product analytics.")).toMatchObject({
      content: "We switched to Amplitude for product analytics.", subject: "tool.for:analytic-product", value: "amplitude", change: true,
    });
    // A time phrase dates the switch; the tool in use stays a stable fact.
    expect(one("We switched from Jira to Linear last month.")).toMatchObject({ subject: "tool:linear", value: "used", change: true, replaces: ["jira"], kind: "static" });
    expect(one("We replaced Zendesk with Intercom for support.")).toMatchObject({ subject: "tool.for:support", value: "intercom", replaces: ["zendesk"], change: true });
    expect(one("We no longer use Slack.")).toMatchObject({ subject: "tool:slack", value: "not used", change: true, replaces: ["slack"] });
    // Not a retraction: a plain negative statement (it may contradict an earlier one).
    expect(one("We don't use Jira.")).toMatchObject({ subject: "tool:jira", value: "not used", change: false });
  });

  it("tells dated context (dynamic) from stable facts (static)", () => {
    expect(one("Our goal this quarter is to reduce churn below 4%.")).toMatchObject({ subject: "team.goal", value: "reduce churn below 4%", kind: "dynamic" });
    expect(one("Our goal is to reduce churn.")).toMatchObject({ subject: "team.goal", kind: "static" });
    expect(one("We're in public beta right now.")).toMatchObject({ subject: "product.stage", value: "public beta", kind: "dynamic", change: false });
    expect(one("We're focused on onboarding this sprint.")).toMatchObject({ subject: "team.focus", value: "onboarding", kind: "dynamic" });
    expect(one("Our churn is 5% this month.")).toMatchObject({ subject: "metric.churn", value: "5%", kind: "dynamic" });
    expect(one("Our churn dropped to 3%.")).toMatchObject({ subject: "metric.churn", value: "3%", change: true });
    expect(one("We have 12,000 monthly active users.")).toMatchObject({ subject: "metric.monthly_active_users", value: "12,000", kind: "dynamic" });
    expect(one("We just launched the new dashboard.")).toMatchObject({ subject: "product.launched", kind: "dynamic", multi: true });
    expect(one("Remember that our launch date is March 3.")).toMatchObject({ content: "Our launch date is March 3.", subject: "plan.deadline", kind: "dynamic" });
  });

  it("reads the product, its users, competitors and the user's preferences", () => {
    expect(extractByRules("We're building a notebook editor for teams; we sell to research labs.").map((f) => [f.subject, f.value])).toEqual([
      ["product.what", "notebook editor for teams"],
      ["product.users", "research labs"],
    ]);
    expect(one("Our users are mostly data scientists in universities.")).toMatchObject({ subject: "product.users", value: "data scientists in universities", multi: false });
    expect(one("Our users hate the export flow.")).toMatchObject({ subject: "product.users.about", multi: true });
    expect(one("Our main competitors are Google Colab and Deepnote.")).toMatchObject({ subject: "market.competitors" });
    expect(one("Our analytics tool is Heap.")).toMatchObject({ subject: "tool.for:analytic", value: "heap" });
    expect(one("I prefer short answers with bullet points.")).toMatchObject({ subject: "user.preference", multi: true });
    expect(one("My team is 5 people.")).toMatchObject({ subject: "team.size", value: "5 people" });
    expect(one("I work at Acme Corp.")).toMatchObject({ subject: "user.employer", value: "acme corp" });
  });

  it("reads nothing from questions, requests, conditionals, vague phrases and research text", () => {
    for (const text of [
      "What do users struggle with?",
      "Draft a PRD for our users who struggle with exports.",
      "If we use Mixpanel, what happens?",
      "Can you tell me what our users say about pricing",
      "We want to know what users think about pricing.",
      "We use it a lot.",
      "Summarize the interview with participant 11.",
      "The app keeps logging me out and I have to reset my password every week.",
      "I'm a bit confused by this answer.",
    ]) {
      expect(extractByRules(text), text).toEqual([]);
    }
  });

  it("keeps at most 12 facts from one message", () => {
    const text = Array.from({ length: 30 }, (_, i) => `We use Tool${i} for job${i}.`).join(" ");
    expect(extractByRules(text)).toHaveLength(12);
  });
});

describe("helpers", () => {
  it("normalizes values and keys purposes by stems", () => {
    expect(normalizeValue("  The Onboarding  this sprint. ")).toBe("onboarding");
    expect(stemKey("product analytics")).toBe("analytic-product");
    expect(stemKey("issue tracking")).toBe(stemKey("tracking issues"));
  });
});
