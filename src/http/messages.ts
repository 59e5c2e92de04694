/**
 * Every message the service answers with, byte for byte as the contract
 * (spec section 7) and decisions.md give them. Routes use them as OpenAPI
 * examples and handlers throw them, so the two cannot drift apart.
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
  emailInvalid: "Email must be a valid address",
  invalidBody: "Invalid request body",
  duplicateUser: "Username or email already exists",
  userNotFound: "User not found",
  cannotDeleteSelf: "You cannot delete your own account",
  preconditionFailed: "Precondition failed",

  invalidLimit: "Invalid query parameter: limit",
  invalidAfter: "Invalid query parameter: after",
  invalidRoleParam: "Invalid query parameter: role",
  invalidQ: "Invalid query parameter: q",
  invalidUsernameParam: "Invalid query parameter: username",
  invalidEmailParam: "Invalid query parameter: email",

  createFailed: "Failed to create user",
  updateFailed: "Update failed",
  deleteFailed: "Delete failed",
  listFailed: "Failed to list users",
  getFailed: "Failed to get user",

  credentialsRequired: "Username and password are required",
  invalidCredentials: "Invalid username or password",
  tooManyLoginAttempts: "Too many login attempts",
  loginFailed: "Login failed",

  auditListFailed: "Failed to list audit events",
} as const;

/** The 400 of a query parameter with a bad value, which names the parameter. */
export const invalidQueryParameter = <const N extends string>(name: N) =>
  `Invalid query parameter: ${name}` as const;

export type Message =
  | (typeof MSG)[keyof typeof MSG]
  | ReturnType<typeof invalidQueryParameter>;

/**
 * When one request breaks several rules, the contract's check order decides
 * which message is answered: earlier in this list wins.
 */
export const VALIDATION_PRECEDENCE: readonly Message[] = [
  MSG.credentialsRequired,
  MSG.allFieldsRequired,
  MSG.roleMustBeAdminOrViewer,
  MSG.invalidRole,
  MSG.passwordTooShort,
  MSG.usernameInvalid,
  MSG.usernameCharacters,
  MSG.nameTooLong,
  MSG.emailInvalid,
  MSG.passwordTooLong,
  MSG.passwordNul,
  MSG.invalidBody,
  // The list's query parameters, in the order the route declares them.
  MSG.invalidLimit,
  MSG.invalidAfter,
  MSG.invalidRoleParam,
  MSG.invalidQ,
  MSG.invalidUsernameParam,
  MSG.invalidEmailParam,
];

/** The message of the first broken rule in the contract's check order, if any is the contract's. */
export const firstInCheckOrder = (messages: Iterable<string>) => {
  const seen = new Set(messages);
  return VALIDATION_PRECEDENCE.find((m) => seen.has(m));
};
