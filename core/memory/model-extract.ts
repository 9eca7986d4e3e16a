/**
 * Fact extraction with a model engine (Bedrock, openai-compatible): one structured call per exchange (the Model
 * port's forced tool, validated with zod; the adapter repairs or retries malformed output), reading the user's message
 * only. The user's nearest existing facts are shown with their subjects so the model names the same subject for the
 * same thing; what becomes of each fact is decided afterwards by the one reconciliation (core/memory/reconcile.ts).
 */
import * as z from "zod";
import type { CallUsage, Model } from "../ai/ports";
import { normalizeValue } from "./rules";
import { MAX_FACT_CHARS, MAX_FACTS_PER_MESSAGE, type ExtractedFact } from "./types";

/** Longest user message sent for extraction, in characters (a pasted transcript is research, not facts about the team). */
const MAX_MESSAGE_CHARS = 8_000;

const FactOut = z.object({
  content: z.string().min(3).max(MAX_FACT_CHARS).describe("the fact as one short sentence, in the user's words where possible"),
  kind: z.enum(["static", "dynamic"]).describe("static: stable facts; dynamic: recent or dated context (this quarter, right now, a launch date)"),
  subject: z
    .string()
    .min(2)
    .max(80)
    .regex(/^[a-z0-9_.:+-]+$/)
    .describe("what it is about, lower-case dotted: user.role, team.size, product.users, product.stage, team.goal, metric.churn, tool:<name>, tool.for:<job>; reuse an existing fact's subject when it is about the same thing"),
  value: z.string().min(1).max(200).describe("its value for the subject, short and lower-case: '8 people', 'mixpanel', 'not used'"),
  multi_valued: z.boolean().describe("true when the subject holds several values at once (statements about users, intentions); false when a new value replaces the old"),
  changes_earlier: z.boolean().describe("true when the user says something changed or corrects an earlier statement"),
  replaces: z.array(z.string().max(80)).max(5).describe("earlier values it replaces, as the user names them ('switched from Jira': ['jira']); [] when none"),
});

/** The tool's input: the facts found (none is a valid answer). */
export const ExtractionOutput = z.object({ facts: z.array(FactOut).max(MAX_FACTS_PER_MESSAGE) });

const SYSTEM = [
  "You keep a product team's memory: facts a user states about themselves, their team, product, users, goals, tools, metrics, stage and plans.",
  "Read ONLY the user's message. Record a fact only when the user states it as true; skip questions, requests, hypotheticals and anything quoted from research or documents.",
  "Do not infer or invent. One fact per statement. A message may hold no facts: then record none.",
  "static: stable facts (who the user is, team, product, target users, tools, goals). dynamic: recent or dated context (this sprint's focus, a launch date, a current metric).",
  "Name subjects consistently; when an existing fact listed below is about the same thing, use its subject exactly.",
].join("\n");

/** What the model extraction needs: the user's message and their nearest existing facts (subject and content). */
export interface ModelExtractionInput {
  text: string;
  known: { subject: string; content: string }[];
  signal?: AbortSignal;
}

/**
 * Extract facts from one user message with a model's structured call (small tier, temperature 0).
 * @returns the facts (values normalised, subjects lower-case) and the call's usage
 * @throws AppError SERVICE_UNAVAILABLE when the model stays throttled; INTERNAL when its output stays malformed
 */
export async function extractWithModel(model: Model, input: ModelExtractionInput): Promise<{ facts: ExtractedFact[]; usage: CallUsage }> {
  const known = input.known.length ? input.known.map((k) => `- [${k.subject}] ${k.content}`).join("\n") : "(none yet)";
  const { output, usage } = await model.structured({
    tier: "small",
    system: SYSTEM,
    messages: [
      {
        role: "user",
        text: `Existing facts nearest to this message:\n${known}\n\nThe user's message:\n<<<\n${input.text.slice(0, MAX_MESSAGE_CHARS)}\n>>>\n\nRecord the facts it states.`,
      },
    ],
    tool: { name: "record_facts", description: "Record the facts the user's message states (none when it states none).", schema: ExtractionOutput },
    maxTokens: 1500,
    temperature: 0,
    signal: input.signal,
  });
  const facts = output.facts.map((f) => ({
    content: f.content.trim(),
    kind: f.kind,
    subject: f.subject.toLowerCase(),
    value: normalizeValue(f.value) || f.value.toLowerCase(),
    multi: f.multi_valued,
    change: f.changes_earlier || f.replaces.length > 0,
    replaces: f.replaces.map(normalizeValue).filter(Boolean),
  }));
  return { facts, usage };
}
