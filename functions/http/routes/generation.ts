import { defineRoutes, type RouteSpec } from "../../lib/route";
import {
  BlockActionResult,
  BlockIdParam,
  Document,
  DraftInput,
} from "../../../core/document/schema";
import { GenerateInput, GenerateResult } from "../../../core/recommendation/schema";

/** Blocking AI generation: recommendations, document drafts and block actions (spec 01). */
export const generationRoutes = defineRoutes({
  "generation.recommendations": {
    method: "POST", path: "/api/recommendations/generate", group: "generation", access: "user", workspaceScope: "body",
    summary: "Generate 3 to 7 prioritized recommendations from insights and focus areas (blocking)",
    body: GenerateInput,
    rateLimit: "recommendations_generate",
    errors: ["SUBSCRIPTION_REQUIRED", "USAGE_LIMIT_EXCEEDED", "SERVICE_UNAVAILABLE"],
    idempotent: true,
    responses: { 200: GenerateResult },
  },
  "generation.draft": {
    method: "POST", path: "/api/documents/draft", group: "generation", access: "user", workspaceScope: "body",
    summary: "Draft a document from a recommendation, its insights and quotes (status draft; blocking)",
    body: DraftInput,
    rateLimit: "documents_draft",
    usage: "documents",
    errors: ["SUBSCRIPTION_REQUIRED", "USAGE_LIMIT_EXCEEDED", "SERVICE_UNAVAILABLE"],
    idempotent: true,
    responses: { 200: Document },
  },
  "generation.expand": {
    method: "POST", path: "/api/blocks/{block_id}/expand", group: "generation", access: "user", workspaceScope: "resource",
    summary: "Deeper detail for a block by its type's contract (a proposal; nothing is stored)",
    params: BlockIdParam,
    errors: ["USAGE_LIMIT_EXCEEDED", "SERVICE_UNAVAILABLE"],
    idempotent: true,
    responses: { 200: BlockActionResult.expand },
  },
  "generation.challenge": {
    method: "POST", path: "/api/blocks/{block_id}/challenge", group: "generation", access: "user", workspaceScope: "resource",
    summary: "Adversarial critique: strengths, weaknesses, questions, suggestions",
    params: BlockIdParam,
    errors: ["USAGE_LIMIT_EXCEEDED", "SERVICE_UNAVAILABLE"],
    idempotent: true,
    responses: { 200: BlockActionResult.challenge },
  },
  "generation.simulate": {
    method: "POST", path: "/api/blocks/{block_id}/simulate", group: "generation", access: "user", workspaceScope: "resource",
    summary: "Explore real-world implications: scenarios, assumptions, signals to watch",
    params: BlockIdParam,
    errors: ["USAGE_LIMIT_EXCEEDED", "SERVICE_UNAVAILABLE"],
    idempotent: true,
    responses: { 200: BlockActionResult.simulate },
  },
} satisfies Record<string, RouteSpec>);
