/**
 * An older local table gets the tasks' slim list index (docs/decisions.md "Slim list index"): `npm start` reuses the
 * DynamoDB Local table under .data, so `ensureTable` (local/dynamodb.ts) adds the global indexes that table lacks and
 * waits until they are ACTIVE; the tasks written before the index get its keys at their workspace's first listing
 * (core/task/listing.ts), which answers from the partition, and every later listing reads the index only. Runs on its
 * own table, created as a `.data` written before gsi4 (and the agent runs' gsi5) would have it.
 */
import { randomUUID } from "node:crypto";
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient, TransactionCanceledException } from "@aws-sdk/client-dynamodb";
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createTableInput, RUN_LIST_ATTRIBUTES, SLIM_LIST_ATTRIBUTES } from "../../core/db/table";
import { addMissingIndexes, ensureTable } from "../../local/dynamodb";
import { dynamoClient } from "../../core/db/client";
import { db } from "../../core/db/service";
import { call, newWorkspace } from "../support/api";
import { backfill } from "../../core/db/slim-index";
import { TASK_LIST_INDEX } from "../../core/task/task.entity";

const saved = process.env.TABLE_NAME;
const name = `r2d-upgrade-${randomUUID().slice(0, 8)}`;
const client = () => new DynamoDBClient({ endpoint: inject("dynamoEndpoint"), region: "us-east-1", credentials: { accessKeyId: "local", secretAccessKey: "local" } });
const describeTable = async () => {
  const c = client();
  try {
    return (await c.send(new DescribeTableCommand({ TableName: name }))).Table!;
  } finally {
    c.destroy();
  }
};

beforeAll(async () => {
  // Today's create-table input without gsi4 and its key attributes: the table an older `npm start` created.
  const input = createTableInput(name);
  const c = client();
  try {
    await c.send(
      new CreateTableCommand({
        ...input,
        // Nor the agent runs' gsi5, added later still: both are added at start.
        AttributeDefinitions: input.AttributeDefinitions.filter((a) => !/^gsi[45]/.test(a.AttributeName)),
        GlobalSecondaryIndexes: input.GlobalSecondaryIndexes.filter((i) => i.IndexName !== "gsi4" && i.IndexName !== "gsi5"),
      }),
    );
  } finally {
    c.destroy();
  }
  process.env.TABLE_NAME = name;
});
afterAll(() => {
  if (saved === undefined) delete process.env.TABLE_NAME;
  else process.env.TABLE_NAME = saved;
});

