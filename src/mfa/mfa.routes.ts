import { z } from "@hono/zod-openapi";
import {
  adminRoute,
  outranked,
  ownSession,
  sameOrigin,
  stepUp,
} from "../auth/guards.ts";
import { pendingLogin } from "../auth/mfa/pending.ts";
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
import { body, outcome, pathParam } from "../http/steps.ts";
import { userId, userNotFound } from "../users/user-steps.ts";
import { AccountSchema, IdParam, OkSchema } from "../users/users.schemas.ts";
import { parseUserId } from "../users/user.ts";
import {
  CodeSchema,
  NewPasskeySchema,
  OptionsSchema,
  RecoveryCodesSchema,
  TotpEnrolmentSchema,
  WebAuthnJson,
} from "./mfa.bodies.ts";
import { MfaSummarySchema } from "./mfa.schemas.ts";
import {
  factorBody,
  factorNotFound,
  invalidCode,
  noFactor,
  STEP_UP,
  throttled,
} from "./mfa.steps.ts";

const tags = ["mfa"];

// Logging in with a second factor.

export const secondFactor = route({
  operationId: "loginSecondFactor",
  method: "post",
  path: "/api/auth/login/second-factor",
  tags,
  summary: "Log in, second step: the second factor",
  description:
    "After `POST /api/auth/login` answered 401 `Second factor required` and set the pending-login cookie `mfa` (5 minutes, single use, bound to the password it checked). Answers as a login does: 200 with the account, the session cookie `sid` (a session that counts as second-factored) and the known-device cookie. " +
    "A wrong code leaves the pending cookie usable; after 5 wrong second factors of the user in the login window every attempt answers 429 until it ends (wrong codes do not count toward the password throttle). " +
    "In Swagger UI: after the login's 401, run this with Try it out: the browser sends the `mfa` cookie by itself.",
  security: [],
  responses: {
    200: json(AccountSchema, "Logged in", {
      "Set-Cookie": textHeader(
        "`sid=<token>; ...` and `did=...` as a login sets them, and `mfa=; Max-Age=0; Path=/api/auth` (the pending login is used)",
      ),
    }),
  },
  steps: [
    sameOrigin,
    pendingLogin,
    factorBody,
    throttled,
    invalidCode,
    outcome(
      "disabled",
      check(
        403,
        MSG.accountDisabled,
        "the account was disabled meanwhile (no cookie is set)",
      ),
    ),
    failure(MSG.loginFailed),
  ],
});

export const secondFactorOptions = route({
  operationId: "loginSecondFactorOptions",
  method: "post",
  path: "/api/auth/login/second-factor/options",
  tags,
  summary: "Log in, second step: options for a passkey",
  description:
    "The WebAuthn request options for the pending login's user (their passkeys allowed): sign them with `navigator.credentials.get` and send the result as `passkey` to `POST /api/auth/login/second-factor`.",
  security: [],
  responses: { 200: json(OptionsSchema, "The options") },
  steps: [sameOrigin, pendingLogin, failure(MSG.loginFailed)],
});

// A signed-in user's second factors: step-up, enrolment, listing, removal.

export const stepUpNow = route({
  operationId: "stepUp",
  method: "post",
  path: "/api/auth/step-up",
  tags,
  summary: "Renew the session's second factor",
  description:
    "The actions that need a recent second factor (minting an API key, deleting a user, making a user admin, resetting another user's factors; removing a factor and new recovery codes) answer 403 `Recent second factor required` to a session whose last second factor is older than `MFA_STEP_UP_SECONDS` (default 900). This renews it. Wrong codes count toward the same 5 per login window as a login's. Requests with an API key never need it.",
  security: sessionOrKey,
  responses: { 200: json(OkSchema, "The session's second factor is now") },
  steps: [
    ownSession,
    factorBody,
    noFactor,
    throttled,
    invalidCode,
    failure(MSG.mfaFailed),
  ],
});

