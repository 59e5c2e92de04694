import { PERMISSIONS } from "./permissions.ts";
import { z } from "@hono/zod-openapi";
import { MSG } from "../http/messages.ts";
import {
  bodyTooLarge,
  check,
  failure,
  json,
  route,
  sessionOrKey,
  textHeader,
} from "../http/openapi.ts";
import { body, outcome } from "../http/steps.ts";
import { passwordRules } from "../users/account-rules.ts";
import { PASSWORD_CHECKS } from "../users/account-checks.ts";
import {
  AccountSchema,
  OkSchema,
  PASSWORD_DOC,
} from "../users/users.schemas.ts";
import { ownSessionFor, sameOrigin, signedIn } from "./guards.ts";

const credential = z.string({ error: MSG.credentialsRequired })
  .min(1, MSG.credentialsRequired);

export const LoginSchema = z.object({
  username: credential.trim().min(1, MSG.credentialsRequired).openapi({
    description:
      "Matched under the canonical key (Unicode NFKC, then lower case: `ADMIN`, `ＡＤＭＩＮ` and `admİn` are `admin`); surrounding whitespace is ignored.",
    example: "admin",
  }),
  password: credential.openapi({ example: "correct horse" }),
  code: z.string({ error: MSG.invalidBody }).max(64, MSG.invalidBody)
    .optional().openapi({
      description:
        "For a user with a second factor, to log in in one request: a 6-digit TOTP code or a recovery code. Without it such a user gets 401 `Second factor required` and the pending-login cookie for `POST /api/auth/login/second-factor`. Ignored for a user without a factor.",
      example: "123456",
    }),
}, { error: MSG.credentialsRequired }).openapi("Login");

const tags = ["auth"];

