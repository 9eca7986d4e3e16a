/**
 * Deleting a custom skill while another write meets the workspace's custom skills counter (core/skill deleteCustom):
 * DynamoDB cancels the counted delete with `TransactionConflict` on the counter item, which reports `None` for the
 * skill, installation and slug claim, exactly as the "counter already at 0" case does. Through the real handler
 * against DynamoDB Local; the conflict is injected (test/support/throttle.ts), since DynamoDB Local serializes
 * transactions instead of cancelling them.
 */
import { afterEach, describe, expect, it } from "vitest";
import { call, newWorkspace } from "../support/api";
import { setAccount } from "../support/billing";
import { conflictTransactions } from "../support/throttle";
import { expectEnvelope } from "./_helpers";
import { PLANS } from "../../core/billing/plans";
import { COUNTED_TRIES } from "../../core/billing/counters";
import { db } from "../../core/db/service";

/** The counter item is the 4th of the delete's transaction (skill, installation, slug claim, counter). */
const COUNTER_ITEM = 3;

async function growthWorkspace() {
  const w = await newWorkspace("Skill counter conflicts");
  await setAccount(w.owner.id, { plan: "growth", status: "active" });
  return { token: w.owner.token, ws: w.workspace.id };
}

let n = 0;
const slug = () => `counted-${Date.now().toString(36)}-${(n++).toString(36)}`;
const create = (p: { token: string; ws: string }, s = slug()) =>
  call("POST", "/api/skills/custom", {
    token: p.token,
    body: { workspace_id: p.ws, slug: s, name: "Counted", description: "A skill counted against the plan.", instructions_md: "# Counted\n\nDo it.", trigger_keywords: ["counted"] },
  });
const remove = (p: { token: string; ws: string }, s: string) => call("DELETE", `/api/skills/custom/${s}`, { token: p.token, query: { workspace_id: p.ws } });
const counterOf = async (ws: string) => (await db().entities.skillCounter.get({ workspace_id: ws }).go({ consistent: true })).data?.custom_skills;

const undo: (() => void)[] = [];
afterEach(() => {
  while (undo.length) undo.pop()!();
});

describe("DELETE /api/skills/custom/{slug} meeting a conflict on the skills counter", () => {
  it("retries the counted delete: the counter goes down, and the plan's last place is free again", async () => {
    const p = await growthWorkspace();
    const limit = PLANS.growth.max_custom_skills!;
    const slugs: string[] = [];
    for (let i = 0; i < limit; i++) {
      const s = slug();
      expect((await create(p, s)).status).toBe(200);
      slugs.push(s);
    }
    expect(await counterOf(p.ws)).toBe(limit);
    const conflict = conflictTransactions([slugs[0]!], 1, COUNTER_ITEM);
    undo.push(conflict.remove);
    const res = await remove(p, slugs[0]!);
    expect(res.status, res.text).toBe(200);
    expect(conflict.left, "the conflict was met").toBe(0);
    expect(await counterOf(p.ws)).toBe(limit - 1);
    expect((await create(p)).status).toBe(200);
  });

  it("answers 409 CONFLICT (retryable) when the counter keeps conflicting, and deletes nothing", async () => {
    const p = await growthWorkspace();
    const s = slug();
    expect((await create(p, s)).status).toBe(200);
    const conflict = conflictTransactions([s], COUNTED_TRIES, COUNTER_ITEM);
    undo.push(conflict.remove);
    const res = await remove(p, s);
    expectEnvelope(res, 409, "CONFLICT");
    expect(res.body).toMatchObject({ retryable: true });
    expect(conflict.left).toBe(0);
    conflict.remove();
    expect(await counterOf(p.ws)).toBe(1);
    const list = await call("GET", "/api/skills/workspace", { token: p.token, query: { workspace_id: p.ws } });
    expect(list.body.map((i: { skill: { slug: string } }) => i.skill.slug)).toContain(s);
    // The retry the 409 asks for deletes it, counted.
    expect((await remove(p, s)).status).toBe(200);
    expect(await counterOf(p.ws)).toBe(0);
  });

  it("still deletes without the counter when the counter's own condition says it is already at 0", async () => {
    const p = await growthWorkspace();
    const s = slug();
    expect((await create(p, s)).status).toBe(200);
    await db().entities.skillCounter.update({ workspace_id: p.ws }).set({ custom_skills: 0 }).go();
    expect((await remove(p, s)).status).toBe(200);
    expect(await counterOf(p.ws)).toBe(0);
    expect((await call("GET", "/api/skills/workspace", { token: p.token, query: { workspace_id: p.ws } })).body).toEqual([]);
  });
});
