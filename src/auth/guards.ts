/**
 * The steps that decide who may call a route, each with the checks it
 * makes, in the contract's order: 401, then 403 for a caller who is not an
 * admin, then 403 for a foreign Origin. They are plain values: the session
 * service comes from the request (`c.get("sessions")`, set by the app it
 * was built for).
 */
import type { Caller } from "./caller.ts";
import {
  grantedBy,
  heldList,
  holdsOver,
  isPermission,
  meets,
  type Permission,
  reachOfGroup,
} from "./permissions.ts";
import { errorResponse } from "../http/errors.ts";
import { MSG, unknownPermission } from "../http/messages.ts";
import {
  check,
  route,
  type RouteDraft,
  sessionOrKey,
} from "../http/openapi.ts";
import { documented, guards, passes, type Step } from "../http/steps.ts";

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
 * A signed-in person acting on their own account with a session (an API
 * key is a service's, not a person's): 401, then 403 for a key or a
 * foreign Origin. `why` says, for the document, why a key is refused. Not
 * held by MFA_REQUIRED_FOR_ADMINS: this is how an admin enrols.
 */
export const ownSessionFor = (why: string) =>
  passes<"caller", Caller & { session: Uint8Array }>(
    "caller",
    [
      unauthorised,
      check(
        403,
        MSG.forbidden,
        `the request came with an API key (${why}), or from a foreign Origin`,
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

/** A signed-in user acting on their own second factors, with a session. */
export const ownSession = ownSessionFor(
  "second factors are a person's, enrolled with a session",
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

/**
 * What a route of the admin API needs (its declaration's `permission`):
 * one permission, or any of several (`PATCH /api/users/{id}`, whose fields
 * each need their own, checked by the handler); `own` lets a caller who
 * holds any permission act on their own account without it (their own
 * keys).
 */
export interface Permit {
  permission: Permission | readonly [Permission, ...Permission[]];
  own?: boolean;
  /**
   * Also an admin acting with every permission: what may make admins and
   * change any account without a check per account (an import's records).
   */
  admin?: boolean;
}

const listed = (p: Permit["permission"]) =>
  typeof p === "string" ? [p] : [...p];

/** The permission as the document states it. */
export const permitText = ({ permission, own, admin }: Permit) =>
  listed(permission).map((p) => `\`${p}\``).join(" or ") +
  (own ? " (a caller's own: any permission they hold)" : "") +
  (admin ? ", as an admin acting with every permission" : "");

/**
 * A caller who holds the route's permission, from this origin: 401, then
 * 403 (and the enrolment policy's 403). The `admin` role holds every
 * permission, `viewer` none, and roles assigned to the caller theirs; the
 * write re-checks it (CallerWrite's `needs`).
 */
export const permitted = (permit: Permit) => {
  const any = listed(permit.permission);
  return passes<"caller", Caller>("caller", [
    unauthorised,
    check(
      403,
      MSG.forbidden,
      `the caller does not hold ${
        permitText(permit)
      }, or the request came from a foreign Origin`,
    ),
    enrollmentRequired,
  ], async (c) => {
    const sessions = c.get("sessions");
    const caller = await sessions.caller(c);
    if (!caller) return errorResponse(c, 401, MSG.unauthorised);
    const held = any.filter((p) =>
      meets(caller.access, permit.admin ? [p, "admin"] : [p])
    );
    const own = permit.own && caller.access.held.size > 0 &&
      c.req.param("id") === String(caller.account.id);
    if ((held.length === 0 && !own) || sessions.isForeign(c)) {
      return errorResponse(c, 403, MSG.forbidden);
    }
    if (sessions.enrollmentRequired(caller)) {
      return errorResponse(c, 403, MSG.enrollmentRequired);
    }
    c.set("caller", caller);
    // One permission is what the write re-checks; with several, the
    // handler names those the request's fields need.
    c.set(
      "needs",
      any.length === 1 && held.length === 1
        ? permit.admin ? [...held, "admin"] : held
        : [],
    );
    return caller;
  });
};

/**
 * A route of the admin API, with the session cookie or an API key: its
 * `permitted` step first, so its checks (401, then 403) lead the route's;
 * the permission it needs stated in its description and as
 * `x-permission`.
 */
export const adminRoute = <
  const S extends readonly Step[],
  P extends string,
  R extends Omit<RouteDraft, "security"> & { path: P } & Permit,
>(config: R & { steps: S }) => {
  const { permission, own, admin } = config;
  const permit = { permission, own, admin };
  return route({
    ...config,
    description: `${config.description}\n\nPermission: ${permitText(permit)}.`,
    "x-permission": permission,
    security: sessionOrKey,
    steps: [permitted(permit), ...config.steps] as const,
  });
};

/** Where a body names permissions: its `permissions`, absent or null for none named. */
const namedPermissions = (got: Record<string, unknown>): readonly string[] =>
  (got.body as { permissions?: readonly string[] | null }).permissions ?? [];

/** 400 `Unknown permission: <name>` for the first name of the body's `permissions` the catalogue lacks (permissions.ts). */
export const knownPermissions = guards([
  check(
    400,
    unknownPermission("<name>"),
    "`permissions` names a permission the catalogue does not have (the first such name)",
  ),
], (c, { got }) => {
  const unknown = namedPermissions(got).find((p) => !isPermission(p));
  return unknown === undefined
    ? undefined
    : errorResponse(c, 400, unknownPermission(unknown));
});

/** 403 `Cannot grant more than you hold`: the body's `permissions` name one the caller does not hold. */
export const withinHeld = guards(
  [
    check(
      403,
      MSG.cannotGrantMore,
      "`permissions` names a permission the caller does not hold",
    ),
  ],
  (c, { got }) =>
    namedPermissions(got).every((p) =>
        c.get("caller").access.held.has(p as Permission)
      )
      ? undefined
      : errorResponse(c, 403, MSG.cannotGrantMore),
);

/**
 * A key's `withinHeld`: 403 `Cannot grant more than you hold` also when the
 * key is limited to a group (`reachGroupId`) and the caller does not hold,
 * over that group's members, each permission the key would carry: those
 * of its `permissions` (without them, all the caller holds) that act on
 * users, as a limited assignment grants them.
 */
export const keyWithinHeld = guards(
  [
    check(
      403,
      MSG.cannotGrantMore,
      "`permissions` names a permission the caller does not hold; or with `reachGroupId`, the caller does not hold over that group's members each permission the key would carry (those of `permissions` that act on users; without `permissions`, each such one the caller holds)",
    ),
  ],
  (c, { got }) => {
    const { access } = c.get("caller");
    const group = (got.body as { reachGroupId?: number | null }).reachGroupId ??
      null;
    const named = namedPermissions(got);
    const carried = group === null ? [] : grantedBy(
      (got.body as { permissions?: unknown }).permissions
        ? named
        : heldList(access),
      group,
    );
    return named.every((p) => access.held.has(p as Permission)) &&
        holdsOver(access, carried, reachOfGroup(group))
      ? undefined
      : errorResponse(c, 403, MSG.cannotGrantMore);
  },
);

/** A write on a user the caller may not act on: the user holds a permission the caller does not (checked under the user's lock). */
export const outranked = documented(
  check(
    403,
    MSG.cannotActOnMorePrivileged,
    "the user holds a permission the caller does not, or over a reach the caller's does not cover (an admin's every one over everyone included), decided in the write under the user's lock",
  ),
);
