/**
 * Route-table-driven guards (spec 01 Authentication 1-4): every bearer route answers 401 for every kind of bad
 * token; every route scoped by a workspace id in its path, query or body answers 403 FORBIDDEN to a non-member, and
 * the same 403 for a workspace that does not exist; every route of a resource fetched by id alone answers a
 * non-member exactly what it answers for an id that does not exist (404), so an outsider learns nothing of which
 * ids exist (issue #10 item 7; docs/decisions.md "404 or 403"). New rows of the route table are covered
 * automatically; a new workspace-scoped row needs a request fixture below or this file fails.
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { importJWK, SignJWT, type JWK } from "jose";
import { routes } from "../../functions/http/routes";
import type { RouteSpec } from "../../functions/lib/route";
import { DEV_AUDIENCE, DEV_ISSUER, ephemeralIdp, type DevIdp } from "../../local/idp";
import { call, idp, newUser, newWorkspace, type ApiResponse, type CallOptions } from "../support/api";
import { fillPath, headersOf, pathParams } from "./_helpers";
import { learnFromStatement } from "../../core/memory/learn";

const table = Object.entries(routes) as [string, RouteSpec][];
const bearerRoutes = table.filter(([, r]) => r.access === "user" || r.access === "admin");
const scopedRoutes = table.filter(([, r]) => r.workspaceScope !== undefined);

interface FixtureContext {
  workspaceId: string;
  owner: { id: string; email: string; token: string };
}
interface Fixture {
  /** Path parameters besides `workspace_id` (which defaults to the workspace under test). */
  params?: Record<string, string>;
  query?: Record<string, string>;
  body?: unknown;
  raw?: CallOptions["raw"];
}

/** Stripe settings for the billing POSTs' fixtures: a key, and an API base on a port where nothing listens. */
function stripeConfigured() {
  process.env.STRIPE_SECRET_KEY = "sk_test_guards";
  process.env.STRIPE_API_BASE = "http://127.0.0.1:9";
  process.env.STRIPE_PRICE_PRO_MONTHLY = "price_guards";
}

/**
 * A minimal VALID request per workspace-scoped route. Bodies and queries are validated before the membership
 * check, so an invalid request would answer 422 and hide a missing membership check. Routes scoped by `query`,
 * `body` or `resource` must put the workspace (or a resource of it) in the fixture themselves; fixtures may be
 * async to create that resource as the owner.
 */
