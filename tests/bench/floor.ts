/**
 * The raw floor the bench compares the service with: plain Deno.serve and
 * postgres.js answering `GET /api/users` and `GET /api/auth/me` with the
 * service's SQL, the same session check (cookie -> SHA-256 with node:crypto
 * -> one query joining the live session to its user, not disabled; its
 * `last_seen_at` written once a minute) and
 * byte-identical JSON bodies.
 * The list carries the same ETag from the same version row (one more
 * query) and answers If-None-Match with 304, as the service does. Every
 * answer carries the service's headers too: a request id (made the way
 * the service makes it) and the four security headers of its JSON answers
 * (src/http/security-headers.ts); the bench checks that both answer the
 * same headers. No framework, no validation, no logging: the fastest honest
 * way to do the same observable work, so the gap to the service is its
 * overhead. The service is measured with its defaults, its access log on:
 * the gap includes what the log costs.
 *
 * Environment: DATABASE_URL, LIST_BATCH (the service's rows per list
 * statement, src/db/user-list.ts; the bench passes it), PORT (0: any free
 * port), DATABASE_POOL_MAX, FLOOR_LIST (`rows`: one query, a JSON text per
 * row, joined here — the default and the fastest measured; `agg`:
 * PostgreSQL builds the whole array; `objects`: rows as objects through
 * JSON.stringify).
 */
import { createHash } from "node:crypto";
import postgres from "postgres";

const url = Deno.env.get("DATABASE_URL");
if (!url) throw new Error("DATABASE_URL is required");
const LIST_BATCH = Number(Deno.env.get("LIST_BATCH"));
if (!(LIST_BATCH > 0)) throw new Error("LIST_BATCH is required");
// The pool as the service makes it (src/db/database.ts): the driver starts
// and cancels the idle timer around every query, work both sides then do.
const sql = postgres(url, {
  max: Number(Deno.env.get("DATABASE_POOL_MAX") ?? 10),
  connect_timeout: 3,
  idle_timeout: 60,
  max_lifetime: 30 * 60,
  onnotice: () => {},
  connection: { application_name: "user-admin-floor" },
});
const mode = Deno.env.get("FLOOR_LIST") ?? "rows";

const TOKEN = /^[A-Za-z0-9_-]{43}$/;
/** What an assignment limited to a group grants (src/auth/permissions.ts's REACHABLE). */
const REACHABLE_SQL =
  "{users:read,users:update,users:password,users:disable,users:sessions,users:factors,users:delete,users:export,audit:read,keys:manage}";
const SID = /(?:^|;\s*)sid=([^;]*)/;

// As the service makes them: a per-process prefix and a counter.
const instance = crypto.randomUUID().slice(0, 8);
let requests = 0;

/** The headers of every answer of the service's API, and `more`. */
const headers = (more: Record<string, string>) => ({
  ...more,
  "x-request-id": `${instance}-${++requests}`,
  // Spelt as the service spells them, so even the bytes are the same.
  "X-Content-Type-Options": "nosniff",
  "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
  "Cache-Control": "no-store",
  "Cross-Origin-Resource-Policy": "same-origin",
});
const JSON_TYPE = { "content-type": "application/json" };

const answer = (body: string, status = 200) =>
  new Response(body, { status, headers: headers(JSON_TYPE) });
const fail = (status: number, error: string) =>
  answer(JSON.stringify({ error }), status);

interface Caller {
  id: number;
  username: string;
  name: string;
  email: string;
  role: string;
}

async function caller(req: Request): Promise<Caller | undefined> {
  const token = SID.exec(req.headers.get("cookie") ?? "")?.[1];
  if (!token || !TOKEN.test(token)) return undefined;
  const hash = createHash("sha256").update(token).digest();
  // The service's statements (src/db/sessions.ts): a live session of a user
  // not disabled, with the user's second-factor state, the grants' version
  // and the permissions their roles grant (src/db/grants.ts; the floor keeps
  // none, and answers admins only), and `last_seen_at` written at most once
  // a minute.
  const [row] = await sql<(Caller & { unseen: boolean })[]>`
    select u.id, u.username, u.name, u.email, u.role, (s.last_seen_at is null
      or s.last_seen_at <= now() - interval '1 minute') as unseen,
      u.mfa_enabled as "mfaEnabled",
      extract(epoch from now() - s.second_factor_at)::float8
        as "secondFactorAge",
      (select version from grants_version where singleton)::text
        as "grantsVersion",
      case when (select version from grants_version where singleton)
        = ${"0"}::int8 then null else
      (case when u.role = 'admin' then null::text[] else array(
        select distinct case when held.reach is null then p
            else p || '@' || held.reach end from (
            select ra.role_id, ra.reach_group_id as reach
            from role_assignments ra
            where ra.user_id = u.id
            union all
            select ga.role_id, ga.reach_group_id from scim_members gm
              join role_assignments ga on ga.group_id = gm.group_id
            where gm.user_id = u.id
          ) held
          join roles r on r.id = held.role_id
          cross join unnest(r.permissions) p
          where held.reach is null or p = any(${REACHABLE_SQL}::text[])
        ) end) end as granted
    from sessions s join users u on u.id = s.user_id
    where s.token_hash = ${hash} and (s.expires_at > now()
      and s.password_version = u.password_version
      and not (u.disabled_at is not null
      and (u.disabled_until is null or u.disabled_until > now())))`;
  if (!row) return undefined;
  if (row.unseen) {
    await sql`
      update sessions s set last_seen_at = now()
      where s.token_hash = ${hash} and (s.last_seen_at is null
        or s.last_seen_at <= now() - interval '1 minute')`;
  }
  const { id, username, name, email, role } = row;
  return { id, username, name, email, role };
}

