import { Duration } from "aws-cdk-lib";
import { Bucket, Table, use, type StackContext } from "sst/constructs";
import { TABLE_KEYS } from "../core/db/table";
import { Secrets } from "./Secrets";

/** Key prefix of research uploads; object-created events under it start extraction (stacks/Pipelines.ts). */
export const UPLOAD_PREFIX = "workspaces/";

/**
 * The table's attribute definitions and indexes, derived from the shared key shape in `core/db/table.ts`
 * so the deployed table and DynamoDB Local's create-table cannot drift. Every key attribute is a string.
 */
export function tableShape() {
  const indexes = Object.entries(TABLE_KEYS.globalIndexes);
  const keyFields = [TABLE_KEYS.partitionKey, TABLE_KEYS.sortKey, ...indexes.flatMap(([, k]) => [k.partitionKey, k.sortKey])];
  return {
    fields: Object.fromEntries(keyFields.map((name) => [name, "string" as const])),
    primaryIndex: { partitionKey: TABLE_KEYS.partitionKey, sortKey: TABLE_KEYS.sortKey },
    globalIndexes: Object.fromEntries(
      indexes.map(([name, k]) => [name, { partitionKey: k.partitionKey, sortKey: k.sortKey, projection: "all" as const }]),
    ),
  };
}

/**
 * The Storage stack: the single DynamoDB table (on-demand, point-in-time recovery, TTL, Streams with both
 * images for the change consumers) and the private uploads bucket.
 *
 * The bucket's object-created notification is added by the Pipelines stack on an imported reference, not here:
 * a notification on this construct would make Storage depend on Pipelines' function while Pipelines already
 * depends on Storage, a cross-stack cycle CloudFormation cannot deploy.
 */
export function Storage({ stack }: StackContext) {
  const { parameters } = use(Secrets);

  const table = new Table(stack, "Table", {
    ...tableShape(),
    timeToLiveAttribute: TABLE_KEYS.ttlAttribute,
    stream: "new_and_old_images",
  });

  const origins = parameters.CORS_ORIGINS.value.split(",").map((s) => s.trim()).filter(Boolean);
  const bucket = new Bucket(stack, "Uploads", {
    // BLOCK_ALL plus bucket-owner-enforced ownership: files are reached only through presigned URLs.
    blockPublicACLs: true,
    // Browsers upload large files straight to S3 with a presigned POST (DESIGN.md section 5) and download with
    // presigned GETs; the form POST needs CORS, and the client reads the ETag of what it stored.
    cors: [
      {
        allowedMethods: ["POST", "GET", "HEAD"],
        allowedOrigins: origins.length ? origins : ["*"],
        allowedHeaders: ["*"],
        exposedHeaders: ["ETag"],
        maxAge: "1 day",
      },
    ],
    cdk: {
      bucket: {
        // Abandoned multipart uploads would otherwise be billed forever.
        lifecycleRules: [{ id: "abort-incomplete-uploads", abortIncompleteMultipartUploadAfter: Duration.days(1) }],
      },
    },
  });

  stack.addOutputs({ TableName: table.tableName, BucketName: bucket.bucketName });
  return { table, bucket };
}