const FIXTURES: Record<string, (ctx: FixtureContext) => Fixture | Promise<Fixture>> = {
  "workspaces.get": () => ({}),
  "workspaces.update": () => ({ body: { name: "Renamed" } }),
  "workspaces.delete": () => ({}),
  "workspaces.getSettings": () => ({}),
  "workspaces.updateSettings": () => ({ body: { overnightCycleNotifyEmail: true } }),
  "workspaces.agentIntro": () => ({}),
  "workspaces.listMembers": () => ({}),
  "workspaces.addMember": ({ owner }) => ({ body: { email: owner.email, role: "member" } }),
  "workspaces.updateMember": ({ owner }) => ({ params: { user_id: owner.id }, body: { role: "admin" } }),
  "workspaces.removeMember": ({ owner }) => ({ params: { user_id: owner.id } }),

  "research.upload": ({ workspaceId }) => ({
    raw: multipart({ workspace_id: workspaceId, source_type: "interview", title: "Guard" }, { name: "guard.txt", type: "text/plain", data: "Hello there." }),
  }),
  "research.uploadUrl": ({ workspaceId }) => ({ body: uploadUrlBody(workspaceId) }),
  "research.list": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "research.get": async (ctx) => ({ params: { source_id: await ownersSource(ctx) } }),
  "research.delete": async (ctx) => ({ params: { source_id: await ownersSource(ctx) } }),
  "research.reprocess": async (ctx) => ({ params: { source_id: await ownersSource(ctx) } }),

  "insights.create": ({ workspaceId }) => ({ body: insightBody(workspaceId) }),
  "insights.list": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "insights.batch": ({ workspaceId }) => ({ body: { workspace_id: workspaceId, insight_ids: [randomUUID()], action: "archive" } }),
  "insights.search": ({ workspaceId }) => ({ body: { workspace_id: workspaceId, query: "export" } }),
  "synthesis.synthesize": ({ workspaceId }) => ({ body: { workspace_id: workspaceId, source_ids: [randomUUID()] } }),
  "insights.get": async (ctx) => ({ params: { insight_id: await ownersInsight(ctx) } }),
  "insights.update": async (ctx) => ({ params: { insight_id: await ownersInsight(ctx) }, body: { title: "Renamed" } }),
  "insights.delete": async (ctx) => ({ params: { insight_id: await ownersInsight(ctx) } }),

  "recommendations.create": ({ workspaceId }) => ({ body: recommendationBody(workspaceId) }),
  "recommendations.list": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "recommendations.batchStatus": ({ workspaceId }) => ({
    body: { workspace_id: workspaceId, recommendation_ids: [randomUUID()], status: "accepted" },
  }),
  "recommendations.get": async (ctx) => ({ params: { recommendation_id: await ownersRecommendation(ctx) } }),
  "recommendations.update": async (ctx) => ({ params: { recommendation_id: await ownersRecommendation(ctx) }, body: { title: "Renamed" } }),
  "recommendations.delete": async (ctx) => ({ params: { recommendation_id: await ownersRecommendation(ctx) } }),
  "recommendations.status": async (ctx) => ({ params: { recommendation_id: await ownersRecommendation(ctx) }, body: { status: "accepted" } }),

  "documents.create": ({ workspaceId }) => ({ body: documentBody(workspaceId) }),
  "documents.list": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "documents.get": async (ctx) => ({ params: await ownersDocument(ctx) }),
  "documents.update": async (ctx) => ({ params: await ownersDocument(ctx), body: { title: "Renamed" } }),
  "documents.delete": async (ctx) => ({ params: await ownersDocument(ctx) }),
  "documents.saveVersion": async (ctx) => ({ params: await ownersDocument(ctx), body: {} }),
  "documents.listVersions": async (ctx) => ({ params: await ownersDocument(ctx) }),
  "documents.getVersion": async (ctx) => ({ params: await ownersDocument(ctx) }),
  "documents.diff": async (ctx) => ({ params: await ownersDocument(ctx), query: { from_revision: "1", to_revision: "1" } }),
  "documents.restore": async (ctx) => ({ params: await ownersDocument(ctx), body: {} }),
  "documents.status": async (ctx) => ({ params: await ownersDocument(ctx), body: { target_status: "review" } }),
  "blocks.list": async (ctx) => ({ params: await ownersDocument(ctx) }),
  "blocks.create": async (ctx) => ({ params: await ownersDocument(ctx), body: { block_type: "free_text" } }),
  "blocks.reorder": async (ctx) => ({ params: await ownersDocument(ctx), body: { block_ids: [(await ownersDocument(ctx)).block_id] } }),
  "blocks.update": async (ctx) => ({ params: await ownersDocument(ctx), body: { title: "Renamed" } }),
  "blocks.delete": async (ctx) => ({ params: await ownersDocument(ctx) }),
  "blocks.extract": async (ctx) => ({ body: { workspace_id: ctx.workspaceId, document_id: (await ownersDocument(ctx)).document_id } }),
  "blocks.listAnnotations": async (ctx) => ({ params: await ownersDocument(ctx) }),
  "blocks.createAnnotation": async (ctx) => ({ params: await ownersDocument(ctx), body: { body: "Looks good" } }),
  "blocks.deleteAnnotation": async (ctx) => ({ params: await ownersDocument(ctx) }),

  "generation.recommendations": async (ctx) => ({ body: { workspace_id: ctx.workspaceId, insight_ids: [await ownersInsight(ctx)] } }),
  "generation.draft": ({ workspaceId }) => ({ body: { workspace_id: workspaceId, document_type: "prd" } }),

  "chat.create": ({ workspaceId }) => ({ body: { workspace_id: workspaceId } }),
  "chat.list": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "chat.search": ({ workspaceId }) => ({ query: { workspace_id: workspaceId, q: "export" } }),

  "stream.chat": ({ workspaceId }) => ({ body: { workspace_id: workspaceId, prompt: "What do users struggle with?" } }),
  "stream.synthesis": ({ workspaceId }) => ({ body: { workspace_id: workspaceId, prompt: "Synthesize", source_ids: [randomUUID()] } }),
  "stream.recommendation": ({ workspaceId }) => ({ body: { workspace_id: workspaceId, prompt: "Recommend", insight_ids: [randomUUID()] } }),
  "stream.draft": ({ workspaceId }) => ({ body: { workspace_id: workspaceId, prompt: "Draft a PRD" } }),
  "stream.pipeline": ({ workspaceId }) => ({ body: { workspace_id: workspaceId, prompt: "Run the pipeline" } }),
  "pending-actions.list": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "billing.plans": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "billing.subscription": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "billing.credits": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "billing.usage": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "billing.boosts": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "billing.compute": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "billing.estimate": ({ workspaceId }) => ({ query: { workspace_id: workspaceId, effort: "low" } }),
  "billing.milestones": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "billing.accomplishments": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  // Without STRIPE_SECRET_KEY these answer 503 before the membership check, so the fixture configures a key (this
  // file's process only) and an API base where nothing listens: a missing membership check fails as a 503, not 403.
  "billing.checkout": ({ workspaceId }) => (stripeConfigured(), { body: { workspace_id: workspaceId, plan: "pro", interval: "monthly" } }),
  "billing.portal": ({ workspaceId }) => (stripeConfigured(), { body: { workspace_id: workspaceId } }),
  "billing.boostCheckout": ({ workspaceId }) => (stripeConfigured(), { body: { workspace_id: workspaceId, pack_type: "starter" } }),
  "billing.sync": ({ workspaceId }) => (stripeConfigured(), { query: { workspace_id: workspaceId } }),
  "codehost.connect": ({ workspaceId }) => ({ body: { workspace_id: workspaceId } }),
  "codehost.disconnect": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "codehost.status": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "codehost.repos": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "codehost.selectRepos": ({ workspaceId }) => ({ body: { workspace_id: workspaceId, repos: ["octo/repo"] } }),
  "codehost.createIssue": ({ workspaceId }) => ({ body: { workspace_id: workspaceId, recommendation_id: randomUUID(), repo: "octo/repo" } }),
  "codehost.links": ({ workspaceId }) => ({ query: { workspace_id: workspaceId, recommendation_id: randomUUID() } }),
  "codehost.sync": ({ workspaceId }) => ({ body: { workspace_id: workspaceId } }),
  "planner.connect": ({ workspaceId }) => ({ body: { workspace_id: workspaceId } }),
  "planner.disconnect": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "planner.status": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "planner.teams": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "planner.selectTeam": ({ workspaceId }) => ({ body: { workspace_id: workspaceId, team_id: "team-1", team_name: "Engineering" } }),
  "planner.createIssue": ({ workspaceId }) => ({ body: { workspace_id: workspaceId, recommendation_id: randomUUID() } }),
  "planner.links": ({ workspaceId }) => ({ query: { workspace_id: workspaceId, recommendation_id: randomUUID() } }),
  "planner.sync": ({ workspaceId }) => ({ body: { workspace_id: workspaceId } }),
  "tickettool.connect": ({ workspaceId }) => ({ body: { workspace_id: workspaceId } }),
  "tickettool.disconnect": ({ workspaceId }) => ({ body: { workspace_id: workspaceId } }),
  "tickettool.status": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "tickettool.projects": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "filestore.connect": ({ workspaceId }) => ({ body: { workspace_id: workspaceId } }),
  "filestore.disconnect": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "filestore.status": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "tickets.generate": async (ctx) => ({ body: { workspace_id: ctx.workspaceId, document_id: (await ownersDocument(ctx)).document_id } }),
  "tickets.list": async (ctx) => ({ params: { document_id: (await ownersDocument(ctx)).document_id } }),
  "tickets.review": async (ctx) => ({ params: { ticket_id: await ownersTicket(ctx) }, body: {} }),
  "tickets.push": async (ctx) => ({ body: { workspace_id: ctx.workspaceId, document_id: (await ownersDocument(ctx)).document_id, platform: "codehost" } }),
  "tickets.sync": async (ctx) => ({ body: { workspace_id: ctx.workspaceId, document_id: (await ownersDocument(ctx)).document_id } }),
  "generation.expand": async (ctx) => ({ params: { block_id: (await ownersDocument(ctx)).block_id } }),
  "generation.challenge": async (ctx) => ({ params: { block_id: (await ownersDocument(ctx)).block_id } }),
  "generation.simulate": async (ctx) => ({ params: { block_id: (await ownersDocument(ctx)).block_id } }),
  "observability.agentRuns": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "observability.agentRunStats": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "observability.rqs": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "observability.feedback": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "observability.entropy": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "observability.entropyIssues": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "observability.entropyScan": ({ workspaceId }) => ({ body: { workspace_id: workspaceId } }),
  "memory.search": ({ workspaceId }) => ({ query: { workspace_id: workspaceId, query: "analytics" } }),
  "memory.profile": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "memory.list": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "memory.forgetAll": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "memory.forget": async (ctx) => ({ params: { memory_id: await ownersMemory(ctx) } }),
  "tasks.spawn": ({ workspaceId }) => ({ body: { workspace_id: workspaceId, conversation_id: randomUUID(), task_type: "research", prompt: "What do users struggle with?" } }),
  "tasks.list": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "tasks.get": async (ctx) => ({ params: { task_id: await ownersTask(ctx) } }),
  "tasks.status": async (ctx) => ({ params: { task_id: await ownersTask(ctx) } }),
  "tasks.cancel": async (ctx) => ({ params: { task_id: await ownersTask(ctx) }, body: {} }),
  "task-progress.stream": async (ctx) => ({ params: { task_id: await ownersTask(ctx) } }),
  "skills.library": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "skills.libraryDetail": ({ workspaceId }) => ({ params: { slug: "release-notes" }, query: { workspace_id: workspaceId } }),
  "skills.workspace": ({ workspaceId }) => ({ query: { workspace_id: workspaceId } }),
  "skills.install": ({ workspaceId }) => ({ params: { slug: "release-notes" }, body: { workspace_id: workspaceId } }),
  "skills.uninstall": ({ workspaceId }) => ({ params: { slug: "release-notes" }, query: { workspace_id: workspaceId } }),
  "skills.updateInstall": ({ workspaceId }) => ({ params: { slug: "release-notes" }, body: { workspace_id: workspaceId, is_enabled: false } }),
  "skills.createCustom": ({ workspaceId }) => ({ body: { workspace_id: workspaceId, slug: "guard-skill", name: "Guard", description: "Guards.", instructions_md: "Guard." } }),
  "skills.updateCustom": ({ workspaceId }) => ({ params: { slug: "guard-skill" }, body: { workspace_id: workspaceId, name: "Renamed" } }),
  "skills.deleteCustom": ({ workspaceId }) => ({ params: { slug: "guard-skill" }, query: { workspace_id: workspaceId } }),
  "skills.feedback": ({ workspaceId }) => ({ params: { slug: "release-notes" }, body: { workspace_id: workspaceId, rating: 4 } }),
  "skills.export": ({ workspaceId }) => ({ params: { slug: "release-notes" }, query: { workspace_id: workspaceId } }),
  "skills.import": ({ workspaceId }) => ({
    raw: multipart({ workspace_id: workspaceId }, { name: "SKILL.md", type: "text/markdown", data: "---\nname: guard-import\ndescription: Guards.\n---\n\nGuard.\n" }),
  }),
};

