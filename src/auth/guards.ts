/**
 * The steps that decide who may call a route, each with the checks it
 * makes, in the contract's order: 401, then 403 for a caller who is not an
 * admin, then 403 for a foreign Origin. They are plain values: the session
 * service comes from the request (`c.get("sessions")`, set by the app it
 * was built for).
 */
import type { Caller } from "./caller.ts";
import { errorResponse } from "../http/errors.ts";
import { MSG } from "../http/messages.ts";
import {
  check,
  route,
  type RouteDraft,
  sessionOrKey,
} from "../http/openapi.ts";
import { guards, passes, type Step } from "../http/steps.ts";

const unauthorised = check(
  401,
  MSG.unauthorised,
  "no valid session cookie, or (with an `Authorization` header, which then decides alone) no live API key",
);

/** MFA_REQUIRED_FOR_ADMINS: right after 401 (and the role's 403), before the endpoint's own checks. */
const enrollmentRequired = check(
  403,
  MSG.enrollmentRequired,
  "`MFA_REQUIRED_FOR_ADMINS=true` and the caller is an admin whose session has passed no second factor (enrol one first; API keys are not held)",
);

/**
 * Any signed-in caller: 401 unless the cookie names an unexpired session or
 * the header a live key. Not held by MFA_REQUIRED_FOR_ADMINS (it guards
 * `me`, which an admin who must enrol may still call).
 */
export const signedIn = passes<"caller", Caller>(
  "caller",
  [unauthorised],
  async (c) => {
    const caller = await c.get("sessions").caller(c);
    if (!caller) return errorResponse(c, 401, MSG.unauthorised);
    c.set("caller", caller);
    return caller;
  },
);

/**
 * A signed-in user acting on their own second factors, with a session (an
 * API key enrols nothing): 401, then 403 for a key or a foreign Origin.
 * Not held by MFA_REQUIRED_FOR_ADMINS: this is how an admin enrols.
 */
export const ownSession = passes<"caller", Caller & { session: Uint8Array }>(
  "caller",
  [
    unauthorised,
    check(
      403,
      MSG.forbidden,
      "the request came with an API key (second factors are a person's, enrolled with a session), or from a foreign Origin",
    ),
  ],
  async (c) => {
    const sessions = c.get("sessions");
    const caller = await sessions.caller(c);
    if (!caller) return errorResponse(c, 401, MSG.unauthorised);
    if (caller.session === undefined || sessions.isForeign(c)) {
      return errorResponse(c, 403, MSG.forbidden);
    }
    c.set("caller", caller);
    return caller as Caller & { session: Uint8Array };
  },
);

/**
 * A dangerous action: a caller with a second factor must have passed it
 * within MFA_STEP_UP_SECONDS (`POST /api/auth/step-up` renews it), else
 * 403. A caller without a factor, and a request with an API key, pass.
 * `when` limits it to the requests it names (making a user admin).
 */
export const stepUp = (
  when =
    "the caller has a second factor and their session has not passed it within `MFA_STEP_UP_SECONDS` (see `POST /api/auth/step-up`; API keys are exempt)",
  applies: (got: Record<string, unknown>) => boolean = () => true,
) =>
  guards(
    [check(403, MSG.recentSecondFactorRequired, when)],
    (c, { got }) =>
      applies(got) && c.get("sessions").stepUpRequired(c.get("caller"))
        ? errorResponse(c, 403, MSG.recentSecondFactorRequired)
        : undefined,
  );

/**
 * Changing an admin's account (a password reset, a role change, a disable)
 * steps up as making one does: a door that changes admins asks for the
 * same recent factor. The target is read only when the caller would need
 * a step-up, so a caller without a factor pays nothing; an unknown id
 * passes on to the endpoint's own 404.
 */
export const changingAdmin = (
  target: (got: Record<string, unknown>) => number,
) =>
  guards(
    [
      check(
        403,
        MSG.recentSecondFactorRequired,
        "the user is an admin, the caller has a second factor and their session has not passed it within `MFA_STEP_UP_SECONDS` (see `POST /api/auth/step-up`; API keys are exempt)",
      ),
    ],
    async (c, { deps, got }) => {
      if (!c.get("sessions").stepUpRequired(c.get("caller"))) return;
      const user = await deps.store.users.get(target(got));
      return user?.user.role === "admin"
        ? errorResponse(c, 403, MSG.recentSecondFactorRequired)
        : undefined;
    },
  );

/** Anyone, but a state-changing request must not come from a page of another origin. */
export const sameOrigin = guards(
  [
    check(403, MSG.forbidden, "the request came from a foreign Origin"),
  ],
  (c) =>
    c.get("sessions").isForeign(c)
      ? errorResponse(c, 403, MSG.forbidden)
      : undefined,
);

/** An admin, from this origin: 401, then 403 (and the enrolment policy's 403). */
export const admin = passes<"caller", Caller>("caller", [
  unauthorised,
  check(
    403,
    MSG.forbidden,
    "the caller is not an admin, or the request came from a foreign Origin",
  ),
  enrollmentRequired,
], async (c) => {
  const sessions = c.get("sessions");
  const caller = await sessions.caller(c);
  if (!caller) return errorResponse(c, 401, MSG.unauthorised);
  if (caller.account.role !== "admin" || sessions.isForeign(c)) {
    return errorResponse(c, 403, MSG.forbidden);
  }
  if (sessions.enrollmentRequired(caller)) {
    return errorResponse(c, 403, MSG.enrollmentRequired);
  }
  c.set("caller", caller);
  return caller;
});

/**
 * A route only an admin may call, with the session cookie or an API key:
 * `admin` is its first step, so its checks (401, then 403) lead the
 * route's.
 */
export const adminRoute = <
  const S extends readonly Step[],
  P extends string,
  R extends Omit<RouteDraft, "security"> & { path: P },
>(config: R & { steps: S }) =>
  route({
    ...config,
    security: sessionOrKey,
    steps: [admin, ...config.steps] as const,
  });
