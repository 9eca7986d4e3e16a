/**
 * Admin growth (spec 02 "Admin growth", "Waitlist entry and access code"; spec 01 Access status; DESIGN.md section 5)
 * through the real route table and handlers. The file runs on its own table (and the stats test on one more), so
 * totals, join numbers and the per-address rate limit are this file's alone; mail goes to a temporary outbox and the
 * spreadsheet to a temporary CSV.
 */
import { generateKeyPairSync, randomBytes, randomUUID, type KeyObject } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Papa from "papaparse";
import { jwtVerify } from "jose";
import { http, HttpResponse } from "msw";
import { setupServer } from "msw/node";
import type { sheets_v4 } from "@googleapis/sheets";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { SHEETS_SCOPE } from "../../core/growth/sheets";
import { APPROVALS_AT_ONCE } from "../../core/growth";
import { OutboxMailer } from "../../core/mail/outbox";
import { ensureTable } from "../../local/dynamodb";
import { routes } from "../../functions/http/routes";
import type { RouteSpec } from "../../functions/lib/route";
import { accountOf } from "../../core/billing/ledger";
import { dynamoClient } from "../../core/db/client";
import { call, idp, newUser } from "../support/api";
import { storeFails } from "../support/store-faults";
import { expectEnvelope, fillPath, headersOf, withEnv } from "./_helpers";

let dir: string;
const saved = { ...process.env };

/** Point this process at a fresh table (the entities are rebound when TABLE_NAME changes). */
async function freshTable() {
  const name = `r2d-growth-${randomUUID().slice(0, 8)}`;
  await ensureTable(inject("dynamoEndpoint"), name);
  process.env.TABLE_NAME = name;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "r2d-growth-"));
  await freshTable();
  process.env.MAIL_OUTBOX_DIR = join(dir, "outbox");
  process.env.WAITLIST_CSV_PATH = join(dir, "sheets", "waitlist.csv");
  process.env.RATE_LIMIT_WAITLIST_JOIN = "1000/3600";
});
afterAll(async () => {
  for (const key of ["TABLE_NAME", "MAIL_OUTBOX_DIR", "WAITLIST_CSV_PATH", "RATE_LIMIT_WAITLIST_JOIN"]) {
    if (saved[key] === undefined) delete process.env[key];
    else process.env[key] = saved[key];
  }
  await rm(dir, { recursive: true, force: true });
});

const admin = () => newUser({ groups: ["admin"] });
const pendingUser = () => withEnv({ ACCESS_GATING: "true" }, () => newUser());
const email = () => `wl-${randomUUID().slice(0, 8)}@example.com`;
const join_ = (body: Record<string, unknown>) => call("POST", "/api/waitlist", { body });

/** The messages in the outbox sent to `to`: subject and decoded text. */
async function mailTo(to: string) {
  const files = (await readdir(process.env.MAIL_OUTBOX_DIR!).catch(() => [] as string[])).filter((f) => f.endsWith(".eml")).sort();
  const out: { subject: string; text: string }[] = [];
  for (const file of files) {
    const eml = await readFile(join(process.env.MAIL_OUTBOX_DIR!, file), "utf8");
    const [head, body] = eml.split("\r\n\r\n");
    if (!head!.split("\r\n").includes(`To: ${to}`)) continue;
    out.push({ subject: /^Subject: (.*)$/m.exec(head!)![1]!, text: Buffer.from(body!.replace(/\r\n/g, ""), "base64").toString("utf8") });
  }
  return out;
}

async function waitlist(token: string, query: Record<string, string | number> = {}) {
  const res = await call("GET", "/api/admin/plg/waitlist", { token, query: { limit: 200, ...query } });
  expect(res.status, res.text).toBe(200);
  return res.body as { entries: { id: string; email: string; position: number; referral_count: number; status: string }[]; total: number };
}

describe("who may call", () => {
  const adminRoutes = (Object.entries(routes) as [string, RouteSpec][]).filter(([id, r]) => id.startsWith("growth.") && r.access === "admin");

  it("covers every admin growth route", () => {
    expect(adminRoutes.map(([id]) => id).sort()).toEqual(["growth.approve", "growth.codes", "growth.generateCodes", "growth.revokeAccess", "growth.stats", "growth.syncSheets", "growth.waitlist"]);
  });

  it.each(adminRoutes)("%s answers 403 to a signed-in non-admin and 401 without a token", async (_id, r) => {
    const user = await newUser();
    const body = r.body ? { waitlist_entry_ids: [randomUUID()], count: 1 } : undefined;
    expectEnvelope(await call(r.method, fillPath(r.path), { token: user.token, body }), 403, "FORBIDDEN");
    expectEnvelope(await call(r.method, fillPath(r.path), { body }), 401, "UNAUTHORIZED");
  });

  it("an address in ADMIN_EMAILS is an admin without the group", async () => {
    const address = email();
    const token = await idp().sign({ email: address, name: "Listed admin" });
    await withEnv({ ADMIN_EMAILS: `someone@example.com, ${address.toUpperCase()}` }, async () => {
      expect((await call("GET", "/api/admin/plg/stats", { token })).status).toBe(200);
    });
    expectEnvelope(await call("GET", "/api/admin/plg/stats", { token }), 403, "FORBIDDEN");
  });

  it("an address in ADMIN_EMAILS that the provider says is unverified (email_verified false) is no admin", async () => {
    const address = email();
    const token = await idp().sign({ email: address, name: "Claimed admin", email_verified: false });
    await withEnv({ ADMIN_EMAILS: address }, async () => {
      expectEnvelope(await call("GET", "/api/admin/plg/stats", { token }), 403, "FORBIDDEN");
    });
  });

  it("admin routes share one window per admin (RATE_LIMIT_ADMIN_PLG; 60 a minute by default): 429 with Retry-After past it", async () => {
    const { token } = await admin();
    await withEnv({ RATE_LIMIT_ADMIN_PLG: "3/86400" }, async () => {
      expect((await call("GET", "/api/admin/plg/stats", { token })).status).toBe(200);
      expect((await call("GET", "/api/admin/plg/codes", { token })).status).toBe(200);
      expect((await call("GET", "/api/admin/plg/waitlist", { token })).status).toBe(200);
      const limited = await call("GET", "/api/admin/plg/stats", { token });
      expectEnvelope(limited, 429, "RATE_LIMITED");
      expect(Number(headersOf(limited)["retry-after"])).toBeGreaterThan(0);
    });
  });
});

