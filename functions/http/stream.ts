import { httpGroup } from "../lib/http";
import { streamRoutes } from "./routes/stream";
import type { Reply } from "../lib/route";
import { SseWriter } from "../lib/sse";
import { logger } from "../lib/http";
import * as Copilot from "../../core/agent/copilot";

/**
 * Open the stream once the checks passed: the run writes events to the SSE body in the background, and its stream
 * slot is released when it ends, whatever happens, before the body ends: a client that starts its next stream on
 * the end of this one finds the slot free, and a Lambda whose response has ended may be frozen before a release
 * sent after it. A release that fails is logged (the slot then expires by itself), never thrown into the void.
 */
function open(prepared: Copilot.PreparedStream): Reply {
  const writer = new SseWriter();
  prepared
    .run(writer)
    .catch((err: unknown) => {
      logger.error("stream failed", { error: err as Error });
      writer.send("error", { code: "INTERNAL", message: "The stream failed" });
    })
    .then(() => prepared.release())
    .catch((err: unknown) => logger.error("stream slot release failed", { error: err as Error }))
    .finally(() => writer.end());
  return { status: 200, body: writer.body, contentType: "text/event-stream" };
}

/** The SSE endpoints (spec 02 Streaming): a response-streaming Lambda (middy streamifyResponse). */
export const handler = httpGroup(streamRoutes, {
  "stream.chat": async ({ user, body }) => open(await Copilot.prepareChat(user.id, body)),
  "stream.synthesis": async ({ user, body }) => open(await Copilot.prepareSynthesis(user.id, body)),
  "stream.recommendation": async ({ user, body }) => open(await Copilot.prepareRecommendation(user.id, body)),
  "stream.draft": async ({ user, body }) => open(await Copilot.prepareDraft(user.id, body)),
  "stream.pipeline": async ({ user, body }) => open(await Copilot.preparePipeline(user.id, body)),
});
