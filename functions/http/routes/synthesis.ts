import { defineRoutes, type RouteSpec } from "../../lib/route";
import { SynthesizeInput, SynthesizeResult } from "../../../core/insight/schema";

/** Synthesis of research sources into insights (spec 01 Research sources and synthesis). */
export const synthesisRoutes = defineRoutes({
  "synthesis.synthesize": {
    method: "POST", path: "/api/research/synthesize", group: "synthesis", access: "user", workspaceScope: "body",
    summary: "Synthesize completed sources into grounded insights (blocking; one per workspace at a time; 10 a minute)",
    body: SynthesizeInput,
    errors: ["SUBSCRIPTION_REQUIRED", "USAGE_LIMIT_EXCEEDED", "RATE_LIMITED", "SOURCE_NOT_READY", "SYNTHESIS_IN_PROGRESS", "SERVICE_UNAVAILABLE"],
    idempotent: true,
    responses: { 200: SynthesizeResult },
  },
} satisfies Record<string, RouteSpec>);
