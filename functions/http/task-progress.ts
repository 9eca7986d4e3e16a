import { encode } from "eventsource-encoder";
import { httpGroup, logger } from "../lib/http";
import { TASK_PROGRESS_TIMEOUT_SECONDS, taskProgressRoutes } from "./routes/task-progress";
import type { Reply } from "../lib/route";
import { SseWriter } from "../lib/sse";
import { openProgress, type PreparedProgress } from "../../core/task/progress";

/** The stream ends this long before the function's timeout, so it closes cleanly and the client reconnects, ms. */
const DEADLINE_MARGIN_MS = 10_000;

/**
 * Open the progress stream once the checks passed: the SSE writer (heartbeat comments every 15 s, the client's
 * disconnect as an abort) carries unnamed events only, a `data:` line with the JSON (spec 02 Task progress stream 5).
 */
function open(prepared: PreparedProgress): Reply {
  const writer = new SseWriter();
  const sink = {
    send: (data: unknown) => {
      if (!writer.isClosed) writer.body.write(encode({ data: JSON.stringify(data) }));
    },
    signal: writer.signal,
  };
  prepared
    .run(sink, { deadlineMs: TASK_PROGRESS_TIMEOUT_SECONDS * 1000 - DEADLINE_MARGIN_MS })
    .catch((err: unknown) => logger.error("task progress stream failed", { error: err as Error, task_id: prepared.task.id }))
    .finally(() => writer.end());
  return { status: 200, body: writer.body, contentType: "text/event-stream" };
}

/** `GET /api/tasks/{task_id}/progress` (spec 02): a response-streaming Lambda (middy streamifyResponse). */
export const handler = httpGroup(taskProgressRoutes, {
  "task-progress.stream": async ({ user, params }) => open(await openProgress(user.id, params.task_id)),
});
