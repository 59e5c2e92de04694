/**
 * The steps and checks several second-factor routes share: the body that
 * proves a factor and what checking it may answer (a login's second step,
 * a step-up), a factor that is not the caller's, and the step-up note of
 * the routes that need one.
 */
import { MSG } from "../http/messages.ts";
import { bodyTooLarge, check } from "../http/openapi.ts";
import { body, outcome } from "../http/steps.ts";
import { SecondFactorSchema } from "./mfa.bodies.ts";

export const factorBody = body(SecondFactorSchema, [
  bodyTooLarge,
  check(
    400,
    MSG.invalidBody,
    "the body is not a JSON object holding exactly one of `code` (a string of at most 64 characters) and `passkey` (an object)",
  ),
]);

export const throttled = outcome(
  "throttled",
  check(
    429,
    MSG.tooManyLoginAttempts,
    "the user has had 5 wrong second factors in the login window (`LOGIN_WINDOW_SECONDS` from the first): every attempt answers this until it ends, right ones included",
    {
      "Retry-After": {
        description: "Seconds until the window ends",
        schema: { type: "integer" },
      },
    },
  ),
);

export const invalidCode = outcome(
  "invalid_code",
  check(
    401,
    MSG.invalidCode,
    "the code is not a current TOTP code nor an unused recovery code of the user (a code of the wrong form, a step used already, the previous-but-one or next-but-one step), or the passkey assertion does not verify (another user's passkey, another or a used challenge)",
  ),
);

export const noFactor = outcome(
  "no_factor",
  check(400, MSG.noSecondFactor, "the caller has no second factor"),
);

export const STEP_UP =
  "Needs a recent second factor (see `POST /api/auth/step-up`) from a caller who has one.";

export const factorNotFound = check(
  404,
  MSG.factorNotFound,
  "the caller has no such factor",
);