export const stepUpOptions = route({
  operationId: "stepUpOptions",
  method: "post",
  path: "/api/auth/step-up/options",
  tags,
  summary: "Options for a passkey, to step up",
  description:
    "WebAuthn request options for the caller's passkeys, for `passkey` in `POST /api/auth/step-up`.",
  security: sessionOrKey,
  responses: { 200: json(OptionsSchema, "The options") },
  steps: [ownSession, noFactor, failure(MSG.mfaFailed)],
});

export const listFactors = route({
  operationId: "listSecondFactors",
  method: "get",
  path: "/api/auth/mfa",
  tags,
  summary: "The caller's second factors",
  description:
    "Any role, with a session. Never a secret: the TOTP's enrolment time, the passkeys, how many recovery codes are left.",
  security: sessionOrKey,
  responses: { 200: json(MfaSummarySchema, "The caller's factors") },
  steps: [ownSession, failure(MSG.mfaFailed)],
});

export const beginTotp = route({
  operationId: "beginTotp",
  method: "post",
  path: "/api/auth/mfa/totp",
  tags,
  summary: "Enrol a TOTP app: a new secret",
  description:
    "A new secret and its QR code (SVG) for an authenticator app. Nothing changes until `POST /api/auth/mfa/totp/confirm` with a code from it; asking again replaces an unconfirmed secret. Any role may enrol. " +
    STEP_UP,
  security: sessionOrKey,
  responses: {
    201: json(TotpEnrolmentSchema, "Scan or type it, then confirm"),
  },
  steps: [
    ownSession,
    stepUp(),
    outcome(
      "enrolled",
      check(
        409,
        MSG.alreadyEnrolled,
        "the caller has a confirmed TOTP already (remove it first)",
      ),
    ),
    failure(MSG.mfaFailed),
  ],
});

export const confirmTotp = route({
  operationId: "confirmTotp",
  method: "post",
  path: "/api/auth/mfa/totp/confirm",
  tags,
  summary: "Enrol a TOTP app: confirm with a code",
  description:
    'A code from the new secret confirms it: from now on a login needs a second factor, the caller gets ten recovery codes (replacing any), and this session counts as second-factored. Recorded as `mfa.enrolled` `{method: "totp"}`.',
  security: sessionOrKey,
  responses: { 200: json(RecoveryCodesSchema, "Enrolled") },
  steps: [
    ownSession,
    body(
      z.object({ code: CodeSchema.openapi({ example: "123456" }) }, {
        error: MSG.invalidBody,
      }).openapi("TotpConfirm"),
      [
        bodyTooLarge,
        check(
          400,
          MSG.invalidBody,
          "the body is not a JSON object with `code` a string of at most 64 characters",
        ),
      ],
    ),
    outcome(
      "invalid_code",
      check(
        400,
        MSG.invalidCode,
        "no enrolment waits for confirmation, or the code is not one of its secret now (one step either side)",
      ),
    ),
    failure(MSG.mfaFailed),
  ],
});

export const removeTotp = route({
  operationId: "removeTotp",
  method: "delete",
  path: "/api/auth/mfa/totp",
  tags,
  summary: "Remove the caller's TOTP",
  description:
    'Recorded as `mfa.removed` `{method: "totp"}`. With the last factor the recovery codes go too. ' +
    STEP_UP,
  security: sessionOrKey,
  responses: { 200: json(OkSchema, "Removed") },
  steps: [
    ownSession,
    stepUp(),
    outcome("not_found", factorNotFound),
    failure(MSG.mfaFailed),
  ],
});

export const passkeyOptions = route({
  operationId: "passkeyRegistrationOptions",
  method: "post",
  path: "/api/auth/mfa/passkeys/options",
  tags,
  summary: "Enrol a passkey: options",
  description:
    "WebAuthn creation options (relying party: `PUBLIC_URL`) for `navigator.credentials.create`; send its result to `POST /api/auth/mfa/passkeys`. " +
    STEP_UP,
  security: sessionOrKey,
  responses: { 200: json(OptionsSchema, "The options") },
  steps: [ownSession, stepUp(), failure(MSG.mfaFailed)],
});