/** A multipart/form-data body with text fields and one file part. */
function multipart(fields: Record<string, string>, file: { name: string; type: string; data: string }): CallOptions["raw"] {
  const boundary = `----guard${randomUUID().replace(/-/g, "")}`;
  const parts = Object.entries(fields).map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`);
  parts.push(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.name}"\r\nContent-Type: ${file.type}\r\n\r\n${file.data}\r\n`);
  return { data: `${parts.join("")}--${boundary}--\r\n`, contentType: `multipart/form-data; boundary=${boundary}` };
}

const uploadUrlBody = (workspaceId: string) => ({
  workspace_id: workspaceId, source_type: "interview", title: "Guard", file_name: "guard.txt", content_type: "text/plain", file_size_bytes: 12,
});

const insightBody = (workspaceId: string) => ({
  workspace_id: workspaceId, insight_type: "pain_point", title: "Guard insight", description: "Users cannot find the export.",
});

/** A source of the workspace, created by its owner (resource-scoped routes find the workspace through it). */
/** A fact remembered about the owner, learned by the rules engine as after a chat exchange. */
async function ownersMemory({ workspaceId, owner }: FixtureContext): Promise<string> {
  const res = await learnFromStatement(
    { workspaceId, userId: owner.id, conversationId: randomUUID(), messageId: randomUUID(), text: "We use Mixpanel for product analytics.", at: new Date().toISOString() },
    { model: null },
  );
  if (!res.facts[0]) throw new Error("fixture: no fact learned from the owner's statement");
  return res.facts[0].id;
}

