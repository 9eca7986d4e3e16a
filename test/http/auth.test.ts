/**
 * Account endpoints (spec 01 User, Access status; DESIGN.md section 5): GET /api/auth/me and
 * POST /api/auth/redeem-code, with product-led access gating on and off.
 */
import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as User from "../../core/user";
import { db } from "../../core/db/service";
import { call, idp, newUser, newWorkspace } from "../support/api";
import { expectEnvelope, userWithEmail } from "./_helpers";

const SNAKE_TO_CAMEL: Record<string, string> = {
  idp_id: "idpUserId",
  access_status: "accessStatus",
  has_product_access: "hasProductAccess",
  is_founder: "isFounder",
  referral_code: "referralCode",
  activated_at: "activatedAt",
};

describe("GET /api/auth/me", () => {
  it("creates the user from the token's claims on the first request, with both naming styles", async () => {
    const email = `Mixed.Case-${randomUUID().slice(0, 6)}@Example.com`;
    const sub = `idp|${randomUUID()}`;
    const token = await idp().sign({ email, name: "Grace Hopper", sub });

    const res = await call("GET", "/api/auth/me", { token });

    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: User.userIdFor(sub),
      email: email.toLowerCase(),
      name: "Grace Hopper",
      avatar_url: null,
      idp_id: sub,
      access_status: "active",
      has_product_access: true,
      is_founder: false,
    });
    for (const [snake, camel] of Object.entries(SNAKE_TO_CAMEL)) expect(res.body[camel], camel).toEqual(res.body[snake]);
    expect(res.body.referral_code).toMatch(/^[A-Z2-9]{8}$/);
    expect(Date.parse(res.body.created_at)).not.toBeNaN();
    expect(Date.parse(res.body.activated_at)).not.toBeNaN();
    expect(await User.get(res.body.id)).not.toBeNull();
  });

  it("returns the same user (deterministic id) on later requests, even with new tokens", async () => {
    const sub = `idp|${randomUUID()}`;
    const email = `same-${randomUUID().slice(0, 6)}@example.com`;
    const first = await call("GET", "/api/auth/me", { token: await idp().sign({ email, sub }) });
    const second = await call("GET", "/api/auth/me", { token: await idp().sign({ email, sub, name: "Changed In Token" }) });
    expect(second.status).toBe(200);
    expect(second.body.id).toBe(first.body.id);
    expect(second.body.referral_code).toBe(first.body.referral_code);
    expect(second.body.created_at).toBe(first.body.created_at);
  });

  it("concurrent first requests of one new user resolve to one user", async () => {
    const sub = `idp|${randomUUID()}`;
    const token = await idp().sign({ email: `race-${randomUUID().slice(0, 6)}@example.com`, sub });
    const results = await Promise.all([1, 2, 3, 4].map(() => call("GET", "/api/auth/me", { token })));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
    expect(new Set(results.map((r) => r.body.referral_code)).size).toBe(1);
  });

  it("gives every user a different referral code", async () => {
    const users = await Promise.all(Array.from({ length: 8 }, () => newUser()));
    const codes = users.map((u) => u.profile.referral_code as string);
    expect(codes.every((c) => typeof c === "string" && c.length > 0)).toBe(true);
    expect(new Set(codes).size).toBe(users.length);
    const { data: guard } = await db().entities.referralCode.get({ code: codes[0]! }).go();
    expect(guard?.user_id).toBe(users[0]!.id);
  });
});

describe("an e-mail claim that is no address", () => {
  it("over 254 characters, a new user's token is 401 (it was a 500: the address keys an index); one with spaces is trimmed", async () => {
    const long = `${"a".repeat(2_000)}@example.com`;
    expectEnvelope(await call("GET", "/api/auth/me", { token: await idp().sign({ email: long, sub: `idp|${randomUUID()}` }) }), 401, "UNAUTHORIZED");
    const spaced = `  spaced-${randomUUID().slice(0, 8)}@example.com `;
    const me = await call("GET", "/api/auth/me", { token: await idp().sign({ email: spaced, sub: `idp|${randomUUID()}` }) });
    expect(me.status, me.text).toBe(200);
    expect(me.body.email).toBe(spaced.trim());
  });
});

