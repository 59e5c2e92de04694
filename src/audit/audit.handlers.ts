import { meets, type Reach, reachOf } from "../auth/permissions.ts";
import type { Store } from "../db/store.ts";
import type { Handlers } from "../http/endpoint.ts";
import type { AuditFeed } from "./feed.ts";
import { AUDIT_LIMIT_DEFAULT, AuditQuerySchema } from "./audit.routes.ts";
import type * as routes from "./audit.routes.ts";
import { refuse } from "../refusal.ts";

type Handler<K extends keyof typeof routes> = Handlers<typeof routes>[K];

export interface AuditDeps {
  store: Store;
  feed: AuditFeed;
  /** A comment line on an open stream this often. */
  heartbeatMs: number;
}

/** How often an open stream's caller is checked again: well inside the 5 s it may outlive its right. */
export const STREAM_RECHECK_MS = 2000;

export function createAuditHandlers({ store, feed, heartbeatMs }: AuditDeps) {
  /** One page, newest first; a `next` link when older records follow. */
  const list: Handler<"list"> = async (c, { query }) => {
    const limit = query.limit ?? AUDIT_LIMIT_DEFAULT;
    // One more than asked: whether a next page exists, without counting.
    // A limited reader reads the records about users within their reach.
    const reach = reachOf(c.get("caller").access, "audit:read");
    const records = await store.audit.list({
      ...query,
      limit: limit + 1,
      reach,
    });
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

  /**
   * The records after the client's last id (`Last-Event-ID`, else `after`),
   * or only new ones, as Server-Sent Events. The answer is made at once; the
   * body flows from the feed, past the request's deadline.
   */
  const stream: Handler<"stream"> = async (c, { query, after }) => {
    // As every read of the trail: what committed so far is sealed first.
    await store.audit.seal();
    const { headId, anchorId } = await store.audit.ends();
    if (after !== undefined && after < anchorId) return refuse("history_gone");
    const headers = {
      "Content-Type": "text/event-stream; charset=utf-8",
      // Proxies that buffer (nginx) pass each event on at once.
      "X-Accel-Buffering": "no",
    };
    // A limited reader sees the records about users within their reach:
    // its members, read again at each re-check (a member who left, or a
    // reach lost, is seen within it).
    let reach: Reach = reachOf(c.get("caller").access, "audit:read");
    let reached = reach === "all"
      ? undefined
      : new Set(await store.users.reachedIds(reach.groupIds));
    // No await from here to `open`: no other request slips past the limit.
    const userId = c.get("caller").account.id;
    if (!feed.mayOpen(userId)) return refuse("too_many_streams");
    // HEAD: the headers alone, and no stream that nobody would read.
    if (c.req.method === "HEAD") return c.body(null, 200, headers);
    const sessions = c.get("sessions");
    const body = feed.open({
      userId,
      after: after ?? headId,
      head: headId,
      actions: query.action,
      shows: (r) =>
        reached === undefined ||
        (r.target !== null && reached.has(r.target.id)),
      heartbeatMs,
      recheckMs: STREAM_RECHECK_MS,
      // The request's own credential (session or key), resolved again as
      // the guard resolved it.
      async allowed() {
        const caller = await sessions.caller(c);
        if (caller === undefined || !meets(caller.access, ["audit:read"])) {
          return false;
        }
        reach = reachOf(caller.access, "audit:read");
        reached = reach === "all"
          ? undefined
          : new Set(await store.users.reachedIds(reach.groupIds));
        return true;
      },
    });
    return c.body(body, 200, headers) as never;
  };

  return { list, stream };
}