describe("a table created before the slim list index", () => {
  it("gets the index at start, and its workspaces' older tasks are listed, from the index once given its keys", async () => {
    expect((await describeTable()).GlobalSecondaryIndexes!.map((i) => i.IndexName).sort()).toEqual(["gsi1", "gsi2", "gsi3"]);

    // Tasks the old code wrote: no gsi4 keys (ElectroDB writes them today; removed as the old code never wrote them).
    const ws = await newWorkspace("Older tasks");
    const base = Date.parse("2026-02-01T00:00:00.000Z");
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const id = randomUUID();
      ids.push(id);
      await db().entities.task.create({ id, workspace_id: ws.workspace.id, task_type: "research", prompt: `Old ${i}`, status: i === 1 ? "failed" : "completed", timeout_seconds: 600, created_by: ws.owner.id, created_at: new Date(base + i * 1000).toISOString() }).go();
      await dynamoClient().send(new UpdateCommand({ TableName: name, Key: { pk: `ws#${ws.workspace.id}`, sk: `task#${id}` }, UpdateExpression: "REMOVE gsi4pk, gsi4sk" }));
    }
    // Nor did the old code write the workspace's index mark at its create (today's create does: core/db/slim-index.ts).
    await dynamoClient().send(new DeleteCommand({ TableName: name, Key: { pk: `ws#${ws.workspace.id}`, sk: "taskindex" } }));

    // What `npm start` runs on the reused table: the missing index is added and ACTIVE when it returns.
    await ensureTable(inject("dynamoEndpoint"), name);
    const table = await describeTable();
    const gsi4 = table.GlobalSecondaryIndexes!.find((i) => i.IndexName === "gsi4")!;
    expect(gsi4).toMatchObject({
      IndexStatus: "ACTIVE",
      KeySchema: [
        { AttributeName: "gsi4pk", KeyType: "HASH" },
        { AttributeName: "gsi4sk", KeyType: "RANGE" },
      ],
      Projection: { ProjectionType: "INCLUDE", NonKeyAttributes: [...SLIM_LIST_ATTRIBUTES] },
    });
    expect(table.GlobalSecondaryIndexes!.find((i) => i.IndexName === "gsi5")).toMatchObject({
      IndexStatus: "ACTIVE",
      Projection: { ProjectionType: "INCLUDE", NonKeyAttributes: [...RUN_LIST_ATTRIBUTES] },
    });
    expect(table.GlobalSecondaryIndexes).toHaveLength(5);
    expect(table.AttributeDefinitions!.map((a) => a.AttributeName)).toEqual(expect.arrayContaining(["gsi4pk", "gsi4sk", "gsi5pk", "gsi5sk"]));
    // Idempotent: a second start adds nothing.
    const c = client();
    try {
      expect(await addMissingIndexes(c, name)).toEqual([]);
    } finally {
      c.destroy();
    }

    const list = (query: Record<string, string | number> = {}) => call("GET", "/api/tasks", { token: ws.owner.token, query: { workspace_id: ws.workspace.id, ...query } });
    // The first listing (filtered, to show the filter holds on that path too) answers from the partition and indexes.
    const completed = await list({ status: "completed" });
    expect(completed.status, completed.text).toBe(200);
    expect(completed.body).toMatchObject({ total: 2, tasks: [{ id: ids[2] }, { id: ids[0] }] });
    const mark = await dynamoClient().send(new GetCommand({ TableName: name, Key: { pk: `ws#${ws.workspace.id}`, sk: "taskindex" }, ConsistentRead: true }));
    expect(mark.Item).toMatchObject({ backfilled: 3 });

    // From then on the index alone answers, with the older tasks and a task written since.
    const later = randomUUID();
    await db().entities.task.create({ id: later, workspace_id: ws.workspace.id, task_type: "research", prompt: "New", status: "pending", timeout_seconds: 600, created_by: ws.owner.id }).go();
    const queried: (string | undefined)[] = [];
    const recorder = "upgradeQueries";
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (/Query/.test(String(context.commandName)) && JSON.stringify(args.input).includes(ws.workspace.id)) queried.push((args.input as { IndexName?: string }).IndexName);
        return next(args);
      },
      { step: "initialize", name: recorder },
    );
    try {
      const all = await list();
      expect(all.body.total).toBe(4);
      expect(all.body.tasks.map((t: { id: string }) => t.id)).toEqual([later, ids[2], ids[1], ids[0]]);
      expect((await list({ status: "failed" })).body).toMatchObject({ total: 1, tasks: [{ id: ids[1], status: "failed" }] });
    } finally {
      dynamoClient().middlewareStack.remove(recorder);
    }
    expect(queried).toEqual(["gsi4", "gsi4"]);
  });

  it("a backfill that outlives its workspace's deletion leaves no mark behind in the emptied partition", async () => {
    const ws = await newWorkspace("Deleted while listed");
    const markKey = { pk: `ws#${ws.workspace.id}`, sk: "taskindex" };
    await dynamoClient().send(new DeleteCommand({ TableName: name, Key: markKey }));
    // The deletion empties the partition (core/workspace/deletion.ts) while a first listing's backfill is under way.
    await dynamoClient().send(new DeleteCommand({ TableName: name, Key: { pk: `ws#${ws.workspace.id}`, sk: "workspace" } }));
    expect(await backfill(TASK_LIST_INDEX, ws.workspace.id)).toEqual([]);
    expect((await dynamoClient().send(new GetCommand({ TableName: name, Key: markKey, ConsistentRead: true }))).Item).toBeUndefined();
  });

  it("a mark written during a workspace's deletion, after its last partition pass, goes with the workspace item", async () => {
    const ws = await newWorkspace("Marked while deleted");
    const marks = ["taskindex", "answerindex"].map((sk) => ({ pk: `ws#${ws.workspace.id}`, sk }));
    for (const Key of marks) await dynamoClient().send(new DeleteCommand({ TableName: name, Key }));
    const hook = "markDuringDeletion";
    // A first listing's backfill lands its marks just before the deletion's last transaction (the workspace item is
    // still there, so their condition holds).
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        const input = JSON.stringify(args.input);
        if (/TransactWrite/.test(String(context.commandName)) && input.includes(ws.workspace.id) && input.includes('"sk":"workspace"')) {
          for (const Key of marks) await dynamoClient().send(new PutCommand({ TableName: name, Item: { ...Key, backfilled: 0 } }));
        }
        return next(args);
      },
      { step: "initialize", name: hook },
    );
    try {
      const res = await call("DELETE", `/api/workspaces/${ws.workspace.id}`, { token: ws.owner.token });
      expect(res.status, res.text).toBe(204);
    } finally {
      dynamoClient().middlewareStack.remove(hook);
    }
    for (const Key of marks) expect((await dynamoClient().send(new GetCommand({ TableName: name, Key, ConsistentRead: true }))).Item).toBeUndefined();
  });

  it("a mark whose write meets another transaction on the workspace item is left for the next read; the list answers", async () => {
    const ws = await newWorkspace("Mark conflict");
    const markKey = { pk: `ws#${ws.workspace.id}`, sk: "taskindex" };
    await dynamoClient().send(new DeleteCommand({ TableName: name, Key: markKey }));
    const hook = "markConflicts";
    let conflicted = 0;
    // DynamoDB cancels a transaction that meets another on one of its items (TransactionConflict).
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (/TransactWrite/.test(String(context.commandName)) && JSON.stringify(args.input).includes('"sk":"taskindex"') && conflicted++ === 0) {
          throw new TransactionCanceledException({ message: "Transaction cancelled", $metadata: {}, CancellationReasons: [{ Code: "TransactionConflict" }, { Code: "None" }] });
        }
        return next(args);
      },
      { step: "initialize", name: hook },
    );
    try {
      const first = await call("GET", "/api/tasks", { token: ws.owner.token, query: { workspace_id: ws.workspace.id } });
      expect(first.status, first.text).toBe(200);
      expect(first.body).toEqual({ tasks: [], total: 0 });
      expect((await dynamoClient().send(new GetCommand({ TableName: name, Key: markKey, ConsistentRead: true }))).Item).toBeUndefined();
      expect((await call("GET", "/api/tasks", { token: ws.owner.token, query: { workspace_id: ws.workspace.id } })).status).toBe(200);
      expect((await dynamoClient().send(new GetCommand({ TableName: name, Key: markKey, ConsistentRead: true }))).Item).toMatchObject({ backfilled: 0 });
    } finally {
      dynamoClient().middlewareStack.remove(hook);
    }
  });
});
