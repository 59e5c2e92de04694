import type { RouteHandler } from "@hono/zod-openapi";
import type { Store } from "../db/store.ts";
import type { AppEnv } from "../http/env.ts";
import {
  AUDIT_LIMIT_DEFAULT,
  AuditQuerySchema,
  type list as listRoute,
} from "./audit.routes.ts";

export interface AuditDeps {
  store: Store;
}

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
    for (const name of Object.keys(AuditQuerySchema.shape)) {
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
