/**
 * The steps the user routes share (users.routes.ts, sessions.routes.ts, and
 * the routes under /api/users/{id} elsewhere): the user's id and its 404,
 * the lookup, the write's precondition, the guard against acting on
 * oneself, and the step-up of making an admin.
 */
import type { Caller } from "../auth/caller.ts";
import { anyReach } from "../auth/permissions.ts";
import { stepUp } from "../auth/guards.ts";
import { MSG } from "../http/messages.ts";
import { check } from "../http/openapi.ts";
import { errorResponse } from "../http/errors.ts";
import { guards, load, pathParam } from "../http/steps.ts";
import { parseUserId } from "./user.ts";

/** Checked in the write itself, after the id. */
export const preconditionFailed = check(
  412,
  MSG.preconditionFailed,
  "`If-Match` names another version of the user: it changed since it was read",
);

export const userNotFound = check(
  404,
  MSG.userNotFound,
  "no user has the id (also for ids that cannot exist), or the user is outside the caller's reach (docs/delegation.md: an assignment limited to a group's members)",
);

/** `{id}` as a user's id: 404 for what cannot be one (`abc`, `1.5`, `-1`, out of range). */
export const userId = pathParam("id", parseUserId, userNotFound);

/** 400 when `{id}` is the caller's own, decided before any lookup (a bad id cannot be the caller's). */
export const notSelf = (
  message: typeof MSG.cannotDeleteSelf | typeof MSG.cannotDisableSelf,
) =>
  guards([
    check(
      400,
      message,
      "the id is the caller's own (decided before any lookup)",
    ),
  ], (c) =>
    parseUserId(c.req.param("id") ?? "") === c.get("caller").account.id
      ? errorResponse(c, 400, message)
      : undefined);

/** 404 unless the user of `{id}` exists: a lookup the contract makes before reading the body. */
export const userExists = load(
  "found",
  userNotFound,
  // Outside all the caller reaches, no user: the write decides by the
  // permission the request needs (write.ts's checkCaller).
  (store, got) =>
    store.users.get(
      got.id as number,
      (got.caller as Caller).account.id === got.id
        ? "all"
        : anyReach((got.caller as Caller).access),
    ),
);

/** Making someone an admin (creating one, or a role change to admin) steps up; known only once the body is read. */
export const makingAdmin = stepUp(
  "`role` is `admin`, the caller has a second factor and their session has not passed it within `MFA_STEP_UP_SECONDS` (see `POST /api/auth/step-up`; API keys are exempt)",
  (got) => (got.body as { role?: string | null }).role === "admin",
);

export const RECHECK =
  "The caller is checked again inside the write's transaction: one deleted, logged out or demoted meanwhile gets 401 or 403, so two admins deleting or demoting each other at once never both succeed.";
