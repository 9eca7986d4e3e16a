import type { Method, RouteSpec } from "../lib/route";
import { authRoutes } from "./routes/auth";
import { workspacesRoutes } from "./routes/workspaces";
import { researchRoutes } from "./routes/research";
import { insightsRoutes } from "./routes/insights";
import { synthesisRoutes } from "./routes/synthesis";
import { recommendationsRoutes } from "./routes/recommendations";
import { generationRoutes } from "./routes/generation";
import { documentsRoutes } from "./routes/documents";
import { blocksRoutes } from "./routes/blocks";
import { webhooksRoutes } from "./routes/webhooks";
import { docsRoutes } from "./routes/docs";
import { pendingActionsRoutes } from "./routes/pending-actions";
import { chatRoutes } from "./routes/chat";
import { streamRoutes } from "./routes/stream";
import { billingRoutes } from "./routes/billing";
import { codehostRoutes } from "./routes/codehost";
import { ticketsRoutes } from "./routes/tickets";
import { plannerRoutes } from "./routes/planner";
import { growthRoutes } from "./routes/growth";
import { tickettoolRoutes } from "./routes/tickettool";
import { filestoreRoutes } from "./routes/filestore";
import { memoryRoutes } from "./routes/memory";
import { skillsRoutes } from "./routes/skills";
import { tasksRoutes } from "./routes/tasks";
import { TASK_PROGRESS_TIMEOUT_SECONDS, taskProgressRoutes } from "./routes/task-progress";
import { observabilityRoutes } from "./routes/observability";

/**
 * The route table: method, path, group, schemas, access. Read by the stacks (one Lambda per group), the local
 * gateway, the OpenAPI generator and the tests. Each group's routes live in `routes/<group>.ts`, which the
 * group's handler (`<group>.ts`) imports alone, so a Lambda builds only its own schemas at a cold start. Adding
 * a route there and its implementation in the group's handler is all it takes to ship an endpoint.
 */
export const routes = {
  ...authRoutes,
  ...workspacesRoutes,
  ...researchRoutes,
  ...insightsRoutes,
  ...synthesisRoutes,
  ...recommendationsRoutes,
  ...generationRoutes,
  ...documentsRoutes,
  ...blocksRoutes,
  ...webhooksRoutes,
  ...docsRoutes,
  ...pendingActionsRoutes,
  ...chatRoutes,
  ...streamRoutes,
  ...billingRoutes,
  ...codehostRoutes,
  ...ticketsRoutes,
  ...plannerRoutes,
  ...growthRoutes,
  ...tickettoolRoutes,
  ...filestoreRoutes,
  ...memoryRoutes,
  ...skillsRoutes,
  ...tasksRoutes,
  ...taskProgressRoutes,
  ...observabilityRoutes,
}

export type Routes = typeof routes;
export type RouteId = keyof Routes;

/**
 * Lambda timeout in seconds per group (the stacks and the local gateway use the same figures). The AI groups block
 * for up to a minute (spec 01 typical durations), beyond API Gateway's 30 s integration limit, so the stacks also
 * give them Function URLs.
 */
export const GROUP_TIMEOUT_SECONDS: Record<string, number> = { synthesis: 180, generation: 120, stream: 330, "task-progress": TASK_PROGRESS_TIMEOUT_SECONDS };
export const DEFAULT_TIMEOUT_SECONDS = 29;
export const timeoutOf = (group: string): number => GROUP_TIMEOUT_SECONDS[group] ?? DEFAULT_TIMEOUT_SECONDS;

/** The endpoint groups, each one Lambda. */
export const groups = (): string[] => [...new Set(Object.values(routes).map((r) => r.group))].sort();

/** The routes of one group as [id, spec] pairs. */
export const routesOf = (group: string): [RouteId, RouteSpec][] =>
  (Object.entries(routes) as [RouteId, RouteSpec][]).filter(([, r]) => r.group === group);

const compiled = (Object.entries(routes) as [RouteId, RouteSpec][]).map(([id, r]) => ({
  id,
  spec: r,
  literalSegments: r.path.split("/").filter((s) => s && !s.startsWith("{")).length,
  regex: new RegExp(`^${r.path.replace(/\{([^/}]+)\}/g, "(?<$1>[^/]+)")}/?$`),
}));
// Static paths win over parameterised ones, as in API Gateway: more literal segments first.
compiled.sort((a, b) => b.literalSegments - a.literalSegments);

/**
 * Find the route for a request, as API Gateway does (the local gateway and the tests use this).
 * @returns the route and its path parameters, `methodMismatch` when the path exists under another method, or null.
 */
export function matchRoute(method: string, path: string) {
  let pathExists = false;
  for (const c of compiled) {
    const m = c.regex.exec(path);
    if (!m) continue;
    pathExists = true;
    if (c.spec.method === method.toUpperCase()) {
      return { id: c.id, spec: c.spec, pathParameters: { ...(m.groups ?? {}) } as Record<string, string> };
    }
  }
  return pathExists ? ("methodMismatch" as const) : null;
}

/** The methods the route table serves on a path (a gateway 405 names them in `Allow`). */
export const allowedMethods = (path: string): Method[] => [...new Set(compiled.filter((c) => c.regex.test(path)).map((c) => c.spec.method))];
