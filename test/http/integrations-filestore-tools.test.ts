/**
 * The copilot's file-store tools (issue #20 point 6; spec 02 "File-store integration"), run as the agent loop runs
 * them against the stand-in Google Drive through real @googleapis/drive: arguments, clamps, return fields, Google Docs
 * exported to text, byte caps that never split a character, the spec's tool errors (not connected, not found, token
 * expired, rate limited with retry_after, unsupported types, too large), and the gated write that a replay never
 * doubles.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gatedTool, toolByName, type ReadTool, type ToolContext } from "../../core/agent/tools";
import { MAX_READ_BYTES, readText, withFileStore } from "../../core/integration/filestore";
import { READ_RESULT_CHARS } from "../../core/agent/tools/filestore";
import { newWorkspace } from "../support/api";
import { connectDrive, DriveStandIn, useDriveSettings } from "../support/drive-standin";

const drive = new DriveStandIn();
let ctx: ToolContext;
let docId: string;
let folderId: string;

beforeAll(async () => {
  useDriveSettings(drive);
  drive.listen();
  folderId = drive.put({ name: "Research", mimeType: "application/vnd.google-apps.folder" });
  docId = drive.put({ name: "Interview notes", mimeType: "application/vnd.google-apps.document", parents: [folderId], content: "Users lose uploads on flaky networks.\nThey retry three times." });
  drive.put({ name: "Budget", mimeType: "application/vnd.google-apps.spreadsheet", parents: [folderId], content: "item,cost\nhosting,120\n" });
  drive.put({ name: "roadmap.md", mimeType: "text/markdown", parents: [folderId], content: "# Roadmap\n\nResumable uploads in Q2.\n" });
  drive.put({ name: "logo.png", mimeType: "image/png", parents: [folderId], content: "\u0089PNG" });
  drive.put({ name: "old uploads plan", mimeType: "text/plain", content: "uploads", trashed: true });
  const { owner, workspace } = await newWorkspace("Drive tools");
  await connectDrive(drive, owner.token, workspace.id);
  ctx = { userId: owner.id, workspaceId: workspace.id, missionId: null, sessionId: null, attachmentIds: [] };
});
afterAll(() => drive.close());

const run = async (c: ToolContext, name: string, raw: unknown): Promise<any> => {
  const tool = toolByName(name) as ReadTool;
  return tool.run(c, tool.input.parse(raw));
};

describe("read tools", () => {
  it("filestore_search: name or content matches, by relevance (no sort: Drive refuses one on a fullText query), trash excluded; limit clamped 1 to 50 (default 10)", async () => {
    const res = await run(ctx, "filestore_search", { query: "uploads" });
    expect(res.files.map((f: { name: string }) => f.name).sort()).toEqual(["Interview notes", "roadmap.md"]);
    expect(res).toMatchObject({ count: 2, query: "uploads", truncated: false });
    const byName = Object.fromEntries(res.files.map((f: { name: string }) => [f.name, f]));
    expect(byName["roadmap.md"]).toMatchObject({ mime_type: "text/markdown", is_folder: false, size: 36, parents: [folderId], web_view_link: expect.stringContaining("https://") });
    expect(byName["Interview notes"]).toMatchObject({ mime_type: "application/vnd.google-apps.document", size: null });
    const search = new URL(drive.requests.at(-1)!.path, "https://x").searchParams;
    expect(search.get("q")).toContain("fullText contains");
    expect(search.has("orderBy")).toBe(false);
    expect(drive.requests.at(-1)!.status).toBe(200);
    // The stand-in orders as Drive's relevance might: a name match before a content match.
    expect((await run(ctx, "filestore_search", { query: "roadmap" })).files.map((f: { name: string }) => f.name)).toEqual(["roadmap.md"]);
    const one = await run(ctx, "filestore_search", { query: "uploads", limit: 0 });
    expect(one).toMatchObject({ count: 1, truncated: true });
    await run(ctx, "filestore_search", { query: "it's", limit: 500 });
    const sent = drive.requests.filter((r) => r.path.startsWith("/drive/v3/files?")).map((r) => new URL(r.path, "https://x").searchParams);
    expect(sent.at(-1)!.get("pageSize")).toBe("50");
    // The quote is escaped in Drive's query language (the stand-in refuses a query it cannot read).
    expect(sent.at(-1)!.get("q")).toContain(String.raw`'it\'s'`);
    expect(drive.requests.at(-1)!.status).toBe(200);
    expect(() => (toolByName("filestore_search") as ReadTool).input.parse({ query: "" })).toThrow();
  });

  it("filestore_read: a Google Doc exported to text (no byte-order mark), a Sheet to CSV, a stored text file as it is", async () => {
    expect(await run(ctx, "filestore_read", { file_id: docId })).toMatchObject({
      file_id: docId, name: "Interview notes", content: "Users lose uploads on flaky networks.\nThey retry three times.", exported_as: "text/plain", truncated: false, total_bytes: 61,
    });
    const sheet = drive.put({ name: "Sheet", mimeType: "application/vnd.google-apps.spreadsheet", content: "a,b\n1,2\n" });
    expect(await run(ctx, "filestore_read", { file_id: sheet })).toMatchObject({ content: "a,b\n1,2\n", exported_as: "text/csv" });
    const md = (await run(ctx, "filestore_search", { query: "roadmap" })).files[0].id;
    expect(await run(ctx, "filestore_read", { file_id: md })).toMatchObject({ content: "# Roadmap\n\nResumable uploads in Q2.\n", exported_as: null, mime_type: "text/markdown" });
  });

  it("filestore_read: a read capped at 50,000 bytes and the tool's result at the loop's limit, without splitting a character, read on by offset; errors for folders, binaries, missing files and oversized exports", async () => {
    const whole = "a" + "漢".repeat(20_000);
    const long = drive.put({ name: "long.txt", content: whole });
    const read = await withFileStore(ctx.workspaceId, (store) => readText(store, long));
    expect(read).toMatchObject({ truncated: true, total_bytes: 60_001, offset: 0 });
    expect(Buffer.byteLength(read.content)).toBeLessThanOrEqual(MAX_READ_BYTES);
    expect(Buffer.byteLength(read.content)).toBeGreaterThan(MAX_READ_BYTES - 3);
    expect(read.content).not.toContain("\uFFFD");
    const res = await run(ctx, "filestore_read", { file_id: long });
    expect(res).toMatchObject({ truncated: true, total_bytes: 60_001, offset: 0, next_offset: res.content.length });
    expect(JSON.stringify(res).length).toBeLessThanOrEqual(READ_RESULT_CHARS);
    expect(res.content).not.toContain("\uFFFD");
    // Read on from next_offset until the whole text is read.
    let text = res.content;
    for (let page = res; page.next_offset !== null; ) {
      page = await run(ctx, "filestore_read", { file_id: long, offset: page.next_offset });
      expect(page.offset).toBe(text.length);
      text += page.content;
    }
    expect(text).toBe(whole);
    // An emoji (a surrogate pair) is never split, at the cut or at an offset inside it.
    const emoji = drive.put({ name: "emoji.txt", content: "😀".repeat(15_000) });
    const first = await run(ctx, "filestore_read", { file_id: emoji });
    expect(first.next_offset % 2).toBe(0);
    expect((await run(ctx, "filestore_read", { file_id: emoji, offset: 1 })).content.startsWith("😀")).toBe(true);
    expect(await run(ctx, "filestore_read", { file_id: folderId })).toMatchObject({ success: false, error_code: "validation_error" });
    const png = (await run(ctx, "filestore_list_folder", { folder_id: folderId })).files.find((f: { name: string }) => f.name === "logo.png").id;
    expect(await run(ctx, "filestore_read", { file_id: png })).toMatchObject({ success: false, error_code: "unsupported_type" });
    expect(await run(ctx, "filestore_read", { file_id: "nope" })).toMatchObject({ success: false, error_code: "not_found" });
    drive.exportLimit = 10;
    try {
      expect(await run(ctx, "filestore_read", { file_id: docId })).toMatchObject({ success: false, error_code: "too_large" });
    } finally {
      drive.exportLimit = 10 * 1024 * 1024;
    }
  });

  it("filestore_list_folder: root by default, folders first then by name, limit clamped 1 to 100 (default 50), paged by next_page_token", async () => {
    const root = await run(ctx, "filestore_list_folder", {});
    expect(root.folder_id).toBe("root");
    expect(root.files[0]).toMatchObject({ name: "Research", is_folder: true });
    const first = await run(ctx, "filestore_list_folder", { folder_id: folderId, limit: 2 });
    expect(first.files.map((f: { name: string }) => f.name)).toEqual(["Budget", "Interview notes"]);
    expect(first.next_page_token).toEqual(expect.any(String));
    const next = await run(ctx, "filestore_list_folder", { folder_id: folderId, limit: 2, page_token: first.next_page_token });
    expect(next).toMatchObject({ count: 2, next_page_token: null });
    expect(next.files.map((f: { name: string }) => f.name)).toEqual(["logo.png", "roadmap.md"]);
    await run(ctx, "filestore_list_folder", { limit: 1000 });
    expect(new URL(drive.requests.at(-1)!.path, "https://x").searchParams.get("pageSize")).toBe("100");
    const parsed = (toolByName("filestore_list_folder") as ReadTool).input.parse({});
    expect(parsed).toMatchObject({ folder_id: "root", limit: 50 });
  });

  it("429 and Drive's 403 rateLimitExceeded are rate_limited with retry_after; 401 is token_expired; no connection is integration_not_connected", async () => {
    drive.fail({ match: /^GET \/drive\/v3\/files$/, status: 429, headers: { "retry-after": "9" }, reason: "rateLimitExceeded" });
    expect(await run(ctx, "filestore_search", { query: "x" })).toMatchObject({ success: false, error_code: "rate_limited", retry_after: 9 });
    drive.fail({ match: /^GET \/drive\/v3\/files$/, status: 403, reason: "userRateLimitExceeded" });
    expect(await run(ctx, "filestore_search", { query: "x" })).toMatchObject({ success: false, error_code: "rate_limited", retry_after: 60 });
    drive.fail({ match: /^GET \/drive\/v3\/files\//, status: 403, reason: "insufficientFilePermissions" });
    expect(await run(ctx, "filestore_read", { file_id: docId })).toMatchObject({ success: false, error_code: "forbidden" });
    // A 429 is never slept through: one request each.
    expect(drive.requests.filter((r) => r.status === 429)).toHaveLength(1);

    const { owner, workspace } = await newWorkspace("Not connected");
    expect(await run({ ...ctx, userId: owner.id, workspaceId: workspace.id }, "filestore_search", { query: "x" })).toMatchObject({ success: false, error_code: "integration_not_connected" });

    const other = await newWorkspace("Revoked");
    await connectDrive(drive, other.owner.token, other.workspace.id);
    const revoked = { ...ctx, userId: other.owner.id, workspaceId: other.workspace.id };
    drive.fail({ match: /^GET \/drive\/v3\/files$/, status: 401, reason: "authError" });
    expect(await run(revoked, "filestore_search", { query: "x" })).toMatchObject({ success: false, error_code: "token_expired" });
    expect(await run(revoked, "filestore_search", { query: "x" })).toMatchObject({ success: false, error_code: "token_expired" });
  });

  it("a dropped connection to Drive is error_code unknown (as the other providers' are), not a failure of the tool", async () => {
    drive.fail({ match: /^GET \/drive\/v3\/files$/, status: 0, lost: true, times: 10 });
    try {
      expect(await run(ctx, "filestore_search", { query: "x" })).toMatchObject({ success: false, error_code: "unknown", error: expect.stringMatching(/did not answer/) });
    } finally {
      drive.clearFailures();
    }
  });
});

describe("filestore_write (gated)", () => {
  it("creates a file in a folder; an approved action replayed creates it once; the preview caps the content shown", async () => {
    const tool = gatedTool("filestore_write")!;
    const content = `# Summary\n\n${"x".repeat(5000)}`;
    const input = tool.input.parse({ name: "summary.md", content, mime_type: "text/markdown", folder_id: folderId });
    const preview = await tool.preview(ctx, input);
    expect(preview).toMatchObject({ target: "filestore_file", operation: "create", summary: `Create 'summary.md' in Google Drive (folder ${folderId})` });
    expect(String((preview.fields as { content: string }).content).length).toBe(4001);
    const exec = { userId: ctx.userId, workspaceId: ctx.workspaceId, actionId: randomUUID() };
    const before = drive.files.size;
    const first = await tool.execute(exec, input);
    const replay = await tool.execute(exec, input);
    expect(drive.files.size - before).toBe(1);
    expect(replay).toEqual(first);
    const stored = drive.files.get(first.file_id as string)!;
    expect(stored).toMatchObject({ name: "summary.md", mimeType: "text/markdown", parents: [folderId], content, appProperties: { r2d_action: exec.actionId } });
    expect(first).toMatchObject({ created: true, bytes_written: Buffer.byteLength(content), mime_type: "text/markdown" });
  });

  it("updates a stored file's content (and name); refuses to overwrite a Google Doc or to create without a name", async () => {
    const tool = gatedTool("filestore_write")!;
    const id = drive.put({ name: "notes.txt", content: "old" });
    const input = tool.input.parse({ file_id: id, content: "new ✓", name: "notes-v2.txt" });
    expect((await tool.preview(ctx, input)).operation).toBe("update");
    const res = await tool.execute({ userId: ctx.userId, workspaceId: ctx.workspaceId, actionId: randomUUID() }, input);
    expect(res).toMatchObject({ file_id: id, created: false, name: "notes-v2.txt" });
    expect(drive.files.get(id)).toMatchObject({ content: "new ✓", name: "notes-v2.txt" });
    await expect(tool.execute({ userId: ctx.userId, workspaceId: ctx.workspaceId, actionId: randomUUID() }, tool.input.parse({ file_id: docId, content: "x" }))).rejects.toMatchObject({ code: "VALIDATION_ERROR" });
    expect(drive.files.get(docId)!.content).toContain("flaky networks");
    // Nor is a stored binary file replaced by text (422); the preview names the file, not just its id.
    const pdf = drive.put({ name: "contract.pdf", mimeType: "application/pdf", content: "%PDF-1.7 binary" });
    const overPdf = tool.input.parse({ file_id: pdf, content: "notes" });
    expect((await tool.preview(ctx, overPdf)).summary).toBe(`Replace the content of Google Drive file 'contract.pdf' (${pdf})`);
    await expect(tool.execute({ userId: ctx.userId, workspaceId: ctx.workspaceId, actionId: randomUUID() }, overPdf))
      .rejects.toMatchObject({ code: "VALIDATION_ERROR", status: 422, message: expect.stringMatching(/contract\.pdf \(application\/pdf\) cannot be overwritten/) });
    expect(drive.files.get(pdf)).toMatchObject({ mimeType: "application/pdf", content: "%PDF-1.7 binary" });
    expect(() => tool.input.parse({ content: "x" })).toThrow(/name is required/);
    expect(() => tool.input.parse({ name: "big.txt", content: "x".repeat(60_000) })).toThrow(/at most 60000 bytes of content as JSON/);
    expect(() => tool.input.parse({ name: "a.pdf", content: "x", mime_type: "application/pdf" })).toThrow();
  });

  it("a rate-limited write throws RATE_LIMITED (the executor retries it after Retry-After), not a tool answer", async () => {
    const tool = gatedTool("filestore_write")!;
    drive.fail({ match: /^POST \/upload\/drive\/v3\/files$/, status: 429, headers: { "retry-after": "30" }, reason: "rateLimitExceeded" });
    await expect(tool.execute({ userId: ctx.userId, workspaceId: ctx.workspaceId, actionId: randomUUID() }, tool.input.parse({ name: "n.txt", content: "x" })))
      .rejects.toMatchObject({ code: "RATE_LIMITED", extra: { retry_after_seconds: 30 } });
  });
});