describe("POST /api/waitlist", () => {
  it("answers a new and an already listed address identically, and lists the address once", async () => {
    const { token } = await admin();
    const address = email();
    const before = (await waitlist(token)).total;
    const first = await join_({ email: address, name: "Ada", source: "newsletter" });
    const again = await join_({ email: address.toUpperCase(), name: "Someone else" });
    expect(first.status).toBe(202);
    expect(again.status).toBe(first.status);
    expect(again.body).toEqual(first.body);
    const list = await waitlist(token);
    expect(list.total).toBe(before + 1);
    expect(list.entries.filter((e) => e.email === address)).toHaveLength(1);
    expect(await mailTo(address)).toHaveLength(1); // the confirmation goes to a new address only
  });

  it("counts referrals: joining with a listed entry's code raises its referral_count, once per new address", async () => {
    const { token } = await admin();
    const referrer = email();
    await join_({ email: referrer });
    const code = /referral code with colleagues: (\w+)/.exec((await mailTo(referrer))[0]!.text)![1]!;
    const friend = email();
    await join_({ email: friend, referral_code: code.toLowerCase() });
    await join_({ email: friend, referral_code: code }); // already listed: counts nothing
    await join_({ email: email(), referral_code: "NOSUCHCODE" }); // unknown code: ignored
    const entries = (await waitlist(token)).entries;
    expect(entries.find((e) => e.email === referrer)!.referral_count).toBe(1);
    expect(entries.find((e) => e.email === friend)!.referral_count).toBe(0);
  });

  it("refuses a malformed address (422) and limits each client address (429 with Retry-After)", async () => {
    expectEnvelope(await join_({ email: "not-an-address" }), 422, "VALIDATION_ERROR");
    expectEnvelope(await join_({ name: "No address" }), 422, "VALIDATION_ERROR");
    await withEnv({ RATE_LIMIT_WAITLIST_JOIN: "2/86400" }, async () => {
      expect((await join_({ email: email() })).status).toBe(202);
      expect((await join_({ email: email() })).status).toBe(202);
      const limited = await join_({ email: email() });
      expectEnvelope(limited, 429, "RATE_LIMITED");
      expect(Number(headersOf(limited)["retry-after"])).toBeGreaterThan(0);
    });
  });
});

describe("GET /api/admin/plg/waitlist", () => {
  it("lists waiting entries by default in join order, with limit, offset and total", async () => {
    const { token } = await admin();
    const mine = [email(), email(), email()];
    for (const address of mine) await join_({ email: address });
    const all = await waitlist(token);
    expect(all.entries.every((e) => e.status === "waiting")).toBe(true);
    const positions = all.entries.map((e) => e.position);
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    expect(new Set(positions).size).toBe(positions.length);
    const ours = all.entries.filter((e) => mine.includes(e.email));
    expect(ours.map((e) => e.email)).toEqual(mine);
    const page = await waitlist(token, { limit: 2, offset: 1 });
    expect(page.total).toBe(all.total);
    expect(page.entries.map((e) => e.id)).toEqual(all.entries.slice(1, 3).map((e) => e.id));
  });

  it("refuses bad filters and pages with 422", async () => {
    const { token } = await admin();
    for (const query of [{ status: "gone" }, { limit: 0 }, { limit: 201 }, { offset: -1 }]) {
      expectEnvelope(await call("GET", "/api/admin/plg/waitlist", { token, query }), 422, "VALIDATION_ERROR");
    }
  });
});