export const addPasskey = route({
  operationId: "addPasskey",
  method: "post",
  path: "/api/auth/mfa/passkeys",
  tags,
  summary: "Enrol a passkey",
  description:
    'Verifies the new credential against the options\' challenge (single use) and `PUBLIC_URL`, keeps its public key, and counts this session as second-factored. Recorded as `mfa.enrolled` `{method: "passkey"}`. ' +
    STEP_UP,
  security: sessionOrKey,
  responses: { 201: json(NewPasskeySchema, "Enrolled") },
  steps: [
    ownSession,
    stepUp(),
    body(
      z.object({
        name: z.string({ error: MSG.invalidBody }).trim().min(
          1,
          MSG.invalidBody,
        ).max(100, MSG.invalidBody).optional().openapi({
          description: "1..100 characters to tell passkeys apart",
          example: "Laptop",
        }),
        response: WebAuthnJson(
          "`PublicKeyCredential.toJSON()` of `navigator.credentials.create`",
        ),
      }, { error: MSG.invalidBody }).openapi("PasskeyRegistration"),
      [
        bodyTooLarge,
        check(
          400,
          MSG.invalidBody,
          "the body is not a JSON object with `response` an object and `name`, if given, 1..100 characters",
        ),
      ],
    ),
    outcome(
      "invalid_passkey",
      check(
        400,
        MSG.invalidPasskey,
        "the credential does not verify: another or a used challenge, another origin or relying party, a credential registered already",
      ),
    ),
    failure(MSG.mfaFailed),
  ],
});

export const removePasskey = route({
  operationId: "removePasskey",
  method: "delete",
  path: "/api/auth/mfa/passkeys/{id}",
  tags,
  summary: "Remove one of the caller's passkeys",
  description:
    'Recorded as `mfa.removed` `{method: "passkey"}`. With the last factor the recovery codes go too. ' +
    STEP_UP,
  security: sessionOrKey,
  request: { params: IdParam },
  responses: { 200: json(OkSchema, "Removed") },
  steps: [
    ownSession,
    stepUp(),
    // An id that cannot be one is no passkey of the caller's.
    pathParam("id", parseUserId, factorNotFound),
    outcome("not_found", factorNotFound),
    failure(MSG.mfaFailed),
  ],
});

export const regenerateCodes = route({
  operationId: "regenerateRecoveryCodes",
  method: "post",
  path: "/api/auth/mfa/recovery-codes",
  tags,
  summary: "New recovery codes",
  description:
    "Ten new codes, shown this once; the old ones stop working. Recorded as `mfa.recovery_codes`. " +
    STEP_UP,
  security: sessionOrKey,
  responses: { 200: json(RecoveryCodesSchema, "The new codes") },
  steps: [ownSession, stepUp(), noFactor, failure(MSG.mfaFailed)],
});

// An admin's reset of another user's factors.

export const resetUser = adminRoute({
  permission: "users:factors",
  operationId: "resetSecondFactors",
  method: "delete",
  path: "/api/users/{id}/mfa",
  tags: ["users"],
  summary: "Reset a user's second factors",
  description:
    "For a user who lost their factors: removes their TOTP, passkeys and recovery codes, and ends all their sessions (the caller's own too, when the id is theirs). They log in with the password alone and may enrol again. Recorded as `mfa.reset`. " +
    STEP_UP,
  request: { params: IdParam },
  responses: { 200: json(OkSchema, "Reset") },
  steps: [
    stepUp(),
    userId,
    outranked,
    outcome("not_found", userNotFound),
    failure(MSG.mfaResetFailed),
  ],
});