/** A research task the owner spawned in a conversation of their own. */
async function ownersTask({ workspaceId, owner }: FixtureContext): Promise<string> {
  const conversation = await call("POST", "/api/chat/conversations", { token: owner.token, body: { workspace_id: workspaceId, title: "Guard task" } });
  if (conversation.status !== 201) throw new Error(`fixture: owner could not create a conversation: ${conversation.status} ${conversation.text}`);
  const task = await call("POST", "/api/tasks/spawn", {
    token: owner.token,
    body: { workspace_id: workspaceId, conversation_id: conversation.body.id, task_type: "research", prompt: "What do users struggle with?" },
  });
  if (task.status !== 201) throw new Error(`fixture: owner could not spawn a task: ${task.status} ${task.text}`);
  return task.body.id as string;
}

async function ownersSource({ workspaceId, owner }: FixtureContext): Promise<string> {
  const res = await call("POST", "/api/research/upload-url", { token: owner.token, body: uploadUrlBody(workspaceId) });
  if (res.status !== 201) throw new Error(`fixture: owner could not create a source: ${res.status} ${res.text}`);
  return res.body.source.id as string;
}

const recommendationBody = (workspaceId: string) => ({
  workspace_id: workspaceId, title: "Guard recommendation", description: "Add an export button to the report view.",
});

