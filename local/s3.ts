import S3rver from "s3rver";
import { mkdir } from "node:fs/promises";
import type { S3Event } from "aws-lambda";

export interface RunningS3 {
  endpoint: string;
  /** Subscribe to S3-shaped object events (ObjectCreated:Put/Post/Copy, ObjectRemoved). */
  onEvent(listener: (event: S3Event) => void): void;
  stop(): Promise<void>;
}

/** Start the local object store (s3rver) on loopback with the uploads bucket, files kept under `directory`. */
export async function startS3(opts: { directory: string; bucket: string; port?: number }): Promise<RunningS3> {
  await mkdir(opts.directory, { recursive: true });
  const server = new S3rver({
    address: "127.0.0.1",
    port: opts.port ?? 0,
    directory: opts.directory,
    silent: true,
    allowMismatchedSignatures: true,
    configureBuckets: [{ name: opts.bucket, configs: [] }],
  } as never);
  const address = (await server.run()) as unknown as { address: string; port: number };
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    onEvent: (listener) => (server as unknown as NodeJS.EventEmitter).on("event", listener),
    stop: () => server.close() as unknown as Promise<void>,
  };
}
