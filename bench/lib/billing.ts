/**
 * Paid plans for benchmarks, bought the way a user's purchase reaches the service: a Stripe event,
 * signed with the webhook secret, POSTed to `/api/webhooks/payments` of the benchmark's own runtime, and applied by
 * the payments consumer (the embedded runtime's payments queue, local/events.ts). The upgrade is the event of
 * `npm run billing:simulate` (local/simulated-upgrade.ts). Without STRIPE_SECRET_KEY the consumer applies the objects
 * the signed event carries (core/billing/sync.ts `carriedSource`), so nothing reaches Stripe. No limit of the product
 * is changed: the account gets what the plan gives any customer.
 */
import { randomBytes } from "node:crypto";
import Stripe from "stripe";
import { simulatedUpgradeEvent, type SimulatedInterval, type SimulatedPlan } from "../../local/simulated-upgrade";
import type { BenchRuntime } from "./runtime";

/**
 * The webhook secret the benchmark's runtime checks: the one configured, else a fresh one for this process (the
 * runtime reads STRIPE_WEBHOOK_SECRET on each delivery). Drops STRIPE_SECRET_KEY from this process, so the
 * consumer applies the signed event instead of asking Stripe about a subscription it never made.
 */
function webhookSecret(): string {
  if (process.env.STRIPE_SECRET_KEY) {
    console.log("bench: STRIPE_SECRET_KEY ignored in this benchmark process (its purchases are simulated, nothing goes to Stripe)");
    delete process.env.STRIPE_SECRET_KEY;
  }
  process.env.STRIPE_WEBHOOK_SECRET ||= `whsec_bench_${randomBytes(12).toString("hex")}`;
  return process.env.STRIPE_WEBHOOK_SECRET;
}

/** Sign and deliver one Stripe event, then wait until the payments consumer has handled it. */
async function deliver(rt: BenchRuntime, event: Stripe.Event): Promise<void> {
  const payload = JSON.stringify(event);
  const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: webhookSecret() });
  const res = await fetch(new URL("/api/webhooks/payments", rt.base), {
    method: "POST",
    headers: { "content-type": "application/json", "payments-signature": signature },
    body: payload,
  });
  const answer = await res.text();
  if (!res.ok) throw new Error(`POST /api/webhooks/payments (${event.type}) answered ${res.status}: ${answer.slice(0, 300)}`);
  const { localPaymentsQueue } = await import("../../local/events");
  const queue = localPaymentsQueue();
  await queue.idle();
  const dead = queue.deadLetters.find((d) => JSON.stringify(d).includes(event.id));
  if (dead) throw new Error(`the payments consumer dead-lettered ${event.type} ${event.id}: ${dead.reason}`);
}

async function getJson<T>(rt: BenchRuntime, token: string, path: string): Promise<T> {
  const res = await fetch(new URL(path, rt.base), { headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

/**
 * Upgrade the user of `token` to a paid plan as `npm run billing:simulate -- --plan <plan>` does, and check that
 * the workspace `workspaceId` (one the user owns) is now on it. Every workspace the user owns is covered by it.
 * @returns the plan, status and monthly credits the API reports afterwards.
 */
export async function simulatePaidUpgrade(
  rt: BenchRuntime,
  opts: { token: string; workspaceId: string; plan: SimulatedPlan; interval?: SimulatedInterval },
): Promise<{ plan: string; status: string; monthly_quota: number }> {
  const me = await getJson<{ id: string }>(rt, opts.token, "/api/auth/me");
  await deliver(rt, simulatedUpgradeEvent({ userId: me.id, plan: opts.plan, interval: opts.interval ?? "monthly" }));
  const sub = await getJson<{ plan: string; status: string }>(rt, opts.token, `/api/billing/subscription?workspace_id=${opts.workspaceId}`);
  if (sub.plan !== opts.plan) throw new Error(`after the simulated upgrade to ${opts.plan} the workspace is on ${sub.plan} (${sub.status})`);
  const credits = await getJson<{ monthly_quota: number }>(rt, opts.token, `/api/billing/credits?workspace_id=${opts.workspaceId}`);
  return { plan: sub.plan, status: sub.status, monthly_quota: credits.monthly_quota };
}
