/**
 * Credits benchmark (DESIGN.md 6.3; core/billing/ledger.ts): latency of charging an AI run (reserve before it,
 * settle after it) on one account, and how many charges per second one account takes under contention without ever
 * overdrawing.
 *
 *   npm run bench -- credits      (or: npx tsx bench/run.ts credits)
 *
 * One process and DynamoDB Local in memory (no gateway, object store or identity provider: the ledger functions are
 * called directly, as the AI operations will call them). Parts:
 *
 * 1. Sequential: `reserve(2)` then `settle(1.5)` per request, one at a time, on an account with a large quota;
 *    latency of each and of the pair, against the floor of one consistent `GetItem` and one 3-item
 *    `TransactWriteItems` sent with the low-level client. Both take their fast paths as the AI runs do: reserve
 *    sends its transaction alone once this process has seen the account, settle is given the reservation (one
 *    transaction each; the read-and-plan path runs when a condition fails).
 * 2. Contention: 20 workers loop reserve(1) + settle(1) on ONE account for a fixed time: charges per second,
 *    transactions sent per charge (re-plans after a lost condition or conflict), 503s; then the account's identities
 *    are checked (no bucket negative, ledger deltas = spendable balance, charged = charges x 1).
 *    2b: the same 20 workers each on its own account, to tell the account's ceiling from the emulator's.
 * 3. Overdraft: 20 workers loop reserve(1) + settle(1) on an account with exactly 100 credits until every worker is
 *    refused: exactly 100 charges must succeed and the balance must end at 0.
 */
import { randomUUID } from "node:crypto";
import { DynamoDBClient, GetItemCommand, TransactWriteItemsCommand } from "@aws-sdk/client-dynamodb";
import { marshall } from "@aws-sdk/util-dynamodb";
import { startBenchDynamo } from "./lib/runtime";
import { Recorder, fmtMs, printTable, since, type Summary } from "./lib/stats";
import { busyWarning, machineLine } from "./lib/machine";
import { sized, sizeNote } from "./lib/size";

const TABLE_NAME = "r2d-bench-credits";
const SEQ_N = sized(400, 10);
const SEQ_WARMUP = sized(60, 3);
const WORKERS = sized(20, 5);
const CONTENTION_MS = sized(10_000, 500);
const OVERDRAFT_CREDITS = sized(100, 10);
/** Hard bound on any one loop. */
const LOOP_DEADLINE_MS = 90_000;

const row = (name: string, s: Summary): (string | number)[] => [name, s.n, fmtMs(s.p50), fmtMs(s.p90), fmtMs(s.p99), fmtMs(s.max)];

