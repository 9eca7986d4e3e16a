import { httpGroup } from "../lib/http";
import { generationRoutes } from "./routes/generation";
import { ok } from "../lib/route";
import { generate } from "../../core/recommendation/generate";
import { draft } from "../../core/document/draft";
import { blockAction } from "../../core/document/block-actions";

/** The AI delivery endpoints: their own Lambda, with the longer timeout the engines need (spec 01 typical durations). */
export const handler = httpGroup(generationRoutes, {
  "generation.recommendations": async ({ user, body }) => ok(await generate(user.id, body)),
  "generation.draft": async ({ user, body }) => ok(await draft(user.id, body)),
  "generation.expand": async ({ user, params }) => ok(await blockAction(user.id, params.block_id, "expand")),
  "generation.challenge": async ({ user, params }) => ok(await blockAction(user.id, params.block_id, "challenge")),
  "generation.simulate": async ({ user, params }) => ok(await blockAction(user.id, params.block_id, "simulate")),
});
