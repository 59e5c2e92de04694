/**
 * The guards a route lists in its `middleware`, each with the checks it
 * makes, in the contract's order: 401, then 403 for a caller who is not an
 * admin, then 403 for a foreign Origin. They are plain values: the session
 * service comes from the request (`c.get("sessions")`, set by the app it
 * was built for).
 */
import { MSG } from "../http/messages.ts";
import {
  type Check,
  check,
  guard,
  route,
  type RouteDraft,
  sessionOrKey,
} from "../http/openapi.ts";

const unauthorised = check(
  401,
  MSG.unauthorised,
  "no valid session cookie, or (with an `Authorization` header, which then decides alone) no live API key",
);

/** Any signed-in caller: 401 unless the cookie names an unexpired session or the header a live key; sets `caller`. */
export const signedIn = guard([unauthorised], async (c, next) => {
  const caller = await c.get("sessions").caller(c);
  if (!caller) return c.json({ error: MSG.unauthorised }, 401);
  c.set("caller", caller);
  await next();
});

/** Anyone, but a state-changing request must not come from a page of another origin. */
export const sameOrigin = guard([
  check(403, MSG.forbidden, "the request came from a foreign Origin"),
], async (c, next) => {
  if (c.get("sessions").isForeign(c)) {
    return c.json({ error: MSG.forbidden }, 403);
  }
  await next();
});

/** An admin, from this origin: 401, then 403. */
export const admin = guard([
  unauthorised,
  check(
    403,
    MSG.forbidden,
    "the caller is not an admin, or the request came from a foreign Origin",
  ),
], async (c, next) => {
  const sessions = c.get("sessions");
  const caller = await sessions.caller(c);
  if (!caller) return c.json({ error: MSG.unauthorised }, 401);
  if (caller.account.role !== "admin" || sessions.isForeign(c)) {
    return c.json({ error: MSG.forbidden }, 403);
  }
  c.set("caller", caller);
  await next();
});

/**
 * A route only an admin may call, with the session cookie or an API key:
 * `admin` runs before the route's own middleware, and its checks (401,
 * then 403) lead the route's.
 */
export const adminRoute = <
  const C extends Check,
  P extends string,
  R extends Omit<RouteDraft, "security"> & { path: P },
>(config: R & { checks: readonly C[] }) =>
  route({
    ...config,
    security: sessionOrKey,
    middleware: [admin, ...[config.middleware ?? []].flat()],
    checks: [...admin.checks, ...config.checks],
  });
