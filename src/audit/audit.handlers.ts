import type { Hook, RouteHandler } from "@hono/zod-openapi";
import type { Store } from "../db/store.ts";
import type { AppEnv } from "../http/env.ts";
import { ApiError } from "../http/errors.ts";
import { invalidQueryParameter } from "../http/messages.ts";
import {
  AUDIT_LIMIT_DEFAULT,
  AUDIT_QUERY_PARAMETERS,
  type list as listRoute,
} from "./audit.routes.ts";

export interface AuditDeps {
  store: Store;
}

/**
 * A bad query parameter answers 400 naming it; when several are bad, the
 * first in the documented order.
 */
export const auditQueryHook: Hook<unknown, AppEnv, string, undefined> = (
  result,
) => {
  if (result.success) return;
  const named = new Set(result.error.issues.map((i) => String(i.path[0])));
  // The schema declares only these parameters, so one of them is named.
  const first = AUDIT_QUERY_PARAMETERS.find((p) => named.has(p)) ??
    AUDIT_QUERY_PARAMETERS[0];
  throw new ApiError(400, invalidQueryParameter(first));
};

export function createAuditHandlers({ store }: AuditDeps) {
  /** One page, newest first; a `next` link when older records follow. */
  const list: RouteHandler<typeof listRoute, AppEnv> = async (c) => {
    const query = c.req.valid("query");
    const limit = query.limit ?? AUDIT_LIMIT_DEFAULT;
    // One more than asked: whether a next page exists, without counting.
    const records = await store.audit.list({ ...query, limit: limit + 1 });
    if (records.length <= limit) return c.json(records, 200);
    const page = records.slice(0, limit);
    // The same parameters as given, with the cursor after this page's last.
    const next = new URLSearchParams();
    for (const name of AUDIT_QUERY_PARAMETERS) {
      const value = c.req.query(name);
      if (name !== "before" && value !== undefined) next.set(name, value);
    }
    next.set("before", String(page[page.length - 1].id));
    return c.json(page, 200, {
      Link: `</api/audit?${next}>; rel="next"`,
    });
  };

  return { list };
}
