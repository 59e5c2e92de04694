import type { Context } from "hono";
import { auditContext } from "./audit-context.ts";
import type { CallerRefusal, CallerWrite } from "../db/write.ts";
import type { AppEnv } from "./env.ts";
import { MSG } from "./messages.ts";

/**
 * The write as a request asks for it: the caller the write's transaction
 * re-checks, what its audit record keeps of the request (the client address
 * as `trustProxy` reads it), and the request's deadline.
 */
export const callerWrites =
  (trustProxy: boolean) => (c: Context<AppEnv>): CallerWrite => ({
    caller: c.get("caller"),
    context: auditContext(c, trustProxy),
    writeBy: c.get("writeBy"),
  });

/**
 * A caller deleted, logged out or demoted while their request waited
 * answers as if it had arrived a moment later: 401, or 403.
 */
export const refused = (c: Context<AppEnv>, refusal: CallerRefusal) =>
  refusal === "caller_gone"
    ? c.json({ error: MSG.unauthorised }, 401)
    : c.json({ error: MSG.forbidden }, 403);
