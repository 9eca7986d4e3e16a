import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import Stripe from "stripe";
import { devIdp } from "./idp";
import { simulatedUpgradeEvent, type SimulatedInterval, type SimulatedPlan } from "./simulated-upgrade";
import { PrerequisiteError } from "./errors";

/**
 * `npm run billing:simulate -- --email you@example.com [--plan pro|growth|power] [--interval monthly|yearly]`:
 * simulate a paid upgrade on the running `npm start` (README "Simulate a paid upgrade"). Builds the Stripe event of a
 * paid subscription for the user (local/simulated-upgrade.ts), signs it with STRIPE_WEBHOOK_SECRET as Stripe would
 * (`stripe.webhooks.generateTestHeaderString`) and POSTs it to /api/webhooks/payments; then prints the plan that
 * `GET /api/billing/subscription` reports for the user's first workspace.
 */
const USAGE = `Usage: npm run billing:simulate -- --email you@example.com [--plan pro|growth|power] [--interval monthly|yearly] [--data DIR]

Simulates a paid upgrade on the running \`npm start\` by sending it a signed Stripe webhook. Both must run with the
same STRIPE_WEBHOOK_SECRET, and \`npm start\` without STRIPE_SECRET_KEY (then the event's own subscription is applied).
`;

class UsageError extends Error {}

const PLANS = ["pro", "growth", "power"];
const INTERVALS = ["monthly", "yearly"];

async function main() {
  let values;
  try {
    values = parseArgs({
      strict: true,
      options: {
        email: { type: "string" },
        plan: { type: "string", default: "pro" },
        interval: { type: "string", default: "monthly" },
        data: { type: "string" },
        help: { type: "boolean", short: "h", default: false },
      },
    }).values;
  } catch (err) {
    throw new UsageError(`${(err as Error).message.split("\n")[0]} (npm run billing:simulate -- --help lists the options).`);
  }
  if (values.help) return void process.stdout.write(USAGE);
  if (!values.email) throw new UsageError("An e-mail is required, as in: npm run billing:simulate -- --email you@example.com --plan pro");
  if (!PLANS.includes(values.plan!)) throw new UsageError(`--plan must be one of ${PLANS.join(", ")}, not "${values.plan}".`);
  if (!INTERVALS.includes(values.interval!)) throw new UsageError(`--interval must be monthly or yearly, not "${values.interval}".`);
  const secret = process.env.STRIPE_WEBHOOK_SECRET;
  if (!secret) {
    throw new UsageError("STRIPE_WEBHOOK_SECRET is not set: export the same value (any string, e.g. whsec_local_dev) before both `npm start` and this command.");
  }
  const dataDir = resolve(values.data ?? process.env.DATA_DIR ?? ".data");
  const runtimeFile = resolve(dataDir, "runtime.json");
  if (!existsSync(runtimeFile)) throw new UsageError(`No running service found (${runtimeFile} is missing): start it with \`npm start\` first.`);
  const { base } = JSON.parse(readFileSync(runtimeFile, "utf8")) as { base: string };

  const token = await (await devIdp(dataDir)).sign({ email: values.email });
  /** fetch, with a service that is not running said in one sentence (runtime.json can outlive a killed run). */
  const send = async (path: string, init?: RequestInit) => {
    try {
      return await fetch(`${base}${path}`, init);
    } catch {
      throw new UsageError(`No service answers at ${base} (${runtimeFile} is left from a run that stopped): start it with \`npm start\` first.`);
    }
  };
  /** The service's own reason for a refusal, from its error envelope. */
  const refusal = async (what: string, res: Response) => {
    const text = await res.text();
    let detail = text;
    try {
      detail = (JSON.parse(text) as { detail?: string }).detail ?? text;
    } catch {
      // not the envelope: the text as it came
    }
    return new UsageError(`${what} answered ${res.status}: ${detail}`);
  };
  const get = async (path: string) => {
    const res = await send(path, { headers: { authorization: `Bearer ${token}` } });
    if (!res.ok) throw await refusal(`GET ${path}`, res);
    return res.json() as Promise<any>;
  };
  const me = await get("/api/auth/me");
  const event = simulatedUpgradeEvent({ userId: me.id, plan: values.plan as SimulatedPlan, interval: values.interval as SimulatedInterval });
  const payload = JSON.stringify(event);
  const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret });
  const res = await send("/api/webhooks/payments", {
    method: "POST",
    headers: { "content-type": "application/json", "payments-signature": signature },
    body: payload,
  });
  if (!res.ok) throw await refusal("POST /api/webhooks/payments", res);
  const answer = await res.text();
  console.log(`Sent ${event.type} ${event.id} for ${values.email}: ${answer}`);

  const first = ((await get("/api/workspaces")) as { workspaces: { id: string }[] }).workspaces[0];
  if (!first) return void console.log("The user has no workspace yet; the plan applies to the workspaces they create.");
  // The consumer applies the event just after the webhook answers; wait for it briefly.
  for (let i = 0; i < 50; i++) {
    const sub = await get(`/api/billing/subscription?workspace_id=${first.id}`);
    if (sub.plan === values.plan) {
      const credits = await get(`/api/billing/credits?workspace_id=${first.id}`);
      return void console.log(`Workspace ${first.id}: plan ${sub.plan}, status ${sub.status}, ${credits.monthly_quota} monthly credits, period to ${sub.current_period_end}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  console.log(`The plan has not changed yet: is \`npm start\` running without STRIPE_SECRET_KEY? (with a key it re-reads Stripe, which knows nothing of this simulated subscription)`);
}

main().catch((err: unknown) => {
  console.error(err instanceof UsageError || err instanceof PrerequisiteError ? err.message : err);
  process.exit(err instanceof UsageError ? 2 : 1);
});