const CREATED_AT =
  sql`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

async function listBody(): Promise<string> {
  if (mode === "objects") {
    const rows = await sql`
      select id, username, name, email, role, ${CREATED_AT} as "createdAt"
      from users order by created_at, id`;
    return JSON.stringify(rows);
  }
  if (mode === "agg") {
    const [{ body }] = await sql<{ body: string }[]>`
      select '[' || coalesce(string_agg(row_to_json(r)::text, ','
        order by users.created_at, users.id), '') || ']' as body
      from users, lateral (select id, username, name, email, role,
        ${CREATED_AT} as "createdAt") r`;
    return body;
  }
  // The service's statement, its batch size (LIST_BATCH) a parameter as
  // there: PostgreSQL then plans both alike. A prepared statement with a
  // parameter gets the generic plan after a few runs, the index in list
  // order, which sends rows as it reads them; the same statement without a
  // limit got a sort, which sends them all at the end, in fewer, larger
  // pieces that woke the floor less often. A full batch goes on after its
  // last user, as the service's does.
  let body = "[";
  let after: number | undefined;
  for (;;) {
    const rows = await (after === undefined
      ? sql<[string][]>`
        select row_to_json(u)::text as json
        from users, lateral (select id, username, name, email, role,
          ${CREATED_AT} as "createdAt") u
        order by users.created_at, users.id
        limit ${LIST_BATCH}`
      : sql<[string][]>`
        select row_to_json(u)::text as json
        from users, lateral (select id, username, name, email, role,
          ${CREATED_AT} as "createdAt") u
        where (users.created_at, users.id) >
          (select b.created_at, b.id from users b where b.id = ${after})
        order by users.created_at, users.id
        limit ${LIST_BATCH}`).values();
    for (let i = 0; i < rows.length; i++) {
      body += body.length === 1 ? rows[i][0] : "," + rows[i][0];
    }
    if (rows.length < LIST_BATCH) return body + "]";
    after = JSON.parse(String(rows[rows.length - 1][0])).id;
  }
}

const server = Deno.serve({
  hostname: "127.0.0.1",
  port: Number(Deno.env.get("PORT") ?? 0),
  onListen: ({ hostname, port }) =>
    console.log(
      JSON.stringify({ msg: "listening", url: `http://${hostname}:${port}` }),
    ),
}, async (req) => {
  const url = req.url;
  const path = url.slice(url.indexOf("/", url.indexOf("//") + 2));
  if (req.method !== "GET") return fail(404, "Not found");
  try {
    if (path === "/api/auth/me") {
      const who = await caller(req);
      return who ? answer(JSON.stringify(who)) : fail(401, "Unauthorised");
    }
    if (path === "/api/users") {
      const who = await caller(req);
      if (!who) return fail(401, "Unauthorised");
      if (who.role !== "admin") return fail(403, "Forbidden");
      const [{ version }] = await sql<{ version: string }[]>`
        select version::text from users_version where singleton`;
      const etag = `"l${version}"`;
      if (req.headers.get("if-none-match") === etag) {
        return new Response(null, { status: 304, headers: headers({ etag }) });
      }
      return new Response(await listBody(), {
        headers: headers({ ...JSON_TYPE, etag }),
      });
    }
  } catch (e) {
    console.error(e);
    return fail(500, "Internal server error");
  }
  return fail(404, "Not found");
});

Deno.addSignalListener("SIGTERM", async () => {
  await server.shutdown();
  await sql.end({ timeout: 2 });
  Deno.exit(0);
});
