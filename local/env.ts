import { DEV_AUDIENCE, DEV_ISSUER, type DevIdp } from "./idp";

/**
 * Point the handlers at the embedded stand-ins (DESIGN.md section 2). Everything the code reads through
 * core/config.ts is set here, so the same handler modules run unchanged.
 */
export function applyLocalEnv(opts: { dynamoEndpoint: string; s3Endpoint: string; idp: DevIdp; tableName: string; bucketName: string }): void {
  Object.assign(process.env, {
    STAGE: process.env.STAGE ?? "local",
    AWS_REGION: process.env.AWS_REGION ?? "us-east-1",
    TABLE_NAME: opts.tableName,
    BUCKET_NAME: opts.bucketName,
    DYNAMODB_ENDPOINT: opts.dynamoEndpoint,
    S3_ENDPOINT: opts.s3Endpoint,
    JWT_ISSUER: DEV_ISSUER,
    JWT_AUDIENCE: DEV_AUDIENCE,
    JWT_JWKS: JSON.stringify(opts.idp.jwks),
    // Handlers never reach AWS locally; the SDK still wants credentials to sign with.
    AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? "local",
    AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? "local",
  });
}