/** A recommendation of the workspace, created by its owner. */
async function ownersRecommendation({ workspaceId, owner }: FixtureContext): Promise<string> {
  const res = await call("POST", "/api/recommendations", { token: owner.token, body: recommendationBody(workspaceId) });
  if (res.status !== 201) throw new Error(`fixture: owner could not create a recommendation: ${res.status} ${res.text}`);
  return res.body.id as string;
}

const documentBody = (workspaceId: string) => ({
  workspace_id: workspaceId, document_type: "prd", title: "Guard PRD", content: "# Problem\n\nUsers cannot export.",
});

let documentFixture: Promise<Record<string, string>> | undefined;
/**
 * One document of the workspace with a block, a saved revision and an annotation, created once by its owner; the
 * path parameters of every document and block route. Outsiders' calls are refused, so sharing it is safe.
 */
function ownersDocument(ctx: FixtureContext): Promise<Record<string, string>> {
  documentFixture ??= (async () => {
    const as = { token: ctx.owner.token };
    const ok = (what: string, res: ApiResponse<{ id: string }>, status: number) => {
      if (res.status !== status) throw new Error(`fixture: owner could not create ${what}: ${res.status} ${res.text}`);
      return res.body;
    };
    const doc = ok("a document", await call("POST", "/api/documents", { ...as, body: documentBody(ctx.workspaceId) }), 201);
    const block = ok("a block", await call("POST", `/api/documents/${doc.id}/blocks`, { ...as, body: { block_type: "free_text" } }), 201);
    const revision = ok("a revision", await call("POST", `/api/documents/${doc.id}/versions`, { ...as, body: {} }), 201);
    const annotation = ok(
      "an annotation",
      await call("POST", `/api/documents/${doc.id}/blocks/${block.id}/annotations`, { ...as, body: { body: "Looks good" } }),
      201,
    );
    return { document_id: doc.id, block_id: block.id, revision_id: revision.id, annotation_id: annotation.id };
  })();
  return documentFixture;
}

/** An execution ticket of the workspace: a document of its own with one risk block, and the ticket generated from it. */
async function ownersTicket({ workspaceId, owner }: FixtureContext): Promise<string> {
  const as = { token: owner.token };
  const doc = await call("POST", "/api/documents", { ...as, body: documentBody(workspaceId) });
  const block = await call("POST", `/api/documents/${doc.body.id}/blocks`, { ...as, body: { block_type: "risk", content: { risk: "Exports time out" } } });
  const res = await call("POST", "/api/execution/generate", { ...as, body: { workspace_id: workspaceId, document_id: doc.body.id, include_block_types: ["risk"] } });
  if (block.status !== 201 || res.status !== 200 || !res.body.tickets?.[0]) throw new Error(`fixture: owner could not generate a ticket: ${res.status} ${res.text}`);
  return res.body.tickets[0].id as string;
}

