/**
 * Billing, Stripe-facing POSTs over HTTP (spec 02 Billing: checkout, portal, boost checkout; DESIGN.md 6.3): the real
 * `stripe` SDK talks to a local fake of the Stripe API (test/support/stripe-fake.ts) that records the form-encoded
 * requests and answers with bodies typed by the SDK's own types. Checked: what is sent to Stripe (mode, prices,
 * customer, metadata, return URLs), what the routes answer, one customer per account, 503 naming the setting while
 * Stripe is not configured, the roles, and 422s for bad input.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { db } from "../../core/db/service";
import { call, newUser, newWorkspace } from "../support/api";
import { setAccount } from "../support/billing";
import { startStripeFake, type StripeFake } from "../support/stripe-fake";
import { expectEnvelope, withEnv } from "./_helpers";

const PRICES = {
  STRIPE_PRICE_PRO_MONTHLY: "price_pro_monthly",
  STRIPE_PRICE_PRO_YEARLY: "price_pro_yearly",
  STRIPE_PRICE_GROWTH_MONTHLY: "price_growth_monthly",
  STRIPE_PRICE_GROWTH_YEARLY: "price_growth_yearly",
};
const KEY = "sk_test_checkout_fake";

type Person = { id: string; token: string; email: string };
let stripe: StripeFake;
let owner: Person;
let admin: Person;
let member: Person;
let outsider: Person;
let workspaceId: string;

const post = (path: string, body: unknown, token = owner.token) => call("POST", `/api/billing/${path}`, { token, body });

async function addMember(wsId: string, ownerToken: string, role: "admin" | "member") {
  const user = await newUser();
  const res = await call("POST", `/api/workspaces/${wsId}/members`, { token: ownerToken, body: { email: user.email, role } });
  expect(res.status, res.text).toBe(201);
  return user;
}

const customerIdOf = async (userId: string) =>
  (await db().entities.billingAccount.get({ user_id: userId }).go({ consistent: true })).data?.stripe_customer_id;

beforeAll(async () => {
  stripe = await startStripeFake();
  Object.assign(process.env, PRICES, { STRIPE_SECRET_KEY: KEY, STRIPE_API_BASE: stripe.base, APP_URL: "https://app.example.com/" });
  const w = await newWorkspace("Checkout");
  owner = w.owner;
  workspaceId = w.workspace.id;
  admin = await addMember(workspaceId, owner.token, "admin");
  member = await addMember(workspaceId, owner.token, "member");
  outsider = await newUser();
});

afterAll(async () => {
  await stripe.close();
});

beforeEach(() => stripe.reset());

describe("POST /api/billing/checkout", () => {
  it("creates the owner's customer once, then a subscription Checkout Session at the plan's price with metadata", async () => {
    const res = await post("checkout", {
      workspace_id: workspaceId, plan: "pro", interval: "monthly",
      success_url: "https://app.example.com/done?s={CHECKOUT_SESSION_ID}", cancel_url: "https://app.example.com/back",
    });
    expect(res.status, res.text).toBe(200);

    const customers = stripe.to("/v1/customers");
    expect(customers).toHaveLength(1);
    expect(customers[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(customers[0]!.form.get("email")).toBe(owner.email);
    expect(customers[0]!.form.get("metadata[user_id]")).toBe(owner.id);
    const customerId = await customerIdOf(owner.id);
    expect(customerId).toMatch(/^cus_fake/);

    const sessions = stripe.posted("/v1/checkout/sessions");
    expect(sessions).toHaveLength(1);
    const form = sessions[0]!.form;
    expect(Object.fromEntries(form)).toMatchObject({
      mode: "subscription",
      customer: customerId,
      client_reference_id: owner.id,
      "line_items[0][price]": "price_pro_monthly",
      "line_items[0][quantity]": "1",
      success_url: "https://app.example.com/done?s={CHECKOUT_SESSION_ID}",
      cancel_url: "https://app.example.com/back",
      "metadata[user_id]": owner.id,
      "metadata[workspace_id]": workspaceId,
      "metadata[plan]": "pro",
      "metadata[interval]": "monthly",
      "metadata[initiated_by]": owner.id,
      "subscription_data[metadata][user_id]": owner.id,
      "subscription_data[metadata][plan]": "pro",
    });
    expect(form.has("line_items[0][price_data][unit_amount]")).toBe(false);
    // The answer is the session Stripe returned.
    const id = res.body.session_id as string;
    expect(id).toMatch(/^cs_test_fake/);
    expect(res.body).toEqual({ session_id: id, checkout_url: `https://checkout.stripe.test/c/pay/${id}` });
  });

  it("a second checkout (an admin's, growth yearly, default URLs) reuses the customer for the owner's account", async () => {
    const before = await customerIdOf(owner.id);
    expect(before).toBeTruthy();
    const res = await post("checkout", { workspace_id: workspaceId, plan: "growth", interval: "yearly" }, admin.token);
    expect(res.status, res.text).toBe(200);
    expect(stripe.to("/v1/customers")).toHaveLength(0);
    expect(await customerIdOf(owner.id)).toBe(before);
    const form = stripe.posted("/v1/checkout/sessions")[0]!.form;
    expect(form.get("customer")).toBe(before);
    expect(form.get("line_items[0][price]")).toBe("price_growth_yearly");
    expect(form.get("metadata[user_id]")).toBe(owner.id);
    expect(form.get("metadata[initiated_by]")).toBe(admin.id);
    expect(form.get("metadata[plan]")).toBe("growth");
    expect(form.get("success_url")).toBe("https://app.example.com/settings/billing?checkout=success&session_id={CHECKOUT_SESSION_ID}");
    expect(form.get("cancel_url")).toBe("https://app.example.com/settings/billing?checkout=cancelled");
    // Nothing was created for the admin.
    expect(await customerIdOf(admin.id)).toBeUndefined();
  });

  it("two concurrent first checkouts of a fresh owner end with one customer", async () => {
    const w = await newWorkspace("Race");
    const body = { workspace_id: w.workspace.id, plan: "pro", interval: "yearly" };
    const [a, b] = await Promise.all([post("checkout", body, w.owner.token), post("checkout", body, w.owner.token)]);
    expect([a.status, b.status], a.text + b.text).toEqual([200, 200]);
    const stored = await customerIdOf(w.owner.id);
    expect(stored).toBeTruthy();
    expect(stripe.posted("/v1/checkout/sessions").map((r) => r.form.get("customer"))).toEqual([stored, stored]);
    expect(new Set(stripe.to("/v1/customers").map((r) => r.headers["idempotency-key"]))).toEqual(new Set([`r2d-customer-${w.owner.id}`]));
  });

  it("403 for a non-member and for a plain member; nothing reaches Stripe", async () => {
    expectEnvelope(await post("checkout", { workspace_id: workspaceId, plan: "pro", interval: "monthly" }, outsider.token), 403, "FORBIDDEN");
    const res = await post("checkout", { workspace_id: workspaceId, plan: "pro", interval: "monthly" }, member.token);
    expectEnvelope(res, 403, "FORBIDDEN");
    expect(res.body.detail).toMatch(/owner or admin/);
    expect(stripe.requests).toEqual([]);
  });

  it.each([
    ["a plan that is not on sale", { plan: "power", interval: "monthly" }, "plan"],
    ["the trial", { plan: "trial", interval: "monthly" }, "plan"],
    ["an unknown interval", { plan: "pro", interval: "weekly" }, "interval"],
    ["a missing interval", { plan: "pro" }, "interval"],
    ["a success_url that is not http(s)", { plan: "pro", interval: "monthly", success_url: "javascript:alert(1)" }, "success_url"],
  ])("422 for %s", async (_label, fields, field) => {
    const res = await post("checkout", { workspace_id: workspaceId, ...fields });
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(res.body.errors.map((e: { loc: string[] }) => e.loc.join("."))).toContain(`body.${field}`);
    expect(stripe.requests).toEqual([]);
  });

  it("503 naming the price setting when the plan's price id is not configured", async () => {
    const res = await withEnv({ STRIPE_PRICE_GROWTH_MONTHLY: undefined }, () =>
      post("checkout", { workspace_id: workspaceId, plan: "growth", interval: "monthly" }));
    expectEnvelope(res, 503, "SERVICE_UNAVAILABLE");
    expect(res.body.detail).toBe("Billing is not configured: set STRIPE_PRICE_GROWTH_MONTHLY");
    expect(stripe.requests).toEqual([]);
  });

  it("a return URL on a foreign origin is 422 once CORS_ORIGINS names the frontends", async () => {
    const res = await withEnv({ CORS_ORIGINS: "https://app.example.com" }, () =>
      post("checkout", { workspace_id: workspaceId, plan: "pro", interval: "monthly", success_url: "https://evil.example.net/x" }));
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(res.body.errors[0].loc).toEqual(["body", "success_url"]);
    expect(stripe.posted("/v1/checkout/sessions")).toEqual([]);
  });

  it("Stripe refusing the request is 503 with Stripe's error type, not a 500", async () => {
    expect(await customerIdOf(owner.id)).toBeTruthy(); // the customer exists (tests above): the session call is the next request
    stripe.failNext(400, "invalid_request_error", "No such price: 'price_pro_monthly'");
    const res = await post("checkout", { workspace_id: workspaceId, plan: "pro", interval: "monthly" });
    expectEnvelope(res, 503, "SERVICE_UNAVAILABLE");
    expect(res.body.detail).toMatch(/No such price/);
    expect(res.body.stripe_error).toBe("StripeInvalidRequestError");
  });
});

describe("POST /api/billing/boost/checkout", () => {
  it.each([
    ["starter", 1200, 40],
    ["plus", 3000, 100],
    ["max", 6500, 215],
  ])("%s: a one-time payment session at the spec's price, with pack metadata", async (pack, cents, credits) => {
    const res = await post("boost/checkout", { workspace_id: workspaceId, pack_type: pack, success_url: "https://app.example.com/ok" }, admin.token);
    expect(res.status, res.text).toBe(200);
    expect(stripe.to("/v1/customers")).toHaveLength(0); // the owner's customer from the checkouts above
    const sessions = stripe.posted("/v1/checkout/sessions");
    expect(sessions).toHaveLength(1);
    const form = sessions[0]!.form;
    expect(Object.fromEntries(form)).toMatchObject({
      mode: "payment",
      customer: await customerIdOf(owner.id),
      "line_items[0][quantity]": "1",
      "line_items[0][price_data][currency]": "usd",
      "line_items[0][price_data][unit_amount]": String(cents),
      "metadata[pack_type]": pack,
      "metadata[credits]": String(credits),
      "metadata[user_id]": owner.id,
      "metadata[workspace_id]": workspaceId,
      "metadata[initiated_by]": admin.id,
      "payment_intent_data[metadata][pack_type]": pack,
      success_url: "https://app.example.com/ok",
      cancel_url: "https://app.example.com/settings/billing?boost=cancelled",
    });
    expect(form.get("line_items[0][price_data][product_data][name]")).toMatch(new RegExp(pack, "i"));
    expect(form.has("line_items[0][price]")).toBe(false);
    expect(res.body).toEqual({ session_id: expect.stringMatching(/^cs_test_fake/), checkout_url: expect.stringMatching(/^https:\/\/checkout\.stripe\.test\//) });
  });

  it("403 for a non-member and a plain member; 422 for an unknown pack", async () => {
    expectEnvelope(await post("boost/checkout", { workspace_id: workspaceId, pack_type: "plus" }, outsider.token), 403, "FORBIDDEN");
    expectEnvelope(await post("boost/checkout", { workspace_id: workspaceId, pack_type: "plus" }, member.token), 403, "FORBIDDEN");
    const bad = await post("boost/checkout", { workspace_id: workspaceId, pack_type: "mega" });
    expectEnvelope(bad, 422, "VALIDATION_ERROR");
    expect(bad.body.errors[0].loc).toEqual(["body", "pack_type"]);
    expect(stripe.requests).toEqual([]);
  });

  it("402 SUBSCRIPTION_REQUIRED for an account whose trial ended: no pack is sold that could not be spent", async () => {
    const w = await newWorkspace("Trial over");
    await setAccount(w.owner.id, { status: "trialing", period_end: new Date(Date.now() - 60_000).toISOString() });
    expectEnvelope(await post("boost/checkout", { workspace_id: w.workspace.id, pack_type: "plus" }, w.owner.token), 402, "SUBSCRIPTION_REQUIRED");
    expect(stripe.requests).toEqual([]);
  });
});

describe("POST /api/billing/portal", () => {
  it("opens the billing portal of the owner's customer", async () => {
    const customer = await customerIdOf(owner.id);
    expect(customer).toBeTruthy();
    const res = await post("portal", { workspace_id: workspaceId, return_url: "https://app.example.com/account" });
    expect(res.status, res.text).toBe(200);
    const sent = stripe.to("/v1/billing_portal/sessions");
    expect(sent).toHaveLength(1);
    expect(Object.fromEntries(sent[0]!.form)).toEqual({ customer, return_url: "https://app.example.com/account" });
    expect(res.body).toEqual({ portal_url: expect.stringMatching(/^https:\/\/billing\.stripe\.test\/p\/session\/bps_fake/) });
  });

  it("defaults the return URL to the billing settings page of APP_URL", async () => {
    const res = await post("portal", { workspace_id: workspaceId });
    expect(res.status, res.text).toBe(200);
    expect(stripe.to("/v1/billing_portal/sessions")[0]!.form.get("return_url")).toBe("https://app.example.com/settings/billing");
  });

  it("409 CONFLICT before the account has a Stripe customer (no checkout yet); no customer is created", async () => {
    const w = await newWorkspace("No customer");
    const res = await post("portal", { workspace_id: w.workspace.id }, w.owner.token);
    expectEnvelope(res, 409, "CONFLICT");
    expect(res.body.detail).toMatch(/checkout/);
    expect(stripe.requests).toEqual([]);
    expect(await customerIdOf(w.owner.id)).toBeUndefined();
  });

  it("owner only: 403 for an admin, a member and a non-member", async () => {
    for (const who of [admin, member, outsider]) {
      expectEnvelope(await post("portal", { workspace_id: workspaceId }, who.token), 403, "FORBIDDEN");
    }
    expect(stripe.requests).toEqual([]);
  });
});

describe("without STRIPE_SECRET_KEY", () => {
  it.each([
    ["checkout", { plan: "pro", interval: "monthly" }],
    ["portal", {}],
    ["boost/checkout", { pack_type: "starter" }],
  ])("%s answers 503 naming the setting, before any other work (even for a non-member)", async (path, fields) => {
    await withEnv({ STRIPE_SECRET_KEY: undefined, SST_Secret_value_STRIPE_SECRET_KEY: undefined }, async () => {
      for (const token of [owner.token, outsider.token]) {
        const res = await post(path, { workspace_id: workspaceId, ...fields }, token);
        expectEnvelope(res, 503, "SERVICE_UNAVAILABLE");
        expect(res.body.detail).toBe("Billing is not configured: set STRIPE_SECRET_KEY");
      }
    });
    expect(stripe.requests).toEqual([]);
  });

  it("the read side still works", async () => {
    await withEnv({ STRIPE_SECRET_KEY: undefined }, async () => {
      const res = await call("GET", "/api/billing/subscription", { token: owner.token, query: { workspace_id: workspaceId } });
      expect(res.status, res.text).toBe(200);
    });
  });
});