export const login = route({
  operationId: "login",
  method: "post",
  path: "/api/auth/login",
  tags,
  summary: "Log in: sets the session cookie `sid`",
  description:
    "Any role may log in. Each login makes a new session; a cookie the client sends is never adopted. " +
    "After `LOGIN_MAX_FAILURES` (default 10) failed attempts for one username (under its canonical key, known or not) from one client address inside a fixed window of `LOGIN_WINDOW_SECONDS` (default 900) from the first failure, every attempt for it from that address answers 429 with Retry-After until the window ends; past 10 x `LOGIN_MAX_FAILURES` from all addresses together, from every address. Only failed password checks count: an attempt answered 429 counts nowhere. " +
    "The client address is the socket's peer, or the first `X-Forwarded-For` hop with `TRUST_PROXY=true`. A success clears its address's count; an admin's password reset of the user and the recovery task clear all of the username's counts. " +
    "A success also sets the known-device cookie `did` (signed, 180 days, sent to this path only). A login that presents a valid `did` for the username it tries is counted per device instead: not per address, not toward the ceiling, and `LOGIN_MAX_FAILURES` failures lock only that device; a success from it clears that device's count. " +
    "A password longer than 72 bytes or holding NUL never matches (bcrypt could not tell it from a shorter one). A login whose check raced a password reset gets 401: sessions are bound to the password they were opened with. " +
    "The session lasts `SESSION_TTL_SECONDS` (default 43200, 12 hours). " +
    "A disabled user with the right password gets 403 `Account disabled`: no cookie, and the attempt neither counts as a failure nor clears any; a disable that races a login leaves no session. " +
    "A user with a second factor and the right password gets 401 `Second factor required` and the pending-login cookie `mfa` (HttpOnly, SameSite=Strict, Path=/api/auth, 5 minutes, single use, bound to this password): finish with `POST /api/auth/login/second-factor`, or send `code` in this body to log in in one request. A wrong password answers as for anyone else, so nothing is revealed without it. Wrong codes count toward the user's second-factor limit (5 per window), not toward the password throttle. " +
    "In Swagger UI: run this with Try it out; the browser keeps the HttpOnly cookie and sends it with every call on this page.",
  security: [],
  responses: {
    200: json(AccountSchema, "Logged in", {
      "Set-Cookie": textHeader(
        "`sid=<token>; Max-Age=<SESSION_TTL_SECONDS>; Path=/; HttpOnly; SameSite=Strict` and `did=<signed device id>; Max-Age=15552000; Path=/api/auth/login; HttpOnly; SameSite=Strict` (each + `Secure` over HTTPS)",
      ),
    }),
  },
  steps: [
    sameOrigin,
    body(LoginSchema, [
      bodyTooLarge,
      check(
        400,
        MSG.credentialsRequired,
        "the username or password is missing, empty or not a string (a body that is not JSON included)",
      ),
      check(
        400,
        MSG.invalidBody,
        "`code` is given and is not a string of at most 64 characters",
      ),
    ], { compareOnly: true }),
    // The handler sets Retry-After before it returns this outcome.
    outcome(
      "throttled",
      check(
        429,
        MSG.tooManyLoginAttempts,
        "too many failed attempts (from this address, from all addresses, or from this device); or, with `code` and the right password, 5 wrong second factors of the user in the login window",
        {
          "Retry-After": {
            description: "Seconds until the window ends",
            schema: { type: "integer" },
          },
        },
      ),
    ),
    outcome(
      "invalid_credentials",
      check(
        401,
        MSG.invalidCredentials,
        "unknown user or wrong password (indistinguishable), or a password reset raced the check",
      ),
    ),
    outcome(
      "provider_only",
      check(
        401,
        MSG.useIdentityProvider,
        "the password is right, but an identity provider that links the account has `passwordLogin: false` (see docs/sso.md): no cookie, and the attempt counts as no failure",
      ),
    ),
    outcome(
      "second_factor_required",
      check(
        401,
        MSG.secondFactorRequired,
        "the password is right, the user has a second factor and `code` is absent: the answer sets the pending-login cookie `mfa` for `POST /api/auth/login/second-factor`",
        {
          "Set-Cookie": {
            description:
              "`mfa=<token>; Max-Age=300; Path=/api/auth; HttpOnly; SameSite=Strict` (+ `Secure` over HTTPS)",
            schema: { type: "string" },
          },
        },
      ),
    ),
    outcome(
      "invalid_code",
      check(
        401,
        MSG.invalidCode,
        "the password is right and `code` is not a current TOTP code nor an unused recovery code of the user",
      ),
    ),
    outcome(
      "disabled",
      check(
        403,
        MSG.accountDisabled,
        "the password is right but the account is disabled (no cookie is set, and the attempt counts as no failure)",
      ),
    ),
    failure(MSG.loginFailed),
  ],
});

export const logout = route({
  operationId: "logout",
  method: "post",
  path: "/api/auth/logout",
  tags,
  summary: "Log out: ends the session and clears the cookie",
  description:
    "Ends the session whose `sid` cookie is sent, and clears the cookie. Answers 200 with or without a session: the cookie is optional, but without it nothing is ended.",
  // The cookie is optional (`{}`), and a client must send it when it has one.
  security: [...sessionOrKey, {}],
  responses: {
    200: json(OkSchema, "Logged out", {
      "Set-Cookie": textHeader(
        "`sid=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict` (+ `Secure` over HTTPS): the client forgets the cookie",
      ),
    }),
  },
  steps: [sameOrigin, failure(MSG.internal)],
});

export const me = route({
  operationId: "me",
  method: "get",
  path: "/api/auth/me",
  tags,
  summary: "The caller's own account",
  description:
    "The account of the session's user, as it is now (a role changed since login shows). Any role may call it.",
  security: sessionOrKey,
  responses: {
    200: json(AccountSchema, "The caller"),
  },
  steps: [signedIn, failure(MSG.internal)],
});

/** A reach limited to the members of some groups. */
const ReachSchema = z.object({
  groupIds: z.array(z.number().int()).openapi({ example: [5] }),
}).openapi("GroupReach");

