import type { Context } from "hono";
import type { Via } from "../audit/chain.ts";
import type { AuditContext } from "../audit/events.ts";
import type { WriteBy } from "../db/write.ts";
import { clientIp } from "./origin.ts";

/**
 * What a request's context carries for its audit record, and for a write
 * (its deadline, set by endpoint.ts). Stated here rather than as the app's
 * AppEnv (env.ts), which names the sessions and so cannot be imported by
 * them: the layers below HTTP that take a request (sessions, second
 * factors) ask for these alone, and a Context<AppEnv> has them.
 */
export type AuditEnv = { Variables: { requestId: string } };
export type WriteEnv = { Variables: { requestId: string; writeBy: WriteBy } };

/**
 * The request id and client address a record keeps: the address as the
 * access log and the login throttle see it (the proxy's word only when
 * trusted); and the door the request came through, which the door says
 * (`api` for /api, the console included; `scim` under /scim/v2).
 */
export const auditContext = <E extends AuditEnv>(
  c: Context<E>,
  trustProxy: boolean,
  via: Exclude<Via, "import">,
): AuditContext => ({
  requestId: c.get("requestId") ?? null,
  clientAddress: clientIp(c, trustProxy) ?? null,
  via,
});