/** An insight of the workspace, created by its owner. */
async function ownersInsight({ workspaceId, owner }: FixtureContext): Promise<string> {
  const res = await call("POST", "/api/insights", { token: owner.token, body: insightBody(workspaceId) });
  if (res.status !== 201) throw new Error(`fixture: owner could not create an insight: ${res.status} ${res.text}`);
  return res.body.id as string;
}

describe("401 on every bearer route", () => {
  const email = () => `guard-${randomUUID().slice(0, 8)}@example.com`;
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
  /** Each bad Authorization header, made once (signing is the slow part) and sent to every route. */
  const makers: Record<string, (foreign: DevIdp) => Promise<string | undefined>> = {
    "no Authorization header": async () => undefined,
    "an expired token": async () => `Bearer ${await idp().sign({ email: email(), expiresIn: -120 })}`,
    "a token signed by another key": async (foreign) => `Bearer ${await foreign.sign({ email: email() })}`,
    "a token from another issuer": async () => `Bearer ${await idp().sign({ email: email(), issuer: "https://evil.example" })}`,
    "a token for another audience": async () => `Bearer ${await idp().sign({ email: email(), audience: "another-api" })}`,
    "a non-Bearer scheme": async () => "Basic dXNlcjpwYXNz",
    "an empty Bearer": async () => "Bearer ",
    "a Bearer that is not a JWT": async () => "Bearer not-a-jwt",
    "a Bearer with two tokens": async () => `Bearer ${await idp().sign({ email: email() })} extra`,
    "a JWT with a forged alg none": async () =>
      `Bearer ${b64({ alg: "none", typ: "JWT" })}.${b64({ sub: "x", email: email(), iss: DEV_ISSUER, aud: DEV_AUDIENCE, exp: 4102444800 })}.`,
  };
  const cases = Object.keys(makers);
  const header: Record<string, string | undefined> = {};
  beforeAll(async () => {
    const foreign = await ephemeralIdp();
    for (const label of cases) header[label] = await makers[label]!(foreign);
  });

  it("the table has bearer routes to check", () => {
    expect(bearerRoutes.length).toBeGreaterThan(0);
  });

  describe.each(bearerRoutes)("%s", (_id, spec) => {
    it.each(cases)("rejects %s with 401 {detail}", async (label) => {
      const authorization = header[label];
      const res = await call(spec.method, fillPath(spec.path), { headers: authorization ? { authorization } : {} });
      expect(res.status, res.text).toBe(401);
      expect(typeof res.body.detail).toBe("string");
      expect(res.body.detail.length).toBeGreaterThan(0);
      expect(res.body.code).toBe("UNAUTHORIZED");
      expect(headersOf(res)["x-request-id"]).toBe(res.body.request_id);
    });
  });

  it("accepts a good token on the same path (the 401s are not the route failing for another reason)", async () => {
    const token = await idp().sign({ email: email() });
    const res = await call("GET", "/api/auth/me", { token });
    expect(res.status).toBe(200);
  });

  it("a correctly signed token without a subject is 401 (it names no user)", async () => {
    const key = await importJWK(JSON.parse(inject("idpPrivateJwk")) as JWK, "RS256");
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ email: email() })
      .setProtectedHeader({ alg: "RS256", kid: idp().jwks.keys[0]!.kid!, typ: "JWT" })
      .setIssuer(DEV_ISSUER)
      .setAudience(DEV_AUDIENCE)
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .sign(key);
    const res = await call("GET", "/api/auth/me", { token });
    expect(res.status, res.text).toBe(401);
    expect(res.body.detail).toMatch(/sub/i);
  });

  it("a valid token without an e-mail for an unknown user is 401", async () => {
    const token = await idp().sign({ email: "", sub: `idp|${randomUUID()}` });
    const res = await call("GET", "/api/auth/me", { token });
    expect(res.status).toBe(401);
    expect(res.body.detail).toMatch(/email/i);
  });
});