export const PermissionsSchema = z.object({
  permissions: z.array(z.enum(PERMISSIONS)).openapi({
    description:
      "What the caller may do now, in the catalogue's order: an admin (with a session, or a key without a narrower list) every permission, a viewer none, beside what roles assigned to them grant; with a key, narrowed to the key's list and its minter's permissions",
    example: ["users:read", "users:password", "users:sessions"],
  }),
  reach: z.union([z.literal("all"), z.literal("mixed"), ReachSchema])
    .openapi({
      description:
        'Over whom the permissions are held: `"all"` every user, `{groupIds}` the members of these groups; `"mixed"` when the permissions have different reaches (then `reaches` gives each one\'s)',
    }),
  reaches: z.partialRecord(
    z.enum(PERMISSIONS),
    z.union([z.literal("all"), ReachSchema]),
  )
    .optional().openapi({
      description:
        'With `reach: "mixed"` only: each permission held and its reach',
      example: { "users:read": { groupIds: [5] }, "roles:manage": "all" },
    }),
}).openapi("Permissions");

export const permissions = route({
  operationId: "myPermissions",
  method: "get",
  path: "/api/auth/permissions",
  tags,
  summary: "The caller's own permissions",
  description:
    "What the caller may do, resolved as every request resolves it (the console shows only this). Any role may call it.",
  security: sessionOrKey,
  responses: {
    200: json(PermissionsSchema, "The caller's permissions"),
  },
  steps: [signedIn, failure(MSG.permissionsFailed)],
});

/** Present, a string and not empty: what comes before the new password's rules. */
const givenPassword = () =>
  z.string({ error: MSG.allFieldsRequired }).min(1, MSG.allFieldsRequired);

export const ChangePasswordSchema = z.object({
  currentPassword: givenPassword().openapi({
    description: "The caller's password now.",
    example: "correct horse",
  }),
  newPassword: passwordRules(givenPassword()).openapi({
    description: PASSWORD_DOC,
    minLength: 8,
    maxLength: 72,
    example: "a new passphrase",
  }),
}, { error: MSG.allFieldsRequired }).openapi("ChangePassword");

export const changePassword = route({
  operationId: "changeOwnPassword",
  method: "post",
  path: "/api/auth/password",
  tags,
  summary: "Change the caller's own password",
  description:
    "Any role, with a session (an API key is refused: 403). The new password meets the rules of every new password. " +
    "A wrong `currentPassword` counts toward the login throttle as a failed login of the caller's username from this address does (`LOGIN_MAX_FAILURES` in `LOGIN_WINDOW_SECONDS`; see `POST /api/auth/login`), and once it is reached this answers 429 with Retry-After as the login does. " +
    "On success the caller's other sessions end, this one stays (bound to the new password), the username's failed-login counts are cleared, and `user.password_changed` is recorded (never a password). " +
    "An account without a password (provisioned through SCIM or imported without one) answers 409: it signs in through its identity provider.",
  security: sessionOrKey,
  responses: { 200: json(OkSchema, "Changed") },
  steps: [
    ownSessionFor("a password is a person's, changed with their session"),
    body(ChangePasswordSchema, [
      bodyTooLarge,
      check(
        400,
        MSG.allFieldsRequired,
        "`currentPassword` or `newPassword` is missing, empty or not a string (a body that is not JSON included)",
      ),
      ...PASSWORD_CHECKS,
    ], { compareOnly: true }),
    outcome(
      "no_password",
      check(
        409,
        MSG.noPasswordSet,
        "the account has no password (provisioned or imported without one): nothing is counted",
      ),
    ),
    // The handler sets Retry-After before it returns this outcome.
    outcome(
      "throttled",
      check(
        429,
        MSG.tooManyLoginAttempts,
        "too many failed attempts for the caller's username, from this address or from all addresses, as for a login",
        {
          "Retry-After": {
            description: "Seconds until the window ends",
            schema: { type: "integer" },
          },
        },
      ),
    ),
    outcome(
      "wrong_password",
      check(
        401,
        MSG.currentPasswordIncorrect,
        "`currentPassword` is not the caller's password: counted as a failed login",
      ),
    ),
    failure(MSG.passwordChangeFailed),
  ],
});
