/**
 * Every message the service answers with, byte for byte as docs/api.md
 * ("All messages") and the other docs/ pages list them. Routes declare them and
 * handlers answer them, and `deno check` holds the two together.
 */
export const MSG = {
  unauthorised: "Unauthorised",
  forbidden: "Forbidden",
  notFound: "Not found",
  methodNotAllowed: "Method not allowed",
  bodyTooLarge: "Request body too large",
  internal: "Internal server error",

  allFieldsRequired: "All fields are required",
  roleMustBeAdminOrViewer: "Role must be admin or viewer",
  invalidRole: "Invalid role",
  passwordTooShort: "Password must be at least 8 characters",
  passwordTooLong: "Password must be at most 72 bytes",
  passwordNul: "Password must not contain NUL characters",
  usernameInvalid:
    "Username must be at most 64 characters without control characters",
  usernameCharacters: "Username contains characters that are not allowed",
  nameTooLong: "Name must be at most 200 characters",
  nameCharacters: "Name contains characters that are not allowed",
  emailInvalid: "Email must be a valid address",
  departmentTooLong: "Department must be at most 100 characters",
  invalidBody: "Invalid request body",
  duplicateUser: "Username or email already exists",
  userNotFound: "User not found",
  cannotDeleteSelf: "You cannot delete your own account",
  preconditionFailed: "Precondition failed",
  cannotDisableSelf: "You cannot disable your own account",
  sessionNotFound: "Session not found",

  createFailed: "Failed to create user",
  updateFailed: "Update failed",
  deleteFailed: "Delete failed",
  listFailed: "Failed to list users",
  countFailed: "Failed to count users",
  getFailed: "Failed to get user",
  disableFailed: "Failed to disable user",
  enableFailed: "Failed to enable user",
  listSessionsFailed: "Failed to list sessions",
  endSessionsFailed: "Failed to end sessions",

  credentialsRequired: "Username and password are required",
  invalidCredentials: "Invalid username or password",
  tooManyLoginAttempts: "Too many login attempts",
  accountDisabled: "Account disabled",
  loginFailed: "Login failed",
  currentPasswordIncorrect: "Current password is incorrect",
  noPasswordSet: "No password is set for this account",
  passwordChangeFailed: "Failed to change password",

  secondFactorRequired: "Second factor required",
  invalidCode: "Invalid code",
  enrollmentRequired: "Second factor enrollment required",
  recentSecondFactorRequired: "Recent second factor required",
  alreadyEnrolled: "Second factor already enrolled",
  invalidPasskey: "Invalid passkey",
  factorNotFound: "Second factor not found",
  noSecondFactor: "No second factor enrolled",
  mfaFailed: "Second factor request failed",
  mfaResetFailed: "Failed to reset second factors",

  auditListFailed: "Failed to list audit events",
  invalidLastEventId: "Invalid Last-Event-ID",
  eventHistoryGone: "Event history no longer available",
  auditStreamFailed: "Failed to stream audit events",
  tooManyStreams: "Too many streams",

  apiKeyRequestInvalid: "Invalid API key request",
  tooManyApiKeys: "Too many API keys",
  apiKeyNotFound: "API key not found",
  apiKeyCreateFailed: "Failed to create API key",
  apiKeyListFailed: "Failed to list API keys",
  apiKeyRevokeFailed: "Failed to revoke API key",

  invalidIdempotencyKey: "Invalid Idempotency-Key",
  idempotencyKeyReused: "Idempotency-Key reused with a different request",
  idempotencyKeyInProgress: "Request with this Idempotency-Key is in progress",

  invalidWebhook: "Invalid webhook",
  tooManyWebhooks: "Too many webhooks",
  webhookNotFound: "Webhook not found",
  webhookCreateFailed: "Failed to create webhook",
  webhookListFailed: "Failed to list webhooks",
  webhookGetFailed: "Failed to get webhook",
  webhookDeleteFailed: "Failed to delete webhook",
  webhookEnableFailed: "Failed to enable webhook",
  webhookDeliveriesFailed: "Failed to list webhook deliveries",
  webhookTestFailed: "Failed to send a test event",
  webhookRetryFailed: "Failed to retry webhook delivery",
  nothingToRetry: "No failed delivery is waiting",

  invalidConnection: "Invalid provisioning connection",
  connectionNotFound: "Provisioning connection not found",
  connectionCreateFailed: "Failed to create provisioning connection",
  connectionListFailed: "Failed to list provisioning connections",
  connectionGetFailed: "Failed to get provisioning connection",
  connectionUpdateFailed: "Failed to update provisioning connection",
  connectionDeleteFailed: "Failed to delete provisioning connection",

  useIdentityProvider: "Use your identity provider to sign in",
  invalidProvider: "Invalid identity provider",
  providerNotFound: "Identity provider not found",
  providerCreateFailed: "Failed to create identity provider",
  providerListFailed: "Failed to list identity providers",
  providerGetFailed: "Failed to get identity provider",
  providerUpdateFailed: "Failed to update identity provider",
  providerDeleteFailed: "Failed to delete identity provider",
  ssoFailed: "Sign-in failed",
  // A sign-in through an identity provider ends on the console's sign-in
  // page with one of these as `?error=` (docs/sso.md).
  ssoCancelled: "Sign-in was cancelled",
  ssoExpired: "Sign-in expired, please try again",
  ssoRefused: "Identity provider refused the sign-in",
  ssoNoAccount: "No account for this identity",
  ssoDomainNotAllowed: "E-mail domain not allowed",
  ssoUnavailable: "Identity provider unavailable",

  // SCIM answers these as an error's `detail` (src/scim/errors.ts), or a
  // more particular one where the check knows more.
  scimUnauthorised: "A valid provisioning token is required",
  scimNotFound: "Resource not found",
  scimInvalidFilter: "The filter is not valid",
  scimInvalidValue: "A value is not valid",
  scimInvalidSyntax: "The request is not a valid SCIM request",
  scimInvalidPath: "The path names no attribute",
  scimNoTarget: "The path matches no value",
  scimMutability: "The attribute cannot be changed",
  scimUniqueness: "The value is already taken",
  scimTooLarge: "Request body larger than 4 MiB",
  scimPreconditionFailed: "The resource has changed (If-Match)",
  scimFilterUnsupported: "Filtering is not supported on this endpoint",
  scimInvalidCursor: "The cursor is not valid",
  scimExpiredCursor: "The cursor has expired",
  scimFailed: "Provisioning request failed",
  scimTooManyOperations: "Too many operations",
  scimPayloadTooLarge: "Payload too large",
  scimManagedElsewhere: "User is managed elsewhere",
  importContentType: "Import must be application/x-ndjson or text/csv",
  unsupportedPasswordHash: "Unsupported password hash",
  importNotFound: "Import not found",
  importFailed: "Failed to import users",
  importGetFailed: "Failed to get import",
  importCancelFailed: "Failed to cancel import",
  importErrorsFailed: "Failed to list import errors",
  exportFailed: "Failed to export users",
  cannotGrantMore: "Cannot grant more than you hold",
  cannotActOnMorePrivileged: "Cannot act on a more privileged user",
  roleNameTaken: "Role name already exists",
  roleNotFound: "Role not found",
  roleListFailed: "Failed to list roles",
  roleGetFailed: "Failed to get role",
  roleCreateFailed: "Failed to create role",
  roleUpdateFailed: "Failed to update role",
  roleDeleteFailed: "Failed to delete role",
  assignmentNotFound: "Assignment not found",
  invalidAssignment: "Invalid assignment",
  assignmentExists: "Assignment already exists",
  assignmentListFailed: "Failed to list assignments",
  assignmentCreateFailed: "Failed to create assignment",
  assignmentDeleteFailed: "Failed to delete assignment",
  permissionsFailed: "Failed to read permissions",
  groupNotFound: "Group not found",
  groupProviderOwned:
    "Group is managed by its identity provider: change it there",
  groupListFailed: "Failed to list groups",
  groupGetFailed: "Failed to get group",
  groupCreateFailed: "Failed to create group",
  groupUpdateFailed: "Failed to update group",
  groupDeleteFailed: "Failed to delete group",
  groupMembersFailed: "Failed to change group members",
  overviewFailed: "Failed to read overview",
} as const;

/** The 400 of a query parameter with a bad value, which names the parameter. */
export const invalidQueryParameter = <const N extends string>(name: N) =>
  `Invalid query parameter: ${name}` as const;

/** The 400 of a role or key naming a permission the catalogue does not have (src/auth/permissions.ts). */
export const unknownPermission = <const N extends string>(name: N) =>
  `Unknown permission: ${name}` as const;

export type Message =
  | (typeof MSG)[keyof typeof MSG]
  | ReturnType<typeof invalidQueryParameter>
  | ReturnType<typeof unknownPermission>;
