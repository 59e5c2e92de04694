/**
 * Each operation's description lists its checks in order (`3. 400
 * `message`: when`). These tests hold that list to the contract (written out
 * here from the contract as docs/api.md and docs/checks.md state it) and the service to that list: a
 * request that breaks several checks is answered by the one the document
 * lists first.
 */
import { assert, assertEquals } from "./support/assert.ts";
import {
  loginCookie,
  sharedService,
  type TestService,
} from "./support/service.ts";

const service = sharedService();

type Listed = [status: number, message: string];

const ADMIN: Listed[] = [
  [401, "Unauthorised"],
  [403, "Forbidden"],
  [403, "Second factor enrollment required"],
];
/** A signed-in person acting on their own second factors, with a session. */
const OWN: Listed[] = [[401, "Unauthorised"], [403, "Forbidden"]];
const STEP_UP: Listed = [403, "Recent second factor required"];
/** A group a SCIM connection owns: read-only through /api. */
const OWNED: Listed = [
  409,
  "Group is managed by its identity provider: change it there",
];
/** Decided in the write, under the user's lock: the user holds a permission the caller does not. */
const OUTRANKED: Listed = [403, "Cannot act on a more privileged user"];
const GRANT: Listed = [403, "Cannot grant more than you hold"];
const MFA_FAILED: Listed = [500, "Second factor request failed"];
const query = (...names: string[]): Listed[] =>
  names.map((name) => [400, `Invalid query parameter: ${name}`]);
/** A SCIM list's parameters: its numbers and order, its filter, its cursor. */
const SCIM_LIST: Listed[] = [
  [400, "A value is not valid"],
  [400, "The filter is not valid"],
  [400, "The cursor is not valid"],
  [400, "The cursor has expired"],
];

/** The audit trail's query parameters, in the order they are checked. */
const AUDIT_PARAMETERS = [
  "limit",
  "before",
  "action",
  "actorId",
  "targetId",
  "since",
  "until",
];