describe("POST /api/admin/plg/waitlist/approve", () => {
  it("approves waiting entries: a code each, an invitation e-mail each, counts; the code is redeemable", async () => {
    const { token } = await admin();
    const [a, b] = [email(), email()];
    await join_({ email: a });
    await join_({ email: b });
    const ids = (await waitlist(token)).entries.filter((e) => e.email === a || e.email === b).map((e) => e.id);
    const res = await call("POST", "/api/admin/plg/waitlist/approve", { token, body: { waitlist_entry_ids: [...ids, randomUUID()] } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ approved_count: 2, codes_generated: 2, emails_sent: 2 });

    const invite = (await mailTo(a)).find((m) => m.subject.includes("invitation"))!;
    const code = /access code: (\w+)/.exec(invite.text)![1]!;
    const approved = await waitlist(token, { status: "approved" });
    expect(approved.entries.filter((e) => ids.includes(e.id)).map((e) => e.status)).toEqual(["approved", "approved"]);
    expect((await waitlist(token)).entries.some((e) => ids.includes(e.id))).toBe(false);

    const user = await pendingUser();
    const redeemed = await call("POST", "/api/auth/redeem-code", { token: user.token, body: { code } });
    expect(redeemed.status, redeemed.text).toBe(200);
    expect(redeemed.body.access_status).toBe("active");
    const codes = (await call("GET", "/api/admin/plg/codes", { token, query: { status: "redeemed" } })).body.codes as { code: string; redeemed_by_email: string }[];
    expect(codes.find((c) => c.code === code)?.redeemed_by_email).toBe(user.email);

    // approving again changes nothing and sends nothing
    const again = await call("POST", "/api/admin/plg/waitlist/approve", { token, body: { waitlist_entry_ids: ids } });
    expect(again.body).toEqual({ approved_count: 0, codes_generated: 0, emails_sent: 0 });
    expect((await mailTo(a)).filter((m) => m.subject.includes("invitation"))).toHaveLength(1);
  });

  it("approves and invites several entries at once (at most APPROVALS_AT_ONCE), so 100 ids fit the function's time", async () => {
    const { token } = await admin();
    const addresses = Array.from({ length: 12 }, () => email());
    for (const address of addresses) await join_({ email: address });
    const ids = (await waitlist(token, { limit: "100" })).entries.filter((e) => addresses.includes(e.email)).map((e) => e.id);
    expect(ids).toHaveLength(12);
    // Each invitation takes 100 ms to send, as an SES call from Lambda may.
    let inFlight = 0;
    let most = 0;
    const send = vi.spyOn(OutboxMailer.prototype, "send").mockImplementation(async function (this: OutboxMailer, message) {
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((r) => setTimeout(r, 100));
      inFlight--;
      return { id: `sent-${message.to}` };
    });
    let res;
    try {
      res = await call("POST", "/api/admin/plg/waitlist/approve", { token, body: { waitlist_entry_ids: ids } });
    } finally {
      send.mockRestore();
    }
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ approved_count: 12, codes_generated: 12, emails_sent: 12 });
    expect(most).toBeGreaterThan(1);
    expect(most).toBeLessThanOrEqual(APPROVALS_AT_ONCE);
  });

  it("one entry failing does not leave the others running unanswered: each ends (approved and invited) before the error", async () => {
    const { token } = await admin();
    const addresses = Array.from({ length: 6 }, () => email());
    for (const address of addresses) await join_({ email: address });
    const ids = (await waitlist(token, { limit: "100" })).entries.filter((e) => addresses.includes(e.email)).map((e) => e.id);
    // The first entry's approval fails for good (its transaction names its address).
    const fault = storeFails(/^TransactWrite/, addresses[0]!);
    let res;
    try {
      res = await call("POST", "/api/admin/plg/waitlist/approve", { token, body: { waitlist_entry_ids: ids } });
    } finally {
      fault.remove();
    }
    expect(res.status).toBe(500);
    // When the error was answered, every other entry was approved and its invitation sent (none still in flight).
    const approved = (await waitlist(token, { status: "approved", limit: "100" })).entries.filter((e) => addresses.includes(e.email));
    expect(approved.map((e) => e.email).sort()).toEqual(addresses.slice(1).sort());
    for (const address of addresses.slice(1)) expect((await mailTo(address)).filter((m) => m.subject.includes("invitation"))).toHaveLength(1);
  });

  it("an invitation sent whose invited_at write fails is still counted as sent (emails_sent), not reported unsent", async () => {
    const { token } = await admin();
    const address = email();
    await join_({ email: address });
    const id = (await waitlist(token)).entries.find((e) => e.email === address)!.id;
    const fault = storeFails(/UpdateItem/, "invited_at");
    let res;
    try {
      res = await call("POST", "/api/admin/plg/waitlist/approve", { token, body: { waitlist_entry_ids: [id] } });
    } finally {
      fault.remove();
    }
    expect(fault.failed()).toBeGreaterThan(0);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ approved_count: 1, codes_generated: 1, emails_sent: 1 });
    expect((await mailTo(address)).filter((m) => m.subject.includes("invitation"))).toHaveLength(1);
  });

  it("with SES chosen but no MAIL_FROM: 503 naming it, and nothing is approved", async () => {
    const { token } = await admin();
    const address = email();
    await join_({ email: address });
    const id = (await waitlist(token)).entries.find((e) => e.email === address)!.id;
    const res = await withEnv({ MAIL_ENGINE: "ses", MAIL_FROM: undefined }, () =>
      call("POST", "/api/admin/plg/waitlist/approve", { token, body: { waitlist_entry_ids: [id] } }),
    );
    expectEnvelope(res, 503, "SERVICE_UNAVAILABLE");
    expect(res.body.detail).toContain("MAIL_FROM");
    expect((await waitlist(token)).entries.find((e) => e.id === id)?.status).toBe("waiting");
  });

  it("refuses an empty or malformed id list (422)", async () => {
    const { token } = await admin();
    for (const body of [{ waitlist_entry_ids: [] }, { waitlist_entry_ids: ["nope"] }, {}]) {
      expectEnvelope(await call("POST", "/api/admin/plg/waitlist/approve", { token, body }), 422, "VALIDATION_ERROR");
    }
  });
});

