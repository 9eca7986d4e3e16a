import { Config } from "../config";
import type { ErrorCode } from "../error";
import type { IntegrationKind } from "./schema";

/**
 * How one kind's provider does OAuth 2.0 (spec 02 Authentication 4; DESIGN.md 6.4): every address from a setting
 * (the public default otherwise), so GitHub Enterprise Server and stand-in providers work.
 */
export interface OAuthProvider {
  kind: IntegrationKind;
  /** The provider's name for messages. */
  name: string;
  /** Prefix of the credential settings: `<prefix>_CLIENT_ID`, `<prefix>_CLIENT_SECRET`. */
  settingPrefix: "GITHUB" | "LINEAR" | "ATLASSIAN" | "GOOGLE";
  issuer: () => string;
  authorizationEndpoint: () => string;
  tokenEndpoint: () => string;
  /** Space-separated scopes asked for (Linear takes them comma-separated: `scopeSeparator`). */
  scopes: readonly string[];
  scopeSeparator?: string;
  /** The provider accepts PKCE S256 (then it is always sent). */
  pkce: boolean;
  /** Extra authorization parameters (Atlassian's audience and consent prompt, Google's offline access). */
  extraParams?: Record<string, string>;
  /** The code a refused grant answers with: 424, the user must reconnect. */
  tokenErrorCode: ErrorCode;
}

export const PROVIDERS: Record<IntegrationKind, OAuthProvider> = {
  codehost: {
    kind: "codehost",
    name: "GitHub",
    settingPrefix: "GITHUB",
    issuer: () => Config.githubWebUrl(),
    authorizationEndpoint: () => `${Config.githubWebUrl()}/login/oauth/authorize`,
    tokenEndpoint: () => `${Config.githubWebUrl()}/login/oauth/access_token`,
    // repo: read code and write issues in private repositories too; read:user: the login and avatar of status.
    scopes: ["repo", "read:user"],
    pkce: true,
    tokenErrorCode: "CODEHOST_TOKEN_ERROR",
  },
  planner: {
    kind: "planner",
    name: "Linear",
    settingPrefix: "LINEAR",
    issuer: () => Config.linearWebUrl(),
    authorizationEndpoint: () => `${Config.linearWebUrl()}/oauth/authorize`,
    tokenEndpoint: () => `${Config.linearApiUrl()}/oauth/token`,
    scopes: ["read", "write"],
    scopeSeparator: ",",
    pkce: true,
    tokenErrorCode: "PLANNER_TOKEN_ERROR",
  },
  tickets: {
    kind: "tickets",
    name: "Jira",
    settingPrefix: "ATLASSIAN",
    issuer: () => Config.atlassianAuthUrl(),
    authorizationEndpoint: () => `${Config.atlassianAuthUrl()}/authorize`,
    tokenEndpoint: () => `${Config.atlassianAuthUrl()}/oauth/token`,
    scopes: ["read:jira-work", "write:jira-work", "read:jira-user", "offline_access"],
    // Atlassian's 3LO documents no PKCE; it is not sent there.
    pkce: false,
    extraParams: { audience: "api.atlassian.com", prompt: "consent" },
    tokenErrorCode: "TICKETS_TOKEN_ERROR",
  },
  filestore: {
    kind: "filestore",
    name: "Google Drive",
    settingPrefix: "GOOGLE",
    issuer: () => Config.googleAuthUrl(),
    authorizationEndpoint: () => `${Config.googleAuthUrl()}/o/oauth2/v2/auth`,
    tokenEndpoint: () => `${Config.googleTokenUrl()}/token`,
    scopes: ["https://www.googleapis.com/auth/drive", "https://www.googleapis.com/auth/userinfo.email", "https://www.googleapis.com/auth/userinfo.profile"],
    pkce: true,
    // offline + consent: Google issues a refresh token only then.
    extraParams: { access_type: "offline", prompt: "consent", include_granted_scopes: "true" },
    tokenErrorCode: "FILESTORE_TOKEN_ERROR",
  },
};

/** The exact redirect URI registered with the provider for a kind: `<API_URL>/api/integrations/<kind>/callback`. */
export const redirectUriOf = (kind: IntegrationKind): string => `${Config.apiUrl()}/api/integrations/${kind}/callback`;

/** The frontend page a callback sends the browser back to: `<APP_URL>/settings/integrations`. */
export const settingsPageOf = (): string => `${Config.appUrl()}/settings/integrations`;
