/**
 * Skills benchmark (issue #22: "skill matching time with 100 installed skills"; core/skill/match.ts, hook.ts).
 *
 *   npm run bench -- skills      (or: npx tsx bench/run.ts skills)
 *
 * A workspace with 100 installed skills: the 10 official ones and 90 custom ones written into DynamoDB Local (names,
 * descriptions and trigger keywords of product work, varied so that matching has real work to do). Requests are a
 * fixed mix: some name an installed skill's trigger keyword, some match a description, most match nothing (the usual
 * chat question). Parts:
 *
 * 1. Matching alone: `SkillMatcher.match` over the 100 skills, per request (what every run pays once the matcher is
 *    built), and building the matcher (its index) for 100 skills, which a container pays once per workspace skill set.
 * 2. The whole run hook (`prepareSkills`, as the copilot calls it before the model): the two Queries of the
 *    workspace's installations and custom skills, the match, and for an activation the `skill_activated` event and
 *    the installation's update. Target: well under the 50 ms the copilot's pre-flight may add.
 */
import { randomUUID } from "node:crypto";
import { startBenchDynamo } from "./lib/runtime";
import { Recorder, fmtMs, printTable, since, type Summary } from "./lib/stats";
import { busyWarning, machineLine } from "./lib/machine";
import { sized, sizeNote } from "./lib/size";

const TABLE_NAME = "r2d-bench-skills";
const CUSTOM = 90;
const MATCH_ROUNDS = sized(400, 5);
const BUILDS = sized(200, 5);
const HOOK_RUNS = sized(300, 10);

const TOPICS = ["Churn", "Onboarding", "Pricing", "Retention", "Activation", "Net promoter", "Support queue", "Billing", "Search", "Mobile app"];
const KINDS = [
  ["debrief", "Debrief the {t} interviews and calls: the reasons people give, grouped, each with a verbatim quote."],
  ["audit", "Audit the {t} experience step by step and list where people stall, with the evidence for each step."],
  ["scorecard", "Score {t} initiatives on reach, effort and evidence strength and rank them for the next quarter."],
  ["digest", "Digest a month of {t} feedback into the five things that changed and what the team should do next."],
  ["teardown", "Tear down how two alternatives handle {t}: flows, pricing, strengths and weaknesses from reviews."],
  ["brief", "Write a one-page {t} brief for leadership: the problem, the evidence, the options and a recommendation."],
  ["survey", "Design and analyze a {t} survey: questions, sample size, segments and the findings with confidence."],
  ["experiment", "Plan a {t} experiment: hypothesis, metric, guardrail, sample size and the decision rule."],
  ["playbook", "Apply the team's {t} playbook: the checklist, the owners and the follow-ups after each review."],
] as const;

/** Requests: a quarter name an installed trigger keyword, a quarter match a description, half match nothing. */
const PROMPTS = [
  "Can you run the churn debrief for May?",
  "We need the pricing scorecard before planning",
  "Write release notes for version 2.29",
  "Prioritize the backlog with RICE",
  "Synthesize the interviews from last week into themes",
  "Plan a search experiment with a guardrail metric and a decision rule",
  "Design a billing survey with segments and sample size",
  "Digest this month's onboarding feedback and what changed",
  "What do users struggle with?",
  "Which interviews do we have?",
  "How many insights are high severity?",
  "Show me the recommendations we accepted",
  "Summarize the attached source",
  "Draft a PRD for biometric sign-in",
  "What did people say about the export button?",
  "List the documents in review",
];

const row = (name: string, s: Summary): (string | number)[] => [name, s.n, fmtMs(s.p50), fmtMs(s.p90), fmtMs(s.p99), fmtMs(s.max)];

