import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { Config } from "../config";

let base: DynamoDBClient | undefined;
let dynamo: DynamoDBDocumentClient | undefined;

/**
 * The plain DynamoDB client (attribute-value commands) under the document client: for libraries that send their
 * own marshalled commands (Powertools idempotency), so they share its connections and settings.
 */
export function dynamoBaseClient(): DynamoDBClient {
  if (!base) {
    const endpoint = Config.dynamoEndpoint();
    base = new DynamoDBClient({
      region: Config.region(),
      ...(endpoint ? { endpoint, credentials: { accessKeyId: "local", secretAccessKey: "local" } } : {}),
    });
  }
  return base;
}

/** The DynamoDB document client; points at DynamoDB Local when DYNAMODB_ENDPOINT is set. */
export function dynamoClient(): DynamoDBDocumentClient {
  dynamo ??= DynamoDBDocumentClient.from(dynamoBaseClient(), { marshallOptions: { removeUndefinedValues: true } });
  return dynamo;
}
