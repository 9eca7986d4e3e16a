import { Duration, aws_kms as kms, aws_s3 as s3 } from "aws-cdk-lib";
import { Construct } from "constructs";
import { Bucket, Table, use, type StackContext } from "sst/constructs";
import { globalIndexes, TABLE_KEYS } from "../core/db/table";
import { Secrets } from "./Secrets";

/** Key prefix of research uploads; object-created events under it start extraction (stacks/Pipelines.ts). */
export const UPLOAD_PREFIX = "workspaces/";

/** Key prefix of the uploads bucket's server access logs in the access-log bucket. */
export const ACCESS_LOG_PREFIX = "uploads/";
/** How long server access logs are kept. */
export const ACCESS_LOG_RETENTION_DAYS = 90;

/**
 * The bucket that receives the uploads bucket's S3 server access logs: private, TLS only, bucket-owner-enforced (no
 * ACLs), logs expire after {@link ACCESS_LOG_RETENTION_DAYS}. S3's log delivery may write under `uploads/` only, and
 * only for the uploads bucket of this account (a bucket policy, the way S3 recommends; the ACL grant is the legacy one
 * and needs ACLs switched back on). It does not log its own access: logs of the log bucket would go either to itself,
 * a loop, or to yet another bucket that would need one too.
 */
function accessLogBucket(stack: Construct): s3.Bucket {
  const scope = new Construct(stack, "AccessLogs");
  // CDK's switch for granting S3 log delivery by bucket policy instead of the LogDeliveryWrite ACL; context set
  // on this scope, before its bucket exists, so it applies to this bucket only.
  scope.node.setContext("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy", true);
  const logs = new s3.Bucket(scope, "Bucket", {
    blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
    objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
    encryption: s3.BucketEncryption.S3_MANAGED,
    enforceSSL: true,
    lifecycleRules: [{ id: "expire-access-logs", expiration: Duration.days(ACCESS_LOG_RETENTION_DAYS) }],
  });
  // No AwsSolutions-S1 suppression needed: cdk-nag counts a bucket that receives another bucket's access logs as compliant.
  return logs;
}

/**
 * The table's attribute definitions and indexes, derived from the shared key shape in `core/db/table.ts`
 * so the deployed table and DynamoDB Local's create-table cannot drift. Every key attribute is a string; each index
 * projects what `TABLE_KEYS` says (ALL, or gsi4's INCLUDE list).
 */
export function tableShape() {
  const indexes = globalIndexes();
  const keyFields = [TABLE_KEYS.partitionKey, TABLE_KEYS.sortKey, ...indexes.flatMap(([, k]) => [k.partitionKey, k.sortKey])];
  return {
    fields: Object.fromEntries(keyFields.map((name) => [name, "string" as const])),
    primaryIndex: { partitionKey: TABLE_KEYS.partitionKey, sortKey: TABLE_KEYS.sortKey },
    // SST turns a list of names into an INCLUDE projection of those (gsi4's slim list entries), "all" into ALL.
    globalIndexes: Object.fromEntries(
      indexes.map(([name, k]) => [name, { partitionKey: k.partitionKey, sortKey: k.sortKey, projection: k.include ? [...k.include] : ("all" as const) }]),
    ),
  };
}

/**
 * The Storage stack: the single DynamoDB table (on-demand, point-in-time recovery, TTL, Streams with both
 * images for the change consumers), the private uploads bucket and the bucket of its server access logs, and the
 * KMS key of the integration tokens stored in the table.
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
  const accessLogs = accessLogBucket(stack);
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
        // Who read, wrote or deleted which file, and from where (S3 server access logs).
        serverAccessLogsBucket: accessLogs,
        serverAccessLogsPrefix: ACCESS_LOG_PREFIX,
      },
    },
  });

  // The key that wraps the integration tokens stored in the table (AWS Encryption SDK, core/integration/crypto.ts):
  // its ARN is TOKEN_KMS_KEY_ID of the functions that open tokens, each allowed Encrypt, Decrypt and GenerateDataKey
  // on this key only (stacks/defaults.ts grantTokenKey). Yearly rotation (AwsSolutions-KMS5); old key material stays
  // usable for decryption, so stored tokens keep opening. Kept beside the table: the tokens are unreadable without it.
  const tokenKey = new kms.Key(stack, "IntegrationTokens", {
    description: "Wraps the integration tokens stored in the table (core/integration/crypto.ts)",
    enableKeyRotation: true,
  });

  stack.addOutputs({ TableName: table.tableName, BucketName: bucket.bucketName });
  return { table, bucket, accessLogs, tokenKey };
}
