/**
 * Several stand-in providers in one process: `msw` servers do not compose (the last to listen intercepts alone), so
 * the stand-ins' handlers are served by one server.
 */
import { setupServer, type SetupServer } from "msw/node";
import type { RequestHandler } from "msw";

/** Listen with every stand-in's handlers on one server; close it with `close()`. */
export function listenTogether(...standIns: { mswHandlers(): RequestHandler[] }[]): SetupServer {
  const server = setupServer(...standIns.flatMap((s) => s.mswHandlers()));
  server.listen({ onUnhandledFrame: "bypass" });
  return server;
}
