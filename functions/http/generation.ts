import { httpGroup } from "../lib/http";
import { generationRoutes } from "./routes/generation";
import { ok } from "../lib/route";

// Each operation loads its own module (a chunk) when first reached: a container serving block actions never loads drafting.
const Generate = () => import("../../core/recommendation/generate");
const Draft = () => import("../../core/document/draft");
const BlockActions = () => import("../../core/document/block-actions");

/** The AI delivery endpoints: their own Lambda, with the longer timeout the engines need (spec 01 typical durations). */
export const handler = httpGroup(generationRoutes, {
  "generation.recommendations": async ({ user, body }) => ok(await (await Generate()).generate(user.id, body)),
  "generation.draft": async ({ user, body }) => ok(await (await Draft()).draft(user.id, body)),
  "generation.expand": async ({ user, params }) => ok(await (await BlockActions()).blockAction(user.id, params.block_id, "expand")),
  "generation.challenge": async ({ user, params }) => ok(await (await BlockActions()).blockAction(user.id, params.block_id, "challenge")),
  "generation.simulate": async ({ user, params }) => ok(await (await BlockActions()).blockAction(user.id, params.block_id, "simulate")),
});