describe("access codes", () => {
  it("generates codes with metadata and lists them newest first", async () => {
    const { token } = await admin();
    const res = await call("POST", "/api/admin/plg/codes/generate", { token, body: { count: 3, metadata: { trial_days: 30, campaign: "launch" } } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.count).toBe(3);
    expect(res.body.codes).toHaveLength(3);
    for (const c of res.body.codes) expect(c.metadata).toEqual({ trial_days: 30, campaign: "launch" });
    const list = await call("GET", "/api/admin/plg/codes", { token, query: { status: "available", limit: 200 } });
    expect(list.status).toBe(200);
    const made = new Set(res.body.codes.map((c: { code: string }) => c.code));
    const listed = (list.body.codes as { id: string; code: string; status: string; metadata: unknown }[]).filter((c) => made.has(c.code));
    expect(listed).toHaveLength(3);
    for (const c of listed) expect(c).toMatchObject({ status: "available", metadata: { trial_days: 30, campaign: "launch" }, id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
  });

  it("GET /codes without limit answers every code (spec 02 {codes, total}); limit and offset page", async () => {
    const { token } = await admin();
    expect((await call("POST", "/api/admin/plg/codes/generate", { token, body: { count: 60, metadata: { campaign: "all of them" } } })).status).toBe(200);
    const all = await call("GET", "/api/admin/plg/codes", { token });
    expect(all.status, all.text.slice(0, 300)).toBe(200);
    expect(all.body.total).toBeGreaterThanOrEqual(60);
    expect(all.body.codes).toHaveLength(all.body.total);
    const page = await call("GET", "/api/admin/plg/codes", { token, query: { limit: 10, offset: 5 } });
    expect(page.body.codes.map((c: { code: string }) => c.code)).toEqual(all.body.codes.slice(5, 15).map((c: { code: string }) => c.code));
    expect(page.body.total).toBe(all.body.total);
  });

  it("refuses bad counts and metadata (422)", async () => {
    const { token } = await admin();
    const bad = [
      { count: 0 }, { count: 501 }, { count: 1.5 }, {},
      { count: 1, metadata: { trial_days: 0 } }, { count: 1, metadata: { trial_credits: 0.3 } }, { count: 1, metadata: { trial_credits: -1 } },
      { count: 1, metadata: "x" },
    ];
    for (const body of bad) expectEnvelope(await call("POST", "/api/admin/plg/codes/generate", { token, body }), 422, "VALIDATION_ERROR");
    const proto = await call("POST", "/api/admin/plg/codes/generate", { token, raw: { data: '{"count":1,"metadata":{"__proto__":{"x":1}}}', contentType: "application/json" } });
    expectEnvelope(proto, 422, "VALIDATION_ERROR");
  });

  it("honours trial_days and trial_credits when redeemed", async () => {
    const { token } = await admin();
    const gen = await call("POST", "/api/admin/plg/codes/generate", { token, body: { count: 1, metadata: { trial_days: 30, trial_credits: 10 } } });
    const code = gen.body.codes[0].code as string;
    const user = await pendingUser();
    const before = Date.now();
    const res = await call("POST", "/api/auth/redeem-code", { token: user.token, body: { code } });
    expect(res.status, res.text).toBe(200);
    const account = await accountOf(user.id);
    // the signup milestone (5) plus the code's 10
    expect(account.quota_granted).toBe(15);
    const end = Date.parse(account.period_end);
    expect(end).toBeGreaterThanOrEqual(before + 30 * 86_400_000 - 5_000);
    expect(end).toBeLessThanOrEqual(Date.now() + 30 * 86_400_000 + 5_000);
    const sub = await call("GET", "/api/billing/subscription", { token: user.token, query: { workspace_id: (await call("POST", "/api/workspaces", { token: user.token, body: { name: "Trial" } })).body.id } });
    expect(sub.status, sub.text).toBe(200);
    expect(sub.body.trial_ends_at).toBe(account.period_end);
  });

  it("a redemption whose credit grant failed after the code was taken: the redeemer's retry is refused but grants the credits, once", async () => {
    const { token } = await admin();
    const code = (await call("POST", "/api/admin/plg/codes/generate", { token, body: { count: 1, metadata: { trial_credits: 10 } } })).body.codes[0].code as string;
    const user = await pendingUser();
    const name = "grantFails";
    let failed = false;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (!failed && /TransactWrite/.test(String(context.commandName)) && JSON.stringify(args.input).includes(`access-code#${code}`)) {
          failed = true;
          throw Object.assign(new Error("throttled"), { name: "ThrottlingException", $metadata: { httpStatusCode: 400 } });
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    try {
      expect((await call("POST", "/api/auth/redeem-code", { token: user.token, body: { code } })).status).toBe(500);
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(failed).toBe(true);
    expect((await accountOf(user.id)).quota_granted).toBe(5);
    expectEnvelope(await call("POST", "/api/auth/redeem-code", { token: user.token, body: { code } }), 409, "ALREADY_ACTIVE");
    expect((await accountOf(user.id)).quota_granted).toBe(15);
    expectEnvelope(await call("POST", "/api/auth/redeem-code", { token: user.token, body: { code } }), 409, "ALREADY_ACTIVE");
    expect((await accountOf(user.id)).quota_granted).toBe(15);
  });

  it("a code without metadata leaves the default trial (TRIAL_DAYS) and credits", async () => {
    const { token } = await admin();
    const code = (await call("POST", "/api/admin/plg/codes/generate", { token, body: { count: 1 } })).body.codes[0].code as string;
    const user = await pendingUser();
    expect((await call("POST", "/api/auth/redeem-code", { token: user.token, body: { code } })).status).toBe(200);
    const account = await accountOf(user.id);
    expect(account.quota_granted).toBe(5);
    expect(Date.parse(account.period_end) - Date.parse(account.period_start)).toBe(14 * 86_400_000);
  });
});

describe("POST /api/admin/plg/sync-sheets", () => {
  it("locally writes the waitlist as a CSV with a header and one row per entry, in join order", async () => {
    const { token } = await admin();
    await join_({ email: email(), name: "Comma, Quote \"Q\"" });
    const res = await call("POST", "/api/admin/plg/sync-sheets", { token });
    expect(res.status, res.text).toBe(200);
    const waiting = await waitlist(token);
    const approved = await waitlist(token, { status: "approved" });
    expect(res.body).toEqual({ status: "synced", synced_count: waiting.total + approved.total });
    const rows = Papa.parse<string[]>((await readFile(process.env.WAITLIST_CSV_PATH!, "utf8")).trim()).data;
    expect(rows[0]).toEqual(["id", "email", "name", "position", "referral_count", "status", "source", "created_at", "approved_at", "invited_at"]);
    expect(rows).toHaveLength(1 + res.body.synced_count);
    const positions = rows.slice(1).map((r) => Number(r[3]));
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    expect(rows.some((r) => r[2] === 'Comma, Quote "Q"')).toBe(true);
    // Syncs at once each write a whole file (each its own temporary name): none fails on another's rename.
    const together = await Promise.all(Array.from({ length: 4 }, () => call("POST", "/api/admin/plg/sync-sheets", { token })));
    expect(together.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(Papa.parse<string[]>((await readFile(process.env.WAITLIST_CSV_PATH!, "utf8")).trim()).data).toHaveLength(1 + res.body.synced_count);
  });

  it("in a deployed stage without the spreadsheet settings (unset or `none`): 503 naming them; a key that is not a service-account key: 503 naming it", async () => {
    const { token } = await admin();
    const unset = await withEnv({ STAGE: "prod", GOOGLE_SHEETS_ID: undefined, GOOGLE_SHEETS_CREDENTIALS: undefined }, () => call("POST", "/api/admin/plg/sync-sheets", { token }));
    expectEnvelope(unset, 503, "SERVICE_UNAVAILABLE");
    expect(unset.body.detail).toContain("GOOGLE_SHEETS_ID");
    expect(unset.body.detail).toContain("GOOGLE_SHEETS_CREDENTIALS");
    const none = await withEnv({ STAGE: "prod", GOOGLE_SHEETS_ID: "sheet", GOOGLE_SHEETS_CREDENTIALS: "none" }, () => call("POST", "/api/admin/plg/sync-sheets", { token }));
    expectEnvelope(none, 503, "SERVICE_UNAVAILABLE");
    expect(none.body.settings).toEqual(["GOOGLE_SHEETS_CREDENTIALS"]);
    for (const bad of ["{}", "not json", JSON.stringify({ client_email: "x@y.test", private_key: "secret-but-not-a-key" })]) {
      const res = await withEnv({ STAGE: "prod", GOOGLE_SHEETS_ID: "sheet", GOOGLE_SHEETS_CREDENTIALS: bad }, () => call("POST", "/api/admin/plg/sync-sheets", { token }));
      expectEnvelope(res, 503, "SERVICE_UNAVAILABLE");
      expect(res.body.detail).toContain("GOOGLE_SHEETS_CREDENTIALS");
      expect(res.text).not.toContain("secret-but-not-a-key");
    }
  });
});

/**
 * A stand-in Google (msw at the HTTP layer, where `@googleapis/sheets` and google-auth-library send their requests):
 * the OAuth token endpoint of a service account's JWT grant (the assertion's signature checked with the account's
 * public key) and the three Sheets v4 calls of the sync, with bodies typed by the SDK's own `sheets_v4` types. Any
 * other request to Google fails the test, so nothing reaches the real service.
 */
class SheetsStandIn {
  readonly email = `waitlist-sync@r2d-test.iam.gserviceaccount.test`;
  readonly spreadsheetId = `1AbC${randomBytes(12).toString("hex")}`;
  readonly keys = generateKeyPairSync("rsa", { modulusLength: 2048 });
  /** The first sheet's title (quotes included: it must be quoted in A1 ranges) and a second sheet that is left alone. */
  readonly sheets = [{ sheetId: 0, title: "Wait'list", index: 0, values: [] as string[][] }, { sheetId: 7, title: "Notes", index: 1, values: [["keep me"]] }];
  readonly requests: { method: string; path: string; query: string; status: number }[] = [];
  readonly issued = new Set<string>();
  unexpected: string[] = [];
  failure: { match: RegExp; status: number; headers?: Record<string, string> } | undefined;

  credentials(privateKey: KeyObject = this.keys.privateKey): string {
    return JSON.stringify({
      type: "service_account", project_id: "r2d-test", private_key_id: "k1", client_email: this.email, client_id: "1234567890",
      private_key: privateKey.export({ type: "pkcs8", format: "pem" }), token_uri: "https://oauth2.googleapis.com/token",
    });
  }

  handlers() {
    const log = (request: Request, status: number) => {
      const u = new URL(request.url);
      this.requests.push({ method: request.method, path: decodeURIComponent(u.pathname), query: u.search, status });
    };
    const googleError = (status: number, message: string, reason: string) => HttpResponse.json({ error: { code: status, message, status: reason } }, { status });
    return [
      http.post("https://oauth2.googleapis.com/token", async ({ request }) => {
        const form = new URLSearchParams(await request.text());
        if (form.get("grant_type") !== "urn:ietf:params:oauth:grant-type:jwt-bearer") return HttpResponse.json({ error: "unsupported_grant_type" }, { status: 400 });
        try {
          const { payload } = await jwtVerify(form.get("assertion") ?? "", this.keys.publicKey, { issuer: this.email, audience: "https://oauth2.googleapis.com/token" });
          if (payload.scope !== SHEETS_SCOPE) return HttpResponse.json({ error: "invalid_scope", error_description: `unexpected scope ${String(payload.scope)}` }, { status: 400 });
        } catch {
          log(request, 400);
          return HttpResponse.json({ error: "invalid_grant", error_description: "Invalid JWT Signature." }, { status: 400 });
        }
        const token = `ya29.c.${randomBytes(24).toString("hex")}`;
        this.issued.add(token);
        log(request, 200);
        return HttpResponse.json({ access_token: token, expires_in: 3599, token_type: "Bearer" });
      }),
      http.all("https://sheets.googleapis.com/*", async ({ request }) => {
        const u = new URL(request.url);
        const path = decodeURIComponent(u.pathname);
        const key = `${request.method} ${path}`;
        if (!this.issued.has(request.headers.get("authorization")?.replace(/^Bearer /, "") ?? "")) {
          log(request, 401);
          return googleError(401, "Request had invalid authentication credentials.", "UNAUTHENTICATED");
        }
        if (this.failure?.match.test(key)) {
          const { status, headers } = this.failure;
          this.failure = undefined;
          log(request, status);
          return HttpResponse.json({ error: { code: status, message: status === 403 ? "The caller does not have permission" : "Quota exceeded", status: status === 403 ? "PERMISSION_DENIED" : "RESOURCE_EXHAUSTED" } }, { status, headers });
        }
        const base = `/v4/spreadsheets/${this.spreadsheetId}`;
        const sheetOf = (range: string) => {
          const m = /^'((?:[^']|'')*)'(?:!A1)?$/.exec(range);
          return m ? this.sheets.find((s) => s.title === m[1]!.replace(/''/g, "'")) : undefined;
        };
        if (!path.startsWith(base)) {
          log(request, 404);
          return googleError(404, "Requested entity was not found.", "NOT_FOUND");
        }
        const rest = path.slice(base.length);
        if (request.method === "GET" && rest === "") {
          log(request, 200);
          const answer: sheets_v4.Schema$Spreadsheet = { sheets: this.sheets.map(({ sheetId, title, index }) => ({ properties: { sheetId, title, index } })) };
          return HttpResponse.json(answer);
        }
        const clear = /^\/values\/(.+):clear$/.exec(rest);
        if (request.method === "POST" && clear) {
          const sheet = sheetOf(clear[1]!);
          if (!sheet) return (log(request, 400), googleError(400, `Unable to parse range: ${clear[1]}`, "INVALID_ARGUMENT"));
          sheet.values = [];
          log(request, 200);
          const answer: sheets_v4.Schema$ClearValuesResponse = { spreadsheetId: this.spreadsheetId, clearedRange: `${clear[1]}!A1:Z1000` };
          return HttpResponse.json(answer);
        }
        const update = /^\/values\/(.+)$/.exec(rest);
        if (request.method === "PUT" && update) {
          const body = (await request.json()) as sheets_v4.Schema$ValueRange;
          const sheet = sheetOf(update[1]!);
          if (!sheet || u.searchParams.get("valueInputOption") !== "RAW" || body.majorDimension !== "ROWS" || !body.values?.every((r) => r.every((v) => typeof v === "string"))) {
            this.unexpected.push(`${key}${u.search} ${JSON.stringify(body).slice(0, 200)}`);
            return (log(request, 400), googleError(400, "Invalid values", "INVALID_ARGUMENT"));
          }
          sheet.values = body.values as string[][];
          log(request, 200);
          const answer: sheets_v4.Schema$UpdateValuesResponse = { spreadsheetId: this.spreadsheetId, updatedRange: update[1], updatedRows: body.values.length, updatedColumns: body.values[0]?.length ?? 0, updatedCells: body.values.flat().length };
          return HttpResponse.json(answer);
        }
        this.unexpected.push(key);
        log(request, 400);
        return googleError(400, "unexpected request", "INVALID_ARGUMENT");
      }),
      // Anything else addressed to Google: never let it reach the real service.
      http.all(/^https:\/\/[^/]*\.googleapis\.com\//, ({ request }) => {
        this.unexpected.push(`${request.method} ${request.url}`);
        return HttpResponse.json({ error: { code: 400, message: "not in the stand-in" } }, { status: 400 });
      }),
    ];
  }
}

describe("POST /api/admin/plg/sync-sheets in a deployed stage (Google Sheets)", () => {
  const google = new SheetsStandIn();
  const server = setupServer(...google.handlers());
  beforeAll(() => server.listen({ onUnhandledFrame: "bypass" }));
  afterAll(() => server.close());
  const deployed = <T>(fn: () => Promise<T>, credentials = google.credentials()) =>
    withEnv({ STAGE: "prod", GOOGLE_SHEETS_ID: google.spreadsheetId, GOOGLE_SHEETS_CREDENTIALS: credentials }, fn);

  it("signs in as the service account and replaces the first sheet's values with the header and one row per entry, as RAW text", async () => {
    const { token } = await admin();
    await join_({ email: email(), name: "=HYPERLINK(\"https://evil.test\")" });
    // What the sheet held before: more rows than the waitlist has, all of them replaced.
    google.sheets[0]!.values = Array.from({ length: 400 }, (_, i) => [`stale ${i}`, "x", "y"]);
    const mark = google.requests.length;
    const res = await deployed(() => call("POST", "/api/admin/plg/sync-sheets", { token }));
    expect(res.status, res.text).toBe(200);
    expect(google.unexpected).toEqual([]);
    const waiting = await waitlist(token);
    const approved = await waitlist(token, { status: "approved" });
    expect(res.body).toEqual({ status: "synced", synced_count: waiting.total + approved.total });
    const rows = google.sheets[0]!.values;
    expect(rows[0]).toEqual(["id", "email", "name", "position", "referral_count", "status", "source", "created_at", "approved_at", "invited_at"]);
    expect(rows).toHaveLength(1 + res.body.synced_count);
    expect(rows.some((r) => r.includes("stale 0"))).toBe(false);
    // RAW: a name that looks like a formula is written as the text it is.
    expect(rows.some((r) => r[2] === "=HYPERLINK(\"https://evil.test\")")).toBe(true);
    // The same rows the local CSV gets, where a formula-like cell is marked as text (a leading ').
    const local = await call("POST", "/api/admin/plg/sync-sheets", { token });
    expect(local.status).toBe(200);
    const csv = Papa.parse<string[]>((await readFile(process.env.WAITLIST_CSV_PATH!, "utf8")).trim()).data;
    expect(csv).toEqual(rows.map((r) => r.map((cell) => (/^[=+\-@\t\r]/.test(cell) ? `'${cell}` : cell))));
    expect(csv.some((r) => r[2] === "'=HYPERLINK(\"https://evil.test\")")).toBe(true);
    // The other sheet is left alone; the calls were: a token, the spreadsheet's sheets, clear, update.
    expect(google.sheets[1]!.values).toEqual([["keep me"]]);
    expect(google.requests.slice(mark).map((r) => `${r.method} ${r.path.replace(google.spreadsheetId, "ID")} ${r.status}`)).toEqual([
      "POST /token 200",
      "GET /v4/spreadsheets/ID 200",
      "POST /v4/spreadsheets/ID/values/'Wait''list':clear 200",
      "PUT /v4/spreadsheets/ID/values/'Wait''list'!A1 200",
    ]);
    expect(google.requests[mark + 1]!.query).toContain("fields=");
  });

  it("a refused key, an unshared spreadsheet and Google's rate limit answer in the envelope: 503 naming what to fix, 429 with Google's wait", async () => {
    const { token } = await admin();
    const other = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey;
    const refused = await deployed(() => call("POST", "/api/admin/plg/sync-sheets", { token }), google.credentials(other));
    expectEnvelope(refused, 503, "SERVICE_UNAVAILABLE");
    expect(refused.body.detail).toContain("GOOGLE_SHEETS_CREDENTIALS");
    expect(refused.body.detail).toContain("invalid_grant");
    expect(refused.text).not.toContain("PRIVATE KEY");

    google.failure = { match: /^GET /, status: 403 };
    const unshared = await deployed(() => call("POST", "/api/admin/plg/sync-sheets", { token }));
    expectEnvelope(unshared, 503, "SERVICE_UNAVAILABLE");
    expect(unshared.body.detail).toContain(`share the spreadsheet with ${google.email}`);

    google.failure = { match: /:clear$/, status: 429, headers: { "retry-after": "17" } };
    const limited = await deployed(() => call("POST", "/api/admin/plg/sync-sheets", { token }));
    expectEnvelope(limited, 429, "RATE_LIMITED");
    expect(limited.headers["retry-after"]).toBe("17");
    expect(google.unexpected).toEqual([]);
  });
});

describe("POST /api/admin/plg/users/{user_id}/revoke-access", () => {
  it("moves active to suspended; the suspended user is refused, except their own profile", async () => {
    const { token } = await admin();
    const user = await newUser();
    expect((await call("GET", "/api/workspaces", { token: user.token })).status).toBe(200);
    const res = await call("POST", `/api/admin/plg/users/${user.id}/revoke-access`, { token });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: user.id, access_status: "suspended", has_product_access: false });
    expectEnvelope(await call("GET", "/api/workspaces", { token: user.token }), 403, "FORBIDDEN");
    expectEnvelope(await call("POST", "/api/workspaces", { token: user.token, body: { name: "Nope" } }), 403, "FORBIDDEN");
    expect((await call("GET", "/api/auth/me", { token: user.token })).body.access_status).toBe("suspended");
    // suspended is terminal
    const again = await call("POST", `/api/admin/plg/users/${user.id}/revoke-access`, { token });
    expectEnvelope(again, 422, "INVALID_TRANSITION");
    expect(again.body.valid_transitions).toEqual([]);
  });

  it("refuses a pending user (422 naming the valid move) and an unknown one (404)", async () => {
    const { token } = await admin();
    const pending = await pendingUser();
    const res = await call("POST", `/api/admin/plg/users/${pending.id}/revoke-access`, { token });
    expectEnvelope(res, 422, "INVALID_TRANSITION");
    expect(res.body.valid_transitions).toEqual(["active"]);
    expectEnvelope(await call("POST", `/api/admin/plg/users/${randomUUID()}/revoke-access`, { token }), 404, "USER_NOT_FOUND");
    expectEnvelope(await call("POST", "/api/admin/plg/users/not-a-uuid/revoke-access", { token }), 422, "VALIDATION_ERROR");
  });
});