export default async function skills(): Promise<void> {
  console.log(`skills benchmark — ${machineLine()}`);
  const warn = busyWarning();
  if (warn) console.log(warn);
  if (sizeNote()) console.log(sizeNote());
  process.env.LOG_LEVEL = "SILENT";
  process.env.POWERTOOLS_LOG_LEVEL = "SILENT";
  const dynamo = await startBenchDynamo(TABLE_NAME);
  const stopOnSignal = (signal: NodeJS.Signals) => void dynamo.stop().finally(() => process.exit(signal === "SIGINT" ? 130 : 143));
  process.once("SIGINT", stopOnSignal);
  process.once("SIGTERM", stopOnSignal);
  try {
    Object.assign(process.env, {
      TABLE_NAME: dynamo.tableName,
      DYNAMODB_ENDPOINT: dynamo.endpoint,
      AWS_REGION: process.env.AWS_REGION ?? "us-east-1",
      AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? "local",
      AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? "local",
    });
    // After the environment: the client and the entities read it on first use.
    const { db } = await import("../core/db/service");
    const { officialSkills } = await import("../core/skill/library");
    const { SkillMatcher } = await import("../core/skill/match");
    const { activeSkills } = await import("../core/skill");
    const { prepareSkills } = await import("../core/skill/hook");

    // --- A workspace with 100 installed skills.
    const ws = randomUUID();
    const user = randomUUID();
    const now = new Date().toISOString();
    for (const s of officialSkills()) {
      await db().entities.skillInstall.put({ workspace_id: ws, slug: s.slug, id: randomUUID(), is_official: true, is_enabled: true, config: {}, installed_by: user, installed_at: now }).go();
    }
    let made = 0;
    for (const t of TOPICS) {
      for (const [kind, text] of KINDS) {
        if (made >= CUSTOM) break;
        const slug = `${t.toLowerCase().replace(/\s+/g, "-")}-${kind}`;
        const name = `${t} ${kind}`;
        await db().entities.customSkill.put({
          workspace_id: ws, slug, id: randomUUID(), name, description: text.replace("{t}", t.toLowerCase()),
          trigger_keywords: [`${t.toLowerCase()} ${kind}`, `${kind} of ${t.toLowerCase()}`], version: "1.0.0",
          instructions_md: `# ${name}\n\nFollow the team's ${kind} steps for ${t.toLowerCase()}.`, output_template_md: `# ${name}: {{period}}\n\n## Findings`,
          created_by: user, created_at: now, updated_at: now,
        }).go();
        await db().entities.skillInstall.put({ workspace_id: ws, slug, id: randomUUID(), is_official: false, is_enabled: true, config: {}, installed_by: user, installed_at: now }).go();
        made++;
      }
    }
    const active = await activeSkills(ws);
    console.log(`workspace with ${active.length} installed skills (${officialSkills().length} official, ${made} custom); ${PROMPTS.length} requests in the mix`);

    // --- 1. Matching alone, and building a matcher.
    const records = active.map((a) => a.record);
    const build = new Recorder();
    for (let i = 0; i < BUILDS; i++) {
      const t0 = performance.now();
      new SkillMatcher(records);
      build.record(since(t0));
    }
    const matcher = new SkillMatcher(records);
    const match = new Recorder();
    let activations = 0;
    for (let r = 0; r < MATCH_ROUNDS; r++) {
      for (const p of PROMPTS) {
        const t0 = performance.now();
        const hits = matcher.match(p);
        match.record(since(t0));
        if (r === 0 && hits.length) activations++;
      }
    }

    // --- 2. The run hook, as the copilot calls it.
    const hook = new Recorder();
    let events = 0;
    const signal = new AbortController().signal;
    for (let i = 0; i < HOOK_RUNS; i++) {
      const prompt = PROMPTS[i % PROMPTS.length]!;
      const t0 = performance.now();
      await prepareSkills({ userId: user, workspaceId: ws, conversationId: randomUUID(), prompt, send: () => void events++, signal });
      hook.record(since(t0));
    }

    console.log("");
    printTable(["measure (100 installed skills)", "n", "p50 ms", "p90 ms", "p99 ms", "max ms"], [
      row("match one request (matcher built)", match.summary()),
      row("build the matcher (index 100 skills)", build.summary()),
      row("run hook: read + match + activate", hook.summary()),
    ]);
    console.log(`\nrequests that called for a skill: ${activations} of ${PROMPTS.length}; skill events sent by the hook: ${events} in ${HOOK_RUNS} runs`);
  } finally {
    await dynamo.stop();
  }
}