/** The contract's check order of every operation. */
const CONTRACT: Record<string, Listed[]> = {
  "post /api/auth/login": [
    [403, "Forbidden"],
    [413, "Request body too large"],
    [400, "Username and password are required"],
    [400, "Invalid request body"],
    [429, "Too many login attempts"],
    [401, "Invalid username or password"],
    [401, "Use your identity provider to sign in"],
    [401, "Second factor required"],
    [401, "Invalid code"],
    [403, "Account disabled"],
    [500, "Login failed"],
  ],
  "post /api/auth/login/second-factor": [
    [403, "Forbidden"],
    [401, "Unauthorised"],
    [413, "Request body too large"],
    [400, "Invalid request body"],
    [429, "Too many login attempts"],
    [401, "Invalid code"],
    [403, "Account disabled"],
    [500, "Login failed"],
  ],
  "post /api/auth/login/second-factor/options": [
    [403, "Forbidden"],
    [401, "Unauthorised"],
    [500, "Login failed"],
  ],
  "post /api/auth/password": [
    ...OWN,
    [413, "Request body too large"],
    [400, "All fields are required"],
    [400, "Password must be at least 8 characters"],
    [400, "Password must be at most 72 bytes"],
    [400, "Password must not contain NUL characters"],
    [409, "No password is set for this account"],
    [429, "Too many login attempts"],
    [401, "Current password is incorrect"],
    [500, "Failed to change password"],
  ],
  "get /api/auth/sessions": [...OWN, [500, "Failed to list sessions"]],
  "delete /api/auth/sessions": [...OWN, [500, "Failed to end sessions"]],
  "delete /api/auth/sessions/{sessionId}": [
    ...OWN,
    [404, "Session not found"],
    [500, "Failed to end sessions"],
  ],
  "post /api/auth/step-up": [
    ...OWN,
    [413, "Request body too large"],
    [400, "Invalid request body"],
    [400, "No second factor enrolled"],
    [429, "Too many login attempts"],
    [401, "Invalid code"],
    MFA_FAILED,
  ],
  "post /api/auth/step-up/options": [
    ...OWN,
    [400, "No second factor enrolled"],
    MFA_FAILED,
  ],
  "get /api/auth/mfa": [...OWN, MFA_FAILED],
  "post /api/auth/mfa/totp": [
    ...OWN,
    STEP_UP,
    [409, "Second factor already enrolled"],
    MFA_FAILED,
  ],
  "post /api/auth/mfa/totp/confirm": [
    ...OWN,
    [413, "Request body too large"],
    [400, "Invalid request body"],
    [400, "Invalid code"],
    MFA_FAILED,
  ],
  "delete /api/auth/mfa/totp": [
    ...OWN,
    STEP_UP,
    [404, "Second factor not found"],
    MFA_FAILED,
  ],
  "post /api/auth/mfa/passkeys/options": [...OWN, STEP_UP, MFA_FAILED],
  "post /api/auth/mfa/passkeys": [
    ...OWN,
    STEP_UP,
    [413, "Request body too large"],
    [400, "Invalid request body"],
    [400, "Invalid passkey"],
    MFA_FAILED,
  ],
  "delete /api/auth/mfa/passkeys/{id}": [
    ...OWN,
    STEP_UP,
    [404, "Second factor not found"],
    MFA_FAILED,
  ],
  "post /api/auth/mfa/recovery-codes": [
    ...OWN,
    STEP_UP,
    [400, "No second factor enrolled"],
    MFA_FAILED,
  ],
  "delete /api/users/{id}/mfa": [
    ...ADMIN,
    STEP_UP,
    [404, "User not found"],
    OUTRANKED,
    [500, "Failed to reset second factors"],
  ],
  "post /api/auth/logout": [[403, "Forbidden"], [500, "Internal server error"]],
  "get /api/auth/me": [[401, "Unauthorised"], [500, "Internal server error"]],
  "get /api/users": [
    ...ADMIN,
    ...query(
      "limit",
      "sort",
      "after",
      "role",
      "status",
      "q",
      "username",
      "email",
      "include",
    ),
    [500, "Failed to list users"],
  ],
  "get /api/users/count": [
    ...ADMIN,
    ...query("role", "status", "q"),
    [500, "Failed to count users"],
  ],
  "post /api/users": [
    ...ADMIN,
    [400, "Invalid Idempotency-Key"],
    [413, "Request body too large"],
    [400, "All fields are required"],
    [400, "Role must be admin or viewer"],
    [400, "Password must be at least 8 characters"],
    [
      400,
      "Username must be at most 64 characters without control characters",
    ],
    [400, "Username contains characters that are not allowed"],
    [400, "Name must be at most 200 characters"],
    [400, "Name contains characters that are not allowed"],
    [400, "Email must be a valid address"],
    [400, "Password must be at most 72 bytes"],
    [400, "Password must not contain NUL characters"],
    [400, "Department must be at most 100 characters"],
    [400, "Invalid request body"],
    STEP_UP, // with `role` admin
    [422, "Idempotency-Key reused with a different request"],
    [409, "Request with this Idempotency-Key is in progress"],
    [409, "Username or email already exists"],
    [500, "Failed to create user"],
  ],
  "get /api/users/{id}": [
    ...ADMIN,
    [404, "User not found"],
    [500, "Failed to get user"],
  ],
  "patch /api/users/{id}": [
    ...ADMIN,
    [413, "Request body too large"],
    [400, "Invalid role"],
    [400, "Password must be at least 8 characters"],
    [400, "Password must be at most 72 bytes"],
    [400, "Password must not contain NUL characters"],
    [400, "Name must be at most 200 characters"],
    [400, "Name contains characters that are not allowed"],
    [400, "Email must be a valid address"],
    [400, "Department must be at most 100 characters"],
    [400, "Invalid request body"],
    STEP_UP, // with `role` admin
    [404, "User not found"],
    STEP_UP, // the user is an admin
    OUTRANKED,
    [412, "Precondition failed"],
    [409, "Username or email already exists"],
    [500, "Update failed"],
  ],
  "delete /api/users/{id}": [
    ...ADMIN,
    STEP_UP,
    [400, "You cannot delete your own account"],
    [404, "User not found"],
    OUTRANKED,
    [412, "Precondition failed"],
    [500, "Delete failed"],
  ],
  "post /api/users/{id}/disable": [
    ...ADMIN,
    [400, "You cannot disable your own account"],
    [404, "User not found"],
    STEP_UP, // the user is an admin
    [413, "Request body too large"],
    [400, "Invalid request body"],
    OUTRANKED,
    [500, "Failed to disable user"],
  ],
  "post /api/users/{id}/enable": [
    ...ADMIN,
    [404, "User not found"],
    OUTRANKED,
    [500, "Failed to enable user"],
  ],
  "get /api/users/{id}/sessions": [
    ...ADMIN,
    [404, "User not found"],
    [500, "Failed to list sessions"],
  ],
  "delete /api/users/{id}/sessions": [
    ...ADMIN,
    [404, "User not found"],
    OUTRANKED,
    [500, "Failed to end sessions"],
  ],
  "delete /api/users/{id}/sessions/{sessionId}": [
    ...ADMIN,
    [404, "User not found"],
    OUTRANKED,
    [404, "Session not found"],
    [500, "Failed to end sessions"],
  ],
  "post /api/users/{id}/keys": [
    ...ADMIN,
    STEP_UP,
    [404, "User not found"],
    [413, "Request body too large"],
    [400, "Invalid API key request"],
    [400, "Unknown permission: <name>"],
    GRANT,
    OUTRANKED,
    [400, "Group not found"],
    [400, "Too many API keys"],
    [500, "Failed to create API key"],
  ],
  "get /api/users/{id}/keys": [
    ...ADMIN,
    [404, "User not found"],
    [500, "Failed to list API keys"],
  ],
  "delete /api/users/{id}/keys/{keyId}": [
    ...ADMIN,
    [404, "API key not found"],
    OUTRANKED,
    [500, "Failed to revoke API key"],
  ],
  "get /api/auth/permissions": [
    [401, "Unauthorised"],
    [500, "Failed to read permissions"],
  ],
  "get /api/overview": [...ADMIN, [500, "Failed to read overview"]],
  "get /api/roles": [...ADMIN, [500, "Failed to list roles"]],
  "post /api/roles": [
    ...ADMIN,
    [413, "Request body too large"],
    [400, "Invalid request body"],
    [400, "Unknown permission: <name>"],
    GRANT, // what the body names
    [409, "Role name already exists"],
    [500, "Failed to create role"],
  ],
  "get /api/roles/{id}": [
    ...ADMIN,
    [404, "Role not found"],
    [500, "Failed to get role"],
  ],
  "patch /api/roles/{id}": [
    ...ADMIN,
    [413, "Request body too large"],
    [400, "Invalid request body"],
    [400, "Unknown permission: <name>"],
    GRANT, // what the body names
    [404, "Role not found"],
    [412, "Precondition failed"],
    GRANT, // what the role names now
    [409, "Role name already exists"],
    [500, "Failed to update role"],
  ],
  "delete /api/roles/{id}": [
    ...ADMIN,
    [404, "Role not found"],
    [412, "Precondition failed"],
    GRANT,
    [500, "Failed to delete role"],
  ],
  "get /api/assignments": [
    ...ADMIN,
    ...query("userId", "groupId", "roleId"),
    [500, "Failed to list assignments"],
  ],
  "post /api/assignments": [
    ...ADMIN,
    [413, "Request body too large"],
    [400, "Invalid assignment"],
    OUTRANKED,
    [404, "User not found"],
    [404, "Group not found"],
    [404, "Role not found"],
    GRANT,
    [409, "Assignment already exists"],
    [500, "Failed to create assignment"],
  ],
  "delete /api/assignments/{id}": [
    ...ADMIN,
    [404, "Assignment not found"],
    OUTRANKED,
    [500, "Failed to delete assignment"],
  ],
  "get /api/groups": [...ADMIN, [500, "Failed to list groups"]],
  "post /api/groups": [
    ...ADMIN,
    [413, "Request body too large"],
    [400, "Invalid request body"],
    [500, "Failed to create group"],
  ],
  "get /api/groups/{id}": [
    ...ADMIN,
    [404, "Group not found"],
    [500, "Failed to get group"],
  ],
  "patch /api/groups/{id}": [
    ...ADMIN,
    [413, "Request body too large"],
    [400, "Invalid request body"],
    [404, "Group not found"],
    OWNED,
    [500, "Failed to update group"],
  ],
  "delete /api/groups/{id}": [
    ...ADMIN,
    [404, "Group not found"],
    OWNED,
    [500, "Failed to delete group"],
  ],
  "put /api/groups/{id}/members": [
    ...ADMIN,
    [413, "Request body too large"],
    [400, "Invalid request body"],
    [404, "Group not found"],
    OWNED,
    [404, "User not found"],
    OUTRANKED, // someone who joins or leaves
    GRANT, // what the group's roles grant, when someone is added
    [500, "Failed to change group members"],
  ],
  "post /api/groups/{id}/members": [
    ...ADMIN,
    [413, "Request body too large"],
    [400, "Invalid request body"],
    [404, "Group not found"],
    OWNED,
    [404, "User not found"],
    OUTRANKED, // someone who joins or leaves
    GRANT, // what the group's roles grant, when someone is added
    [500, "Failed to change group members"],
  ],
  "delete /api/groups/{id}/members": [
    ...ADMIN,
    [413, "Request body too large"],
    [400, "Invalid request body"],
    [404, "Group not found"],
    OWNED,
    [404, "User not found"],
    OUTRANKED, // someone who joins or leaves
    GRANT, // what the group's roles grant, when someone is added
    [500, "Failed to change group members"],
  ],
  "get /api/audit": [
    ...ADMIN,
    ...query(...AUDIT_PARAMETERS),
    [500, "Failed to list audit events"],
  ],
  "get /api/audit/stream": [
    ...ADMIN,
    ...query("after", "action"),
    [400, "Invalid Last-Event-ID"],
    [410, "Event history no longer available"],
    [429, "Too many streams"],
    [500, "Failed to stream audit events"],
  ],
  "post /api/webhooks": [
    ...ADMIN,
    [413, "Request body too large"],
    [400, "Invalid webhook"], // the body
    [400, "Invalid webhook"], // the URL's target
    [400, "Too many webhooks"],
    [500, "Failed to create webhook"],
  ],
  "get /api/webhooks": [...ADMIN, [500, "Failed to list webhooks"]],
  "post /api/imports": [
    ...ADMIN,
    STEP_UP,
    [415, "Import must be application/x-ndjson or text/csv"],
    ...query("dryRun", "onConflict"),
    [413, "Request body too large"],
    [500, "Failed to import users"],
  ],
  "get /api/imports/{id}": [
    ...ADMIN,
    [404, "Import not found"],
    [500, "Failed to get import"],
  ],
  "post /api/imports/{id}/cancel": [
    ...ADMIN,
    [404, "Import not found"],
    [500, "Failed to cancel import"],
  ],
  "get /api/imports/{id}/errors": [
    ...ADMIN,
    [404, "Import not found"],
    [500, "Failed to list import errors"],
  ],
  "get /api/users/export": [
    ...ADMIN,
    ...query("include", "role", "status", "q", "ids", "sort"),
    STEP_UP,
    [500, "Failed to export users"],
  ],
  "get /api/webhooks/{id}": [
    ...ADMIN,
    [404, "Webhook not found"],
    [500, "Failed to get webhook"],
  ],
  "delete /api/webhooks/{id}": [
    ...ADMIN,
    [404, "Webhook not found"],
    [500, "Failed to delete webhook"],
  ],
  "get /api/webhooks/{id}/deliveries": [
    ...ADMIN,
    ...query("limit"),
    [404, "Webhook not found"],
    [500, "Failed to list webhook deliveries"],
  ],
  "post /api/webhooks/{id}/enable": [
    ...ADMIN,
    [404, "Webhook not found"],
    [500, "Failed to enable webhook"],
  ],
  "post /api/webhooks/{id}/test": [
    ...ADMIN,
    [404, "Webhook not found"],
    [500, "Failed to send a test event"],
  ],
  "post /api/webhooks/{id}/retry": [
    ...ADMIN,
    [404, "Webhook not found"],
    [409, "No failed delivery is waiting"],
    [500, "Failed to retry webhook delivery"],
  ],
  "get /api/scim/connections": [
    ...ADMIN,
    [500, "Failed to list provisioning connections"],
  ],
  "post /api/scim/connections": [
    ...ADMIN,
    [413, "Request body too large"],
    [400, "Invalid provisioning connection"],
    STEP_UP,
    [500, "Failed to create provisioning connection"],
  ],
  "get /api/scim/connections/{id}": [
    ...ADMIN,
    [404, "Provisioning connection not found"],
    [500, "Failed to get provisioning connection"],
  ],
  "patch /api/scim/connections/{id}": [
    ...ADMIN,
    [404, "Provisioning connection not found"],
    [413, "Request body too large"],
    [400, "Invalid provisioning connection"],
    STEP_UP, // with `adminGroups`
    [500, "Failed to update provisioning connection"],
  ],
  "delete /api/scim/connections/{id}": [
    ...ADMIN,
    [404, "Provisioning connection not found"],
    [500, "Failed to delete provisioning connection"],
  ],
  "get /api/sso/providers/public": [
    [500, "Failed to list identity providers"],
  ],
  "get /api/sso/providers": [
    ...ADMIN,
    [500, "Failed to list identity providers"],
  ],
  "post /api/sso/providers": [
    ...ADMIN,
    [413, "Request body too large"],
    [400, "Invalid identity provider"],
    STEP_UP,
    [500, "Failed to create identity provider"],
  ],
  "get /api/sso/providers/{id}": [
    ...ADMIN,
    [404, "Identity provider not found"],
    [500, "Failed to get identity provider"],
  ],
  "patch /api/sso/providers/{id}": [
    ...ADMIN,
    [404, "Identity provider not found"],
    [413, "Request body too large"],
    [400, "Invalid identity provider"],
    STEP_UP,
    [500, "Failed to update identity provider"],
  ],
  "delete /api/sso/providers/{id}": [
    ...ADMIN,
    [404, "Identity provider not found"],
    STEP_UP,
    [500, "Failed to delete identity provider"],
  ],
  "get /api/sso/{id}/start": [
    [404, "Identity provider not found"],
    ...query("returnTo"),
    [500, "Sign-in failed"],
  ],
  "get /api/sso/{id}/callback": [
    [404, "Identity provider not found"],
    [500, "Sign-in failed"],
  ],
  "get /scim/v2/ServiceProviderConfig": [
    [403, "Filtering is not supported on this endpoint"],
    [500, "Provisioning request failed"],
  ],
  "get /scim/v2/ResourceTypes": [
    [403, "Filtering is not supported on this endpoint"],
    [500, "Provisioning request failed"],
  ],
  "get /scim/v2/ResourceTypes/{name}": [
    [404, "Resource not found"],
    [403, "Filtering is not supported on this endpoint"],
    [500, "Provisioning request failed"],
  ],
  "get /scim/v2/Schemas": [
    [403, "Filtering is not supported on this endpoint"],
    [500, "Provisioning request failed"],
  ],
  "get /scim/v2/Schemas/{uri}": [
    [404, "Resource not found"],
    [403, "Filtering is not supported on this endpoint"],
    [500, "Provisioning request failed"],
  ],
  "get /scim/v2/Users": [
    [401, "A valid provisioning token is required"],
    ...SCIM_LIST,
    [500, "Provisioning request failed"],
  ],
  "post /scim/v2/Users": [
    [401, "A valid provisioning token is required"],
    [413, "Request body larger than 4 MiB"],
    [400, "The request is not a valid SCIM request"],
    [400, "A value is not valid"],
    [409, "The value is already taken"],
    [500, "Provisioning request failed"],
  ],
  "post /scim/v2/Users/.search": [
    [401, "A valid provisioning token is required"],
    [413, "Request body larger than 4 MiB"],
    [400, "The request is not a valid SCIM request"],
    ...SCIM_LIST,
    [500, "Provisioning request failed"],
  ],
  "get /scim/v2/Users/{id}": [
    [401, "A valid provisioning token is required"],
    [404, "Resource not found"],
    [404, "Resource not found"],
    [500, "Provisioning request failed"],
  ],
  "put /scim/v2/Users/{id}": [
    [401, "A valid provisioning token is required"],
    [404, "Resource not found"],
    [413, "Request body larger than 4 MiB"],
    [400, "The request is not a valid SCIM request"],
    [404, "Resource not found"],
    [403, "User is managed elsewhere"],
    [412, "The resource has changed (If-Match)"],
    [400, "A value is not valid"],
    [409, "The value is already taken"],
    [500, "Provisioning request failed"],
  ],
  "patch /scim/v2/Users/{id}": [
    [401, "A valid provisioning token is required"],
    [404, "Resource not found"],
    [413, "Request body larger than 4 MiB"],
    [400, "The request is not a valid SCIM request"],
    [404, "Resource not found"],
    [403, "User is managed elsewhere"],
    [412, "The resource has changed (If-Match)"],
    [400, "A value is not valid"],
    [400, "The path names no attribute"],
    [400, "The filter is not valid"],
    [400, "The path matches no value"],
    [400, "The attribute cannot be changed"],
    [409, "The value is already taken"],
    [500, "Provisioning request failed"],
  ],
  "delete /scim/v2/Users/{id}": [
    [401, "A valid provisioning token is required"],
    [404, "Resource not found"],
    [404, "Resource not found"],
    [403, "User is managed elsewhere"],
    [412, "The resource has changed (If-Match)"],
    [500, "Provisioning request failed"],
  ],
  "get /scim/v2/Groups": [
    [401, "A valid provisioning token is required"],
    ...SCIM_LIST,
    [500, "Provisioning request failed"],
  ],
  "post /scim/v2/Groups": [
    [401, "A valid provisioning token is required"],
    [413, "Request body larger than 4 MiB"],
    [400, "The request is not a valid SCIM request"],
    [400, "A value is not valid"],
    [403, "User is managed elsewhere"],
    [409, "The value is already taken"],
    [500, "Provisioning request failed"],
  ],
  "post /scim/v2/Groups/.search": [
    [401, "A valid provisioning token is required"],
    [413, "Request body larger than 4 MiB"],
    [400, "The request is not a valid SCIM request"],
    ...SCIM_LIST,
    [500, "Provisioning request failed"],
  ],
  "get /scim/v2/Groups/{id}": [
    [401, "A valid provisioning token is required"],
    [404, "Resource not found"],
    [404, "Resource not found"],
    [500, "Provisioning request failed"],
  ],
  "put /scim/v2/Groups/{id}": [
    [401, "A valid provisioning token is required"],
    [404, "Resource not found"],
    [413, "Request body larger than 4 MiB"],
    [400, "The request is not a valid SCIM request"],
    [404, "Resource not found"],
    [412, "The resource has changed (If-Match)"],
    [400, "A value is not valid"],
    [403, "User is managed elsewhere"],
    [409, "The value is already taken"],
    [500, "Provisioning request failed"],
  ],
  "patch /scim/v2/Groups/{id}": [
    [401, "A valid provisioning token is required"],
    [404, "Resource not found"],
    [413, "Request body larger than 4 MiB"],
    [400, "The request is not a valid SCIM request"],
    [404, "Resource not found"],
    [412, "The resource has changed (If-Match)"],
    [400, "A value is not valid"],
    [400, "The path names no attribute"],
    [400, "The filter is not valid"],
    [400, "The path matches no value"],
    [400, "The attribute cannot be changed"],
    [403, "User is managed elsewhere"],
    [409, "The value is already taken"],
    [500, "Provisioning request failed"],
  ],
  "delete /scim/v2/Groups/{id}": [
    [401, "A valid provisioning token is required"],
    [404, "Resource not found"],
    [404, "Resource not found"],
    [412, "The resource has changed (If-Match)"],
    [403, "User is managed elsewhere"],
    [500, "Provisioning request failed"],
  ],
  "post /scim/v2/.search": [
    [401, "A valid provisioning token is required"],
    [413, "Request body larger than 4 MiB"],
    [400, "The request is not a valid SCIM request"],
    ...SCIM_LIST,
    [500, "Provisioning request failed"],
  ],
  "post /scim/v2/Bulk": [
    [401, "A valid provisioning token is required"],
    [413, "Payload too large"],
    [400, "The request is not a valid SCIM request"],
    [413, "Too many operations"],
    [500, "Provisioning request failed"],
  ],
  "get /health": [],
  "get /health/live": [],
  "get /health/ready": [],
  "get /": [],
};