describe("a non-member: 403 on workspace-scoped routes, the 404 of an unknown id on by-id routes", () => {
  let ctx: FixtureContext;
  let outsider: { token: string };
  beforeAll(async () => {
    const { owner, workspace } = await newWorkspace("Guarded");
    ctx = { workspaceId: workspace.id, owner };
    outsider = await newUser();
  });

  it("every workspace-scoped route has a request fixture here", () => {
    const missing = scopedRoutes.map(([id]) => id).filter((id) => !FIXTURES[id]);
    expect(missing, `add a minimal valid request to FIXTURES in ${import.meta.filename} for: ${missing.join(", ")}`).toEqual([]);
  });

  it("no fixture is left over for a route that is gone or no longer workspace-scoped", () => {
    const scoped = new Set(scopedRoutes.map(([id]) => id));
    expect(Object.keys(FIXTURES).filter((id) => !scoped.has(id))).toEqual([]);
  });

  /** The fixture's request, checked valid (or the answer could be hiding behind a 422). */
  async function requestOf(id: string, spec: RouteSpec) {
    const fixture = FIXTURES[id];
    expect(fixture, `no FIXTURES entry for workspace-scoped route ${id}`).toBeDefined();
    const f = await fixture!(ctx);
    const params = { ...(pathParams(spec.path).includes("workspace_id") ? { workspace_id: ctx.workspaceId } : {}), ...f.params };
    if (spec.params) expect(spec.params.safeParse(params).success, `${id}: fixture params invalid`).toBe(true);
    if (spec.query) expect(spec.query.safeParse(f.query ?? {}).success, `${id}: fixture query invalid`).toBe(true);
    if (spec.body && (spec.bodyType ?? "json") === "json") expect(spec.body.safeParse(f.body).success, `${id}: fixture body invalid`).toBe(true);
    return { f, params };
  }

  const byWorkspace = scopedRoutes.filter(([, spec]) => spec.workspaceScope !== "resource");
  const byResource = scopedRoutes.filter(([, spec]) => spec.workspaceScope === "resource");

  it.each(byWorkspace)("%s: 403 FORBIDDEN", async (id, spec) => {
    const { f, params } = await requestOf(id, spec);
    const res = await call(spec.method, fillPath(spec.path, params), { token: outsider.token, body: f.body, query: f.query, raw: f.raw });
    expect(res.status, res.text).toBe(403);
    expect(res.body.code).toBe("FORBIDDEN");
    expect(res.body.request_id).toBeTruthy();
  });

  it.each(byWorkspace.filter(([, spec]) => spec.workspaceScope === "path"))("%s: the same 403 for a workspace that does not exist", async (id, spec) => {
    const { f, params } = await requestOf(id, spec);
    const res = await call(spec.method, fillPath(spec.path, { ...params, workspace_id: randomUUID() }), { token: outsider.token, body: f.body, query: f.query, raw: f.raw });
    expect(res.status, res.text).toBe(403);
    expect(res.body.code).toBe("FORBIDDEN");
  });

  it.each(byResource)("%s: 404, as for an id that does not exist", async (id, spec) => {
    const { f, params } = await requestOf(id, spec);
    const res = await call(spec.method, fillPath(spec.path, params), { token: outsider.token, body: f.body, query: f.query, raw: f.raw });
    // The same request with every path id replaced by one that exists nowhere.
    const unknown = Object.fromEntries(Object.entries(params).map(([k, v]) => [k, /^[0-9a-f-]{36}$/.test(v) ? randomUUID() : v]));
    const missing = await call(spec.method, fillPath(spec.path, unknown), { token: outsider.token, body: f.body, query: f.query, raw: f.raw });
    expect(res.status, res.text).toBe(404);
    expect(res.body.code).toBe("NOT_FOUND");
    expect({ status: res.status, code: res.body.code, detail: res.body.detail }).toEqual({ status: missing.status, code: missing.body.code, detail: missing.body.detail });
  });

  it("the workspace is untouched by the outsider's attempts", async () => {
    const res = await call("GET", `/api/workspaces/${ctx.workspaceId}`, { token: ctx.owner.token });
    expect(res.status).toBe(200);
    expect(res.body.name).toBe("Guarded");
    const members = await call("GET", `/api/workspaces/${ctx.workspaceId}/members`, { token: ctx.owner.token });
    expect(members.body.total).toBe(1);
  });
});