export default async function credits(): Promise<void> {
  console.log(`credits benchmark — ${machineLine()}`);
  const warn = busyWarning();
  if (warn) console.log(warn);
  if (sizeNote()) console.log(sizeNote());
  process.env.LOG_LEVEL = "SILENT";
  process.env.POWERTOOLS_LOG_LEVEL = "SILENT";
  const dynamo = await startBenchDynamo(TABLE_NAME);
  const TABLE = dynamo.tableName;
  const stopOnSignal = (signal: NodeJS.Signals) => void dynamo.stop().finally(() => process.exit(signal === "SIGINT" ? 130 : 143));
  process.once("SIGINT", stopOnSignal);
  process.once("SIGTERM", stopOnSignal);
  try {
    Object.assign(process.env, {
      TABLE_NAME: TABLE,
      DYNAMODB_ENDPOINT: dynamo.endpoint,
      AWS_REGION: process.env.AWS_REGION ?? "us-east-1",
      AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? "local",
      AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? "local",
    });
    // After the environment: the client and the entities read it on first use.
    const Ledger = await import("../core/billing/ledger");
    const { dynamoClient } = await import("../core/db/client");
    const { db } = await import("../core/db/service");
    const { AppError } = await import("../core/error");

    // Count the transactions sent, to report re-plans per charge under contention.
    let transactions = 0;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === "TransactWriteItemsCommand") transactions++;
        return next(args);
      },
      { step: "initialize", name: "countTransactions" },
    );

    /** An account with `credits` in its quota (a monthly grant of a fresh period). */
    const funded = async (credits: number) => {
      const u = `bench-${randomUUID()}`;
      await Ledger.accountOf(u);
      const start = new Date(Date.now() + 1000);
      await Ledger.grant(u, { source: `in_${u}`, credits, bucket: "monthly", period: { start, end: new Date(start.getTime() + 30 * 86_400_000) }, plan: "power" });
      return u;
    };

    /** The accounting identities of core/billing/ledger.ts; returns the account. */
    const check = async (u: string) => {
      const e = db().entities;
      const [acct, boosts, holds, ledger] = await Promise.all([
        e.billingAccount.get({ user_id: u }).go({ consistent: true }),
        e.creditBoost.query.byUser({ user_id: u }).go({ consistent: true, pages: "all" }),
        e.creditHold.query.byUser({ user_id: u }).go({ consistent: true, pages: "all" }),
        e.creditLedger.query.byUser({ user_id: u }).go({ consistent: true, pages: "all" }),
      ]);
      const a = acct.data!;
      const spendable = a.quota_remaining + boosts.data.reduce((s, b) => s + b.remaining, 0);
      const deltas = ledger.data.reduce((s, l) => s + l.delta, 0);
      const held = holds.data.reduce((s, h) => s + h.credits, 0);
      const problems = [
        a.quota_remaining < 0 ? `quota_remaining ${a.quota_remaining} < 0` : "",
        ...boosts.data.filter((b) => b.remaining < 0).map((b) => `boost ${b.boost_id} remaining ${b.remaining} < 0`),
        deltas !== spendable ? `ledger deltas ${deltas} != spendable ${spendable}` : "",
        held !== a.reserved ? `holds ${held} != reserved ${a.reserved}` : "",
      ].filter(Boolean);
      return { account: a, spendable, ledgerItems: ledger.data.length, problems };
    };

    // ---- 1. Sequential latency
    console.log(`\n1. Sequential reserve(2) + settle(1.5), ${SEQ_N} requests after ${SEQ_WARMUP} warm-up, one account`);
    const seqUser = await funded(1_000_000);
    const rec = { reserve: new Recorder(), settle: new Recorder(), pair: new Recorder(), get: new Recorder(), tx: new Recorder() };
    const raw = new DynamoDBClient({ endpoint: dynamo.endpoint, region: "us-east-1", credentials: { accessKeyId: "local", secretAccessKey: "local" } });
    const floorKey = marshall({ pk: `bill#${seqUser}`, sk: "account" });
    const floorTx = (i: number) =>
      new TransactWriteItemsCommand({
        TransactItems: [0, 1, 2].map((k) => ({
          Put: {
            TableName: TABLE,
            Item: marshall({ pk: `floor#${seqUser}`, sk: `floor#${i}#${k}`, credits: 1 }),
            ConditionExpression: "attribute_not_exists(pk)",
          },
        })),
      });
    const deadline = performance.now() + LOOP_DEADLINE_MS;
    for (let i = 0; i < SEQ_WARMUP + SEQ_N && performance.now() < deadline; i++) {
      const measured = i >= SEQ_WARMUP;
      const run = `seq-${i}`;
      const t0 = performance.now();
      const held = await Ledger.reserve(seqUser, run, 2);
      const t1 = performance.now();
      // As the AI runs settle (core/billing/charge.ts): with the reservation this process made.
      await Ledger.settle(seqUser, run, 1.5, {}, held);
      const t2 = performance.now();
      await raw.send(new GetItemCommand({ TableName: TABLE, Key: floorKey, ConsistentRead: true }));
      const t3 = performance.now();
      await raw.send(floorTx(i));
      const t4 = performance.now();
      if (measured) {
        rec.reserve.record(t1 - t0);
        rec.settle.record(t2 - t1);
        rec.pair.record(t2 - t0);
        rec.get.record(t3 - t2);
        rec.tx.record(t4 - t3);
      }
    }
    raw.destroy();
    printTable(["operation", "n", "p50 ms", "p90 ms", "p99 ms", "max ms"], [
      row("reserve", rec.reserve.summary()),
      row("settle", rec.settle.summary()),
      row("reserve + settle", rec.pair.summary()),
      row("floor: GetItem (consistent)", rec.get.summary()),
      row("floor: TransactWriteItems (3 puts)", rec.tx.summary()),
    ]);
    const floorPair = 2 * (rec.get.summary().p50 + rec.tx.summary().p50);
    console.log(`reserve + settle p50 / floor (2 x (GetItem + 3-item transaction)) p50: ${(rec.pair.summary().p50 / floorPair).toFixed(2)}x`);
    const seqCheck = await check(seqUser);
    console.log(`identities after part 1: ${seqCheck.problems.length === 0 ? "ok" : seqCheck.problems.join("; ")}`);

    // ---- 2. Contention on one account
    console.log(`\n2. Contention: ${WORKERS} workers, reserve(1) + settle(1) on one account for ${CONTENTION_MS / 1000} s`);
    const hot = await funded(1_000_000);
    let charges = 0;
    let unavailable = 0;
    let refused = 0;
    const latency = new Recorder();
    const txBefore = transactions;
    const t0 = performance.now();
    const stopAt = t0 + CONTENTION_MS;
    await Promise.all(
      Array.from({ length: WORKERS }, async (_, w) => {
        for (let i = 0; performance.now() < stopAt; i++) {
          const run = `hot-${w}-${i}`;
          const s = performance.now();
          try {
            const held = await Ledger.reserve(hot, run, 1);
            await Ledger.settle(hot, run, 1, {}, held);
            charges++;
            latency.record(since(s));
          } catch (err) {
            if (err instanceof AppError && err.status === 503) unavailable++;
            else if (err instanceof AppError && err.status === 402) refused++;
            else throw err;
          }
        }
      }),
    );
    const elapsed = since(t0) / 1000;
    const hotCheck = await check(hot);
    const expectedCharged = charges;
    if (hotCheck.account.charged !== expectedCharged) hotCheck.problems.push(`charged ${hotCheck.account.charged} != ${expectedCharged} completed charges`);
    const l = latency.summary();
    printTable(["figure", "value"], [
      ["charges completed (reserve + settle)", charges],
      ["charges per second", (charges / elapsed).toFixed(1)],
      ["transactions sent per charge (2 = no re-plan)", ((transactions - txBefore) / Math.max(1, charges)).toFixed(2)],
      ["503 (still contended after 12 tries)", unavailable],
      ["402", refused],
      ["per-charge latency p50 / p99 ms", `${fmtMs(l.p50)} / ${fmtMs(l.p99)}`],
      ["identities (never negative, ledger = balance, charged = charges)", hotCheck.problems.length === 0 ? "ok" : hotCheck.problems.join("; ")],
    ]);

    // ---- 2b. The same load spread over one account per worker: the emulator's own ceiling, for comparison.
    console.log(`\n2b. The same ${WORKERS} workers for ${CONTENTION_MS / 1000} s, each on its own account (DynamoDB Local's ceiling)`);
    const own = await Promise.all(Array.from({ length: WORKERS }, () => funded(1_000_000)));
    let spread = 0;
    const spreadLatency = new Recorder();
    const spreadTx = transactions;
    const s0 = performance.now();
    const spreadStop = s0 + CONTENTION_MS;
    await Promise.all(
      own.map(async (u, w) => {
        for (let i = 0; performance.now() < spreadStop; i++) {
          const s = performance.now();
          const held = await Ledger.reserve(u, `own-${w}-${i}`, 1);
          await Ledger.settle(u, `own-${w}-${i}`, 1, {}, held);
          spread++;
          spreadLatency.record(since(s));
        }
      }),
    );
    const spreadElapsed = since(s0) / 1000;
    const sl = spreadLatency.summary();
    printTable(["figure", "value"], [
      ["charges per second (all accounts)", (spread / spreadElapsed).toFixed(1)],
      ["transactions sent per charge", ((transactions - spreadTx) / Math.max(1, spread)).toFixed(2)],
      ["per-charge latency p50 / p99 ms", `${fmtMs(sl.p50)} / ${fmtMs(sl.p99)}`],
    ]);

    // ---- 3. No overdraft at the edge
    console.log(`\n3. Overdraft: ${WORKERS} workers, reserve(1) + settle(1) until refused, on an account with exactly ${OVERDRAFT_CREDITS} credits`);
    const edge = await funded(OVERDRAFT_CREDITS);
    // The account's own first grant (trial signup, 5) was expired by the monthly grant: spendable is exactly 100.
    let edgeCharges = 0;
    let edge402 = 0;
    let edge503 = 0;
    const edgeStop = performance.now() + LOOP_DEADLINE_MS;
    await Promise.all(
      Array.from({ length: WORKERS }, async (_, w) => {
        for (let i = 0; performance.now() < edgeStop; i++) {
          const run = `edge-${w}-${i}`;
          try {
            const held = await Ledger.reserve(edge, run, 1);
            await Ledger.settle(edge, run, 1, {}, held);
            edgeCharges++;
          } catch (err) {
            if (err instanceof AppError && err.status === 402) {
              edge402++;
              return;
            }
            if (err instanceof AppError && err.status === 503) {
              edge503++;
              continue;
            }
            throw err;
          }
        }
      }),
    );
    const edgeCheck = await check(edge);
    const edgeBalance = await Ledger.balanceOf(edge);
    printTable(["figure", "value"], [
      ["charges that succeeded", `${edgeCharges} (must be ${OVERDRAFT_CREDITS})`],
      ["workers refused with 402", `${edge402} of ${WORKERS}`],
      ["503 along the way", edge503],
      ["balance at the end (total_remaining)", `${edgeBalance.total_remaining} (must be 0)`],
      ["identities", edgeCheck.problems.length === 0 ? "ok" : edgeCheck.problems.join("; ")],
    ]);
    if (edgeCharges !== OVERDRAFT_CREDITS || edgeBalance.total_remaining !== 0 || edgeCheck.problems.length > 0 || hotCheck.problems.length > 0) {
      throw new Error("credits benchmark: an accounting identity failed (see above)");
    }
  } finally {
    process.off("SIGINT", stopOnSignal);
    process.off("SIGTERM", stopOnSignal);
    await dynamo.stop();
  }
  const warnEnd = busyWarning();
  console.log(`end: ${machineLine()}${warnEnd ? `\n${warnEnd}` : ""}`);
}