type Operation = { description: string };

/** Every operation of the served document but the HEAD twins, by `method path`. */
async function operations(svc: TestService) {
  const doc = await (await svc.fetch("/openapi.json")).json();
  const found = new Map<string, Operation>();
  for (
    const [path, item] of Object.entries<Record<string, Operation>>(doc.paths)
  ) {
    for (const [method, op] of Object.entries(item)) {
      if (method !== "head") found.set(`${method} ${path}`, op);
    }
  }
  return found;
}

/** The numbered check list of a description, as [status, message] in order. */
function listed(description: string): Listed[] {
  const items = [...description.matchAll(/^(\d+)\. (\d{3}) `([^`]+)`: /gm)];
  items.forEach((m, i) => assertEquals(Number(m[1]), i + 1, m[0]));
  return items.map((m) => [Number(m[2]), m[3]]);
}

Deno.test("every operation's description lists its checks in the contract's order", async () => {
  const svc = await service();
  const ops = await operations(svc);
  assertEquals([...ops.keys()].sort(), Object.keys(CONTRACT).sort());
  for (const [name, op] of ops) {
    assertEquals(listed(op.description), CONTRACT[name], name);
  }
});

/**
 * One part of a request (the caller, a header, a body field, a query or
 * path parameter), with values that break checks, most checks first, and
 * a value that breaks none (`undefined`: left out).
 */
interface Part {
  in: "caller" | "header" | "body" | "query" | "path";
  name: string;
  ok: unknown;
  bad: { value: unknown; breaks: string[] }[];
}

interface Walk {
  operation: string;
  parts: Part[];
}

const MISSING_ID = 2_000_000_000;
/** An unknown field that takes a body past 64 KiB. */
const padding = (): Part => ({
  in: "body",
  name: "padding",
  ok: undefined,
  bad: [{ value: "x".repeat(65 * 1024), breaks: ["Request body too large"] }],
});

/**
 * Walks down an operation's listed checks: for the k-th check the service
 * can be made to fail, each part of the request takes its first value that
 * breaks only that check or later ones, so the request breaks the k-th
 * check and as many after it as it can. The answer must be the first
 * listed check among those broken.
 */
async function walk(
  svc: TestService,
  callers: Record<string, string | undefined>,
  { operation, parts }: Walk,
) {
  const [method, template] = operation.split(" ");
  const order = listed((await operations(svc)).get(operation)!.description);
  const breakable = new Set(
    parts.flatMap((p) => p.bad.flatMap((b) => b.breaks)),
  );
  const messages = [...new Set(order.map(([, m]) => m))]
    .filter((m) => breakable.has(m));
  for (let k = 0; k < messages.length; k++) {
    const allowed = new Set(messages.slice(k));
    const broken = new Set<string>();
    const values = new Map<Part, unknown>();
    for (const part of parts) {
      const bad = part.bad.find((b) => b.breaks.every((m) => allowed.has(m)));
      values.set(part, bad ? bad.value : part.ok);
      for (const m of bad?.breaks ?? []) broken.add(m);
    }
    assert(
      broken.has(messages[k]),
      `${operation}: nothing breaks ${messages[k]}`,
    );
    let path = template;
    const search = new URLSearchParams();
    const headers = new Headers();
    const body: Record<string, unknown> = {};
    let hasBody = false;
    for (const [part, value] of values) {
      if (part.in === "body") hasBody = true;
      if (value === undefined) continue;
      if (part.in === "caller") {
        const cookie = callers[value as string];
        if (cookie) headers.set("cookie", cookie);
      } else if (part.in === "header") headers.set(part.name, String(value));
      else if (part.in === "body") body[part.name] = value;
      else if (part.in === "query") search.set(part.name, String(value));
      else path = path.replace(`{${part.name}}`, String(value));
    }
    const res = await svc.fetch(`${path}${search.size ? `?${search}` : ""}`, {
      method: method.toUpperCase(),
      headers,
      body: hasBody ? JSON.stringify(body) : undefined,
    });
    const first = order.find(([, m]) => broken.has(m))!;
    assertEquals(
      [res.status, await res.json()],
      [first[0], { error: first[1] }],
      `${operation} breaking ${[...broken].join(", ")}`,
    );
  }
}

/** Passwords that break the password's rules, most rules first. */
const PASSWORD_BREAKERS: Part["bad"] = [
  {
    value: "sh\u0000rt",
    breaks: [
      "Password must be at least 8 characters",
      "Password must not contain NUL characters",
    ],
  },
  {
    value: `${"é".repeat(40)}\u0000`,
    breaks: [
      "Password must be at most 72 bytes",
      "Password must not contain NUL characters",
    ],
  },
  {
    value: "é".repeat(40),
    breaks: ["Password must be at most 72 bytes"],
  },
  {
    value: "walker\u0000password",
    breaks: ["Password must not contain NUL characters"],
  },
];

/** A query parameter with a bad value; left out when good. */
const badQuery = (name: string, value: string): Part =>
  single("query", name, undefined, value, `Invalid query parameter: ${name}`);

const caller = (): Part => ({
  in: "caller",
  name: "caller",
  ok: "admin",
  bad: [
    { value: "nobody", breaks: ["Unauthorised"] },
    { value: "viewer", breaks: ["Forbidden"] },
  ],
});

const single = (
  where: Part["in"],
  name: string,
  ok: unknown,
  value: unknown,
  breaks: string,
): Part => ({ in: where, name, ok, bad: [{ value, breaks: [breaks] }] });

Deno.test("a request that breaks several checks is answered by the one its operation lists first", async () => {
  const svc = await service();
  const { account: viewer, password } = await svc.userClient("viewer");
  const callers = {
    nobody: undefined,
    viewer: await loginCookie(svc, { username: viewer.username, password }),
    admin: await loginCookie(svc),
  };
  const self = svc.adminAccount.id;
  const id = (ok: unknown, bad: Part["bad"]): Part => ({
    in: "path",
    name: "id",
    ok,
    bad,
  });
  const notFound = (message: string) => [{
    value: MISSING_ID,
    breaks: [message],
  }];
  const staleVersion = single(
    "header",
    "if-match",
    undefined,
    '"u0.0"',
    "Precondition failed",
  );
  const walks: Walk[] = [
    {
      operation: "post /api/users",
      parts: [
        caller(),
        single(
          "header",
          "idempotency-key",
          undefined,
          "k".repeat(256),
          "Invalid Idempotency-Key",
        ),
        padding(),
        {
          in: "body",
          name: "username",
          ok: "walker",
          bad: [
            { value: "", breaks: ["All fields are required"] },
            {
              value: `${"u".repeat(40)}\u200b${"u".repeat(40)}`,
              breaks: [
                "Username must be at most 64 characters without control characters",
                "Username contains characters that are not allowed",
              ],
            },
            {
              value: "wal\u200bker",
              breaks: ["Username contains characters that are not allowed"],
            },
            // The first admin's, under its canonical form.
            { value: "ADMIN", breaks: ["Username or email already exists"] },
          ],
        },
        {
          in: "body",
          name: "name",
          ok: "Walker",
          bad: [
            {
              value: `${"n".repeat(150)}\u0001${"n".repeat(150)}`,
              breaks: [
                "Name must be at most 200 characters",
                "Name contains characters that are not allowed",
              ],
            },
            {
              value: "Wal\u0001ker",
              breaks: ["Name contains characters that are not allowed"],
            },
          ],
        },
        single(
          "body",
          "email",
          "walker@example.com",
          "walker",
          "Email must be a valid address",
        ),
        {
          in: "body",
          name: "password",
          ok: "walker-password",
          bad: PASSWORD_BREAKERS,
        },
        single(
          "body",
          "role",
          "viewer",
          "boss",
          "Role must be admin or viewer",
        ),
      ],
    },
    {
      operation: "patch /api/users/{id}",
      parts: [
        caller(),
        padding(),
        single("body", "role", undefined, "boss", "Invalid role"),
        {
          in: "body",
          name: "password",
          ok: undefined,
          bad: [
            ...PASSWORD_BREAKERS,
            { value: 12345678, breaks: ["Invalid request body"] },
          ],
        },
        id(viewer.id, notFound("User not found")),
        staleVersion,
      ],
    },
    {
      operation: "delete /api/users/{id}",
      parts: [
        caller(),
        id(viewer.id, [
          { value: self, breaks: ["You cannot delete your own account"] },
          ...notFound("User not found"),
        ]),
        staleVersion,
      ],
    },
    {
      operation: "post /api/users/{id}/disable",
      parts: [
        caller(),
        id(viewer.id, [
          { value: self, breaks: ["You cannot disable your own account"] },
          ...notFound("User not found"),
        ]),
        padding(),
        single(
          "body",
          "reason",
          undefined,
          "r".repeat(201),
          "Invalid request body",
        ),
      ],
    },
    {
      operation: "delete /api/users/{id}/sessions/{sessionId}",
      parts: [
        caller(),
        id(viewer.id, notFound("User not found")),
        single(
          "path",
          "sessionId",
          crypto.randomUUID(),
          "not-a-uuid",
          "Session not found",
        ),
      ],
    },
    {
      operation: "post /api/users/{id}/keys",
      parts: [
        caller(),
        id(viewer.id, notFound("User not found")),
        padding(),
        single("body", "name", "walker", "", "Invalid API key request"),
      ],
    },
    {
      operation: "post /api/auth/login",
      parts: [
        single(
          "header",
          "origin",
          undefined,
          "https://elsewhere.example",
          "Forbidden",
        ),
        padding(),
        {
          in: "body",
          name: "username",
          ok: viewer.username,
          bad: [
            { value: "", breaks: ["Username and password are required"] },
            { value: "nobody", breaks: ["Invalid username or password"] },
          ],
        },
        { in: "body", name: "password", ok: password, bad: [] },
      ],
    },
    {
      operation: "post /api/webhooks",
      parts: [
        caller(),
        padding(),
        single(
          "body",
          "url",
          "https://hooks.example.com/walker",
          "",
          "Invalid webhook",
        ),
      ],
    },
    {
      operation: "get /api/users",
      parts: [
        caller(),
        badQuery("limit", "0"),
        badQuery("after", "x"),
        badQuery("role", "boss"),
        badQuery("status", "gone"),
        badQuery("q", ""),
        badQuery("username", ""),
        badQuery("email", ""),
        badQuery("include", "everything"),
      ],
    },
    {
      operation: "get /api/users/count",
      parts: [
        caller(),
        badQuery("role", "boss"),
        badQuery("status", "gone"),
        badQuery("q", ""),
      ],
    },
    {
      operation: "get /api/audit",
      parts: [
        caller(),
        ...AUDIT_PARAMETERS.map((name) => badQuery(name, "0x")),
      ],
    },
    {
      operation: "get /api/audit/stream",
      parts: [
        caller(),
        badQuery("after", "x"),
        badQuery("action", "nope"),
        single(
          "header",
          "last-event-id",
          undefined,
          "x",
          "Invalid Last-Event-ID",
        ),
      ],
    },
    {
      operation: "get /api/webhooks/{id}/deliveries",
      parts: [
        caller(),
        badQuery("limit", "0"),
        id(MISSING_ID, notFound("Webhook not found")),
      ],
    },
  ];
  for (const w of walks) await walk(svc, callers, w);
});
