/**
 * What some tools run, loaded the first time such a tool runs rather than with every copilot stream: the block
 * operations (and the Markdown parser behind them) and the three integrations (their provider SDKs and OAuth). A
 * stream that calls none of those tools never loads them, which keeps them out of the stream group's cold start
 * (bench/cold.ts; test/unit/bundle/cold-import.test.ts). Types come through `import type`, which loads nothing.
 *
 * Each loader imports the module below, which names just what the tools call: a dynamic import keeps every export of
 * the module it loads, so importing an integration's index directly would bundle code the stream never runs (a job
 * deferral, which needs the queue's grant: test/stacks/app.test.ts).
 */
export const blockOps = () => import("./deferred/blocks");
export const codehost = () => import("./deferred/codehost");
export const planner = () => import("./deferred/planner");
export const filestore = () => import("./deferred/filestore");