describe("GET /api/admin/plg/stats", () => {
  it("matches figures computed by hand from seeded data", async () => {
    const outer = process.env.TABLE_NAME;
    await freshTable();
    try {
      const { token } = await admin(); // active user 1
      const seeded = [email(), email(), email(), email(), email()];
      for (const address of seeded) await join_({ email: address });
      const ids = (await waitlist(token)).entries.map((e) => e.id);
      await call("POST", "/api/admin/plg/waitlist/approve", { token, body: { waitlist_entry_ids: ids.slice(0, 3) } });
      const invites = await Promise.all(seeded.slice(0, 3).map(async (a) => /access code: (\w+)/.exec((await mailTo(a)).at(-1)!.text)![1]!));
      const extra = (await call("POST", "/api/admin/plg/codes/generate", { token, body: { count: 2 } })).body.codes.map((c: { code: string }) => c.code);
      // two invitations and one extra code redeemed: active users 2, 3, 4
      for (const code of [invites[0], invites[1], extra[0]]) {
        const user = await pendingUser();
        expect((await call("POST", "/api/auth/redeem-code", { token: user.token, body: { code } })).status).toBe(200);
      }
      await pendingUser(); // pending: not active
      const revoked = await newUser(); // active, then suspended: not active
      await call("POST", `/api/admin/plg/users/${revoked.id}/revoke-access`, { token });

      const res = await call("GET", "/api/admin/plg/stats", { token });
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual({
        total_waitlist: 5,
        total_approved: 3,
        total_codes_generated: 5,
        total_codes_redeemed: 3,
        total_active_users: 4,
        conversion_rate: 0.6667, // 2 of the 3 approved entries' codes redeemed
      });
    } finally {
      process.env.TABLE_NAME = outer;
    }
  });

  it("counts an entry approved between its reads of the waiting and the approved lists once", async () => {
    const outer = process.env.TABLE_NAME;
    await freshTable();
    const name = `approvedBetween-${randomUUID()}`;
    try {
      const { token } = await admin();
      const seeded = [email(), email(), email()];
      for (const address of seeded) await join_({ email: address });
      const [first] = (await waitlist(token)).entries.map((e) => e.id);
      let approvedBetween = false;
      dynamoClient().middlewareStack.add(
        (next, context) => async (args) => {
          if (!approvedBetween && /^Query/.test(context.commandName ?? "") && JSON.stringify(args.input).includes("waitlist#status#approved")) {
            approvedBetween = true;
            const res = await call("POST", "/api/admin/plg/waitlist/approve", { token, body: { waitlist_entry_ids: [first] } });
            expect(res.body.approved_count).toBe(1);
          }
          return next(args);
        },
        { step: "initialize", name },
      );
      const res = await call("GET", "/api/admin/plg/stats", { token });
      dynamoClient().middlewareStack.remove(name);
      expect(approvedBetween).toBe(true);
      expect(res.body).toMatchObject({ total_waitlist: 3, total_approved: 1 });
    } finally {
      dynamoClient().middlewareStack.remove(name);
      process.env.TABLE_NAME = outer;
    }
  });
});
