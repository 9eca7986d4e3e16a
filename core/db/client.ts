import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { Config } from "../config";

let dynamo: DynamoDBDocumentClient | undefined;

/** The DynamoDB document client; points at DynamoDB Local when DYNAMODB_ENDPOINT is set. */
export function dynamoClient(): DynamoDBDocumentClient {
  if (!dynamo) {
    const endpoint = Config.dynamoEndpoint();
    const base = new DynamoDBClient({
      region: Config.region(),
      ...(endpoint ? { endpoint, credentials: { accessKeyId: "local", secretAccessKey: "local" } } : {}),
    });
    dynamo = DynamoDBDocumentClient.from(base, { marshallOptions: { removeUndefinedValues: true } });
  }
  return dynamo;
}