describe("access gating (spec 01 Access status)", () => {
  let saved: Record<string, string | undefined>;
  beforeEach(() => {
    saved = { ACCESS_GATING: process.env.ACCESS_GATING, FOUNDER_EMAILS: process.env.FOUNDER_EMAILS };
    process.env.ACCESS_GATING = "true";
  });
  afterEach(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it("(new user) with gating on -> pending: no product access, cannot create a workspace", async () => {
    const u = await newUser();
    expect(u.profile).toMatchObject({
      access_status: "pending", accessStatus: "pending",
      has_product_access: false, hasProductAccess: false,
      activated_at: null, activatedAt: null,
    });

    const res = await call("POST", "/api/workspaces", { token: u.token, body: { name: "Too early" } });

    expectEnvelope(res, 403, "PRODUCT_ACCESS_REQUIRED");
    expectEnvelope(await call("GET", "/api/workspaces", { token: u.token }), 403, "PRODUCT_ACCESS_REQUIRED");
    // What a pending user may do: read their profile (above), see the plans, redeem a code.
    expect((await call("GET", "/api/billing/plans", { token: u.token })).status).toBe(200);
  });

  it("product use needs product access, not only workspace creation: a pending member is refused until they redeem", async () => {
    process.env.ACCESS_GATING = "false";
    const { owner, workspace } = await newWorkspace("Team with a pending member");
    process.env.ACCESS_GATING = "true";
    const pending = await newUser();
    expect((await call("POST", `/api/workspaces/${workspace.id}/members`, { token: owner.token, body: { email: pending.email, role: "member" } })).status).toBe(201);
    const insight = { workspace_id: workspace.id, insight_type: "pain_point", title: "Exports time out", description: "Exports time out.", severity: "high" };

    expectEnvelope(await call("POST", "/api/insights", { token: pending.token, body: insight }), 403, "PRODUCT_ACCESS_REQUIRED");
    expectEnvelope(await call("GET", "/api/insights", { token: pending.token, query: { workspace_id: workspace.id } }), 403, "PRODUCT_ACCESS_REQUIRED");
    expectEnvelope(await call("GET", `/api/workspaces/${workspace.id}`, { token: pending.token }), 403, "PRODUCT_ACCESS_REQUIRED");
    expectEnvelope(await call("POST", "/api/stream/chat", { token: pending.token, body: { workspace_id: workspace.id, prompt: "Hello" } }), 403, "PRODUCT_ACCESS_REQUIRED");

    const [generated] = await User.generateAccessCodes(1, { batch: "test" });
    expect((await call("POST", "/api/auth/redeem-code", { token: pending.token, body: { code: generated!.code } })).status).toBe(200);
    const created = await call("POST", "/api/insights", { token: pending.token, body: insight });
    expect(created.status, created.text).toBe(201);
  });

  it("(new user) with gating off -> active at creation", async () => {
    process.env.ACCESS_GATING = "false";
    const u = await newUser();
    expect(u.profile).toMatchObject({ access_status: "active", has_product_access: true });
    expect(u.profile.activated_at).not.toBeNull();
  });

  it("founders (FOUNDER_EMAILS) are active immediately even with gating on", async () => {
    const email = `founder-${randomUUID().slice(0, 6)}@example.com`;
    process.env.FOUNDER_EMAILS = `someone@else.com, ${email.toUpperCase()}`;
    const u = await userWithEmail(email);
    expect(u.profile).toMatchObject({ access_status: "active", is_founder: true, isFounder: true, has_product_access: true });
    expect(u.profile.activated_at).not.toBeNull();
    const ws = await call("POST", "/api/workspaces", { token: u.token, body: { name: "Founder's" } });
    expect(ws.status).toBe(201);
  });

  it("an address the provider says is unverified (email_verified false) makes no founder; verified or unsaid, it does", async () => {
    const addresses = ["f", "t", "s"].map((k) => `founder-${k}-${randomUUID().slice(0, 6)}@example.com`);
    process.env.FOUNDER_EMAILS = addresses.join(", ");
    const [unverified, verified, unsaid] = await Promise.all([
      idp().sign({ email: addresses[0]!, sub: `idp|${randomUUID()}`, email_verified: false }),
      idp().sign({ email: addresses[1]!, sub: `idp|${randomUUID()}`, email_verified: "true" }),
      idp().sign({ email: addresses[2]!, sub: `idp|${randomUUID()}` }),
    ]);
    expect((await call("GET", "/api/auth/me", { token: unverified })).body).toMatchObject({ is_founder: false, access_status: "pending" });
    expect((await call("GET", "/api/auth/me", { token: verified })).body).toMatchObject({ is_founder: true, access_status: "active" });
    expect((await call("GET", "/api/auth/me", { token: unsaid })).body).toMatchObject({ is_founder: true, access_status: "active" });
  });

  it("pending -> active by a valid code: activated_at set, product access, workspace creation allowed", async () => {
    const u = await newUser();
    const [generated] = await User.generateAccessCodes(1, { batch: "test" });

    const res = await call("POST", "/api/auth/redeem-code", { token: u.token, body: { code: generated!.code } });

    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: u.id, access_status: "active", accessStatus: "active", has_product_access: true, hasProductAccess: true });
    expect(Date.parse(res.body.activated_at)).not.toBeNaN();
    expect(res.body.activatedAt).toBe(res.body.activated_at);
    const me = await call("GET", "/api/auth/me", { token: u.token });
    expect(me.body.access_status).toBe("active");
    const { data: stored } = await db().entities.accessCode.get({ code: generated!.code }).go();
    expect(stored).toMatchObject({ status: "redeemed", redeemed_by: u.id, redeemed_by_email: u.email });
    const ws = await call("POST", "/api/workspaces", { token: u.token, body: { name: "Now allowed" } });
    expect(ws.status).toBe(201);
  });

  it("accepts a code typed in lower case with surrounding spaces", async () => {
    const u = await newUser();
    const [generated] = await User.generateAccessCodes(1);
    const res = await call("POST", "/api/auth/redeem-code", { token: u.token, body: { code: `  ${generated!.code.toLowerCase()} ` } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.access_status).toBe("active");
  });

  it("an unknown code is 400 and the user stays pending", async () => {
    const u = await newUser();
    const res = await call("POST", "/api/auth/redeem-code", { token: u.token, body: { code: "NOSUCHCODE" } });
    expectEnvelope(res, 400, "INVALID_ACCESS_CODE");
    expect((await User.get(u.id))?.access_status).toBe("pending");
  });

  it("a revoked code is 400", async () => {
    const u = await newUser();
    const [generated] = await User.generateAccessCodes(1);
    await db().entities.accessCode.patch({ code: generated!.code }).set({ status: "revoked" }).go();
    const res = await call("POST", "/api/auth/redeem-code", { token: u.token, body: { code: generated!.code } });
    expectEnvelope(res, 400, "INVALID_ACCESS_CODE");
  });

  it("a used code is 409 for the next user, who stays pending", async () => {
    const [first, second] = await Promise.all([newUser(), newUser()]);
    const [generated] = await User.generateAccessCodes(1);
    expect((await call("POST", "/api/auth/redeem-code", { token: first.token, body: { code: generated!.code } })).status).toBe(200);

    const res = await call("POST", "/api/auth/redeem-code", { token: second.token, body: { code: generated!.code } });

    expectEnvelope(res, 409, "ACCESS_CODE_REDEEMED");
    expect((await User.get(second.id))?.access_status).toBe("pending");
  });

  it("an already active user redeeming is 409 and the code stays available", async () => {
    process.env.ACCESS_GATING = "false";
    const u = await newUser();
    const [generated] = await User.generateAccessCodes(1);
    const res = await call("POST", "/api/auth/redeem-code", { token: u.token, body: { code: generated!.code } });
    expectEnvelope(res, 409, "ALREADY_ACTIVE");
    const { data } = await db().entities.accessCode.get({ code: generated!.code }).go();
    expect(data?.status).toBe("available");
  });

  it("two users redeeming one code at the same time: exactly one succeeds", async () => {
    const [a, b] = await Promise.all([newUser(), newUser()]);
    const [generated] = await User.generateAccessCodes(1);

    const results = await Promise.all(
      [a, b].map((u) => call("POST", "/api/auth/redeem-code", { token: u.token, body: { code: generated!.code } })),
    );

    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 409]);
    const winner = results[0]!.status === 200 ? a : b;
    const loser = winner === a ? b : a;
    const { data } = await db().entities.accessCode.get({ code: generated!.code }).go();
    expect(data?.redeemed_by).toBe(winner.id);
    expect((await User.get(winner.id))?.access_status).toBe("active");
    expect((await User.get(loser.id))?.access_status).toBe("pending");
  });

  it("active -> suspended: a suspended user can read their profile but nothing else, and cannot redeem", async () => {
    const u = await newUser();
    await db().entities.user.patch({ id: u.id }).set({ access_status: "suspended" }).go();
    const [generated] = await User.generateAccessCodes(1);

    const me = await call("GET", "/api/auth/me", { token: u.token });
    const redeem = await call("POST", "/api/auth/redeem-code", { token: u.token, body: { code: generated!.code } });
    const list = await call("GET", "/api/workspaces", { token: u.token });

    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ access_status: "suspended", has_product_access: false });
    expectEnvelope(redeem, 403, "FORBIDDEN");
    expectEnvelope(list, 403, "FORBIDDEN");
  });

  it("a redeem body without a code is a 422 validation error", async () => {
    const u = await newUser();
    const res = await call("POST", "/api/auth/redeem-code", { token: u.token, body: {} });
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(res.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ loc: ["body", "code"] })]));
  });
});
