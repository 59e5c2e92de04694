/**
 * Typed client of the user administration service: openapi-fetch over the
 * types that openapi-typescript generates from openapi/openapi.yaml.
 *
 * Two ways to call, one client:
 * - `get`/`post`/`patch`/`delete` answer a {@link Outcome}: `{ ok: true,
 *   status, data }`, or `{ ok: false, status, error }` where `error` is the
 *   contract's message for that operation and status, as a literal type.
 * - `GET`/`POST`/`PATCH`/`DELETE` are openapi-fetch's own
 *   (`{ data, error, response }`), for headers and anything else raw.
 *
 * On a server, fetch has no cookie jar: the client keeps the session cookie
 * that `login` receives in memory and sends it with every call after.
 * In a browser, the browser's own cookie handling applies.
 *
 * Over the list: `users()` iterates over every (matching) user page by page,
 * `findByUsername`/`findByEmail` look one up, and `etagCache: true` makes
 * repeated GETs conditional (If-None-Match; a 304 answers the cached data).
 *
 * Plain TypeScript on web APIs (fetch, Request, Headers.getSetCookie): it
 * runs on Deno, Node 20+ and in browsers; its one dependency is openapi-fetch.
 *
 * @module
 */
// The npm: specifier is inline, not deno.json's bare "openapi-fetch", so that
// a project outside this repository can import this file by its path (Deno
// reads only the importer's deno.json). The npm build checks that it names
// the version clients/deno.json maps.
import createClient, {
  type Client,
  type FetchOptions,
  type Middleware,
  // deno-lint-ignore no-import-prefix
} from "npm:openapi-fetch@0.17.0";
import type { components, operations, paths } from "./schema.d.ts";

export type { components, operations, paths };
/** A user as the list, get and create operations answer it. */
export type User = components["schemas"]["User"];
/** An account as login, me and update answer it (a user without `createdAt`). */
export type Account = components["schemas"]["Account"];
/** The body of `POST /api/users`. */
export type CreateUser = components["schemas"]["CreateUser"];
/** The body of `PATCH /api/users/{id}`. */
export type UpdateUser = components["schemas"]["UpdateUser"];
/** One user as `GET /api/users/{id}` answers: a User with `disabled` and `lastLoginAt`. */
export type UserDetail = components["schemas"]["UserDetail"];
/** The body of `POST /api/users/{id}/disable`: `{reason?, until?}`. */
export type DisableUser = components["schemas"]["DisableUser"];
/** One of a user's live sessions (`GET /api/users/{id}/sessions`). */
export type Session = components["schemas"]["Session"];
/** `"admin"` or `"viewer"`. */
export type Role = User["role"];
/** The list's query parameters (`limit`, `after`, `role`, `q`, `username`, `email`). */
export type ListQuery = NonNullable<
  operations["listUsers"]["parameters"]["query"]
>;

/** The HTTP methods the lowercase calls cover. */
export type Method = "get" | "post" | "patch" | "delete";

/** The paths that have an operation for this method. */
export type PathsWith<M extends Method> = {
  [P in keyof paths]: paths[P][M] extends undefined ? never : P;
}[keyof paths];

/** The operation object of a path and method, as openapi-typescript emits it. */
export type Operation<P extends keyof paths, M extends Method> = NonNullable<
  paths[P][M]
>;

type JsonBody<R> = R extends { content: { "application/json": infer B } } ? B
  : undefined;

/**
 * Every answer an operation declares, one member per status: the data of a
 * 2xx, the exact error message of anything else. Narrow on `ok`, then on
 * `status` if you care which failure it was.
 */
export type Outcome<Op> = Op extends { responses: infer R } ? {
    // 304 answers only a request that sent If-None-Match itself: use `GET`
    // for that, or `etagCache`, which answers a 304 with the cached 200.
    [S in Exclude<keyof R & number, 304>]: `${S}` extends `2${string}`
      ? { ok: true; status: S; data: JsonBody<R[S]> }
      : JsonBody<R[S]> extends { error: infer E } ? {
          ok: false;
          status: S;
          error: E;
        }
      // A failure whose body is not an error, like /health's 503.
      : { ok: false; status: S; data: JsonBody<R[S]> };
  }[Exclude<keyof R & number, 304>]
  : never;

/** The error messages an operation can answer, from the contract. */
export type ErrorMessage<P extends keyof paths, M extends Method> = MessageOf<
  Outcome<Operation<P, M>>
>;
type MessageOf<O> = O extends { ok: false; error: infer E } ? E : never;

/** A call's outcome without status-by-status types (see {@link result}). */
export type Result<T, Message extends string = string> =
  | { ok: true; status: number; data: T }
  | { ok: false; status: number; error: Message };

/** An answer outside the contract: not JSON (a proxy's error page, say). */
export class UnexpectedResponseError extends Error {
  /** `status` and `body` (the text) of the answer. */
  constructor(readonly status: number, readonly body: string) {
    super(`Unexpected answer ${status}: ${body.slice(0, 200)}`);
    this.name = "UnexpectedResponseError";
  }
}

/**
 * Turns an answer of openapi-fetch's `GET`/`POST`/... into a Result. The
 * lowercase methods do this for you and keep each status's own message.
 */
export function result<T, E extends { error: string }>(
  answer: { data?: T; error?: E | string; response: Response },
): Result<T, E["error"]> {
  const { status } = answer.response;
  if (answer.response.ok) return { ok: true, status, data: answer.data as T };
  // Not modified: no body, nothing failed; the caller's copy is current.
  if (status === 304) {
    return { ok: false, status, data: undefined } as unknown as Result<
      T,
      E["error"]
    >;
  }
  const body = answer.error;
  if (typeof body === "object" && body !== null) {
    if (typeof body.error === "string") {
      return { ok: false, status, error: body.error };
    }
    // Declared failures that are not errors (/health's 503) keep their body.
    return { ok: false, status, data: body } as unknown as Result<
      T,
      E["error"]
    >;
  }
  throw new UnexpectedResponseError(status, String(body ?? ""));
}

/** The init argument of an operation: required when it has a body or path params. */
type Init<Op> = RequiredKeys<FetchOptions<Op>> extends never
  ? [init?: FetchOptions<Op>]
  : [init: FetchOptions<Op>];
type RequiredKeys<T> = {
  [K in keyof T]-?: object extends Pick<T, K> ? never : K;
}[keyof T];

type OutcomeMethod<M extends Method> = <P extends PathsWith<M>>(
  path: P,
  ...init: Init<Operation<P, M>>
) => Promise<Outcome<Operation<P, M>>>;

/** Where the service is, and how to reach it. */
export interface UserAdminClientOptions {
  /** Where the service is, e.g. `http://127.0.0.1:8000`. */
  baseUrl: string;
  /** A fetch of your own (tests, proxies, instrumentation). */
  fetch?: (request: Request) => Promise<Response>;
  /** Headers sent with every call. */
  headers?: Record<string, string>;
  /**
   * Remember each GET answer that has an `ETag` (its body too, in memory)
   * and send `If-None-Match` on the next GET of the same URL; a 304 is then
   * answered from memory as the 200 it stands for. Worth it for polling;
   * off by default, as it keeps a copy of every body it sees.
   */
  etagCache?: boolean;
}

/** A failed answer while iterating, carrying the contract's message. */
export class UserAdminError extends Error {
  constructor(readonly status: number, readonly error: string) {
    super(`${status} ${error}`);
    this.name = "UserAdminError";
  }
}

/** The answer of a lookup: the user, or null when none has that name. */
export type Lookup =
  | { ok: true; status: 200; data: User | null }
  | Exclude<Outcome<Operation<"/api/users", "get">>, { ok: true }>;

/**
 * openapi-fetch's client over the service's paths, with the lowercase
 * {@link Outcome} calls, the auth calls and the session cookie on top.
 */
export type UserAdminClient = Client<paths> & {
  get: OutcomeMethod<"get">;
  post: OutcomeMethod<"post">;
  patch: OutcomeMethod<"patch">;
  delete: OutcomeMethod<"delete">;
  /** Logs in; on success the client keeps the session cookie. */
  login(
    username: string,
    password: string,
  ): Promise<Outcome<Operation<"/api/auth/login", "post">>>;
  /** Ends the session on the server and forgets the cookie. */
  logout(): Promise<Outcome<Operation<"/api/auth/logout", "post">>>;
  /** The account the session belongs to. */
  me(): Promise<Outcome<Operation<"/api/auth/me", "get">>>;
  /** Whether the client holds a session cookie. */
  readonly hasSession: boolean;
  /**
   * Every user matching `query` (all users without one), oldest first,
   * fetched `pageSize` at a time by following the `next` links. Throws
   * {@link UserAdminError} on a failed page.
   */
  users(
    query?: Omit<ListQuery, "limit" | "after">,
    pageSize?: number,
  ): AsyncIterable<User>;
  /** The user with this username (any case, canonical form), or null. */
  findByUsername(username: string): Promise<Lookup>;
  /** The user with this e-mail (any case, canonical form), or null. */
  findByEmail(email: string): Promise<Lookup>;
  /** Disables the user (no login; their sessions end); without `body`, no reason and no end. */
  disableUser(
    id: number,
    body?: DisableUser,
  ): Promise<Outcome<Operation<"/api/users/{id}/disable", "post">>>;
  /** Lifts the user's disable (also fine when there is none). */
  enableUser(
    id: number,
  ): Promise<Outcome<Operation<"/api/users/{id}/enable", "post">>>;
  /** The user's live sessions, newest first. */
  listSessions(
    id: number,
  ): Promise<Outcome<Operation<"/api/users/{id}/sessions", "get">>>;
  /** Ends all of the user's sessions, or (with `sessionId`) that one. */
  endSessions(
    id: number,
    sessionId?: string,
  ): Promise<
    Outcome<
      Operation<
        "/api/users/{id}/sessions" | "/api/users/{id}/sessions/{sessionId}",
        "delete"
      >
    >
  >;
};

const SESSION_COOKIE = "sid";

/** A client of the service at `options.baseUrl`, with a cookie jar of its own. */
export function createUserAdminClient(
  options: UserAdminClientOptions,
): UserAdminClient {
  let session: string | undefined;
  const api = createClient<paths>({
    baseUrl: options.baseUrl,
    fetch: options.fetch,
    headers: options.headers,
  });

  const cookieJar: Middleware = {
    onRequest({ request }) {
      if (session !== undefined && !request.headers.has("cookie")) {
        request.headers.set("cookie", `${SESSION_COOKIE}=${session}`);
      }
      return request;
    },
    onResponse({ response }) {
      for (const line of response.headers.getSetCookie()) {
        const [pair, ...attributes] = line.split(";");
        const eq = pair.indexOf("=");
        if (pair.slice(0, eq).trim() !== SESSION_COOKIE) continue;
        const value = pair.slice(eq + 1).trim();
        const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a));
        session = expired || value === "" ? undefined : value;
      }
      return response;
    },
  };
  api.use(cookieJar);
  if (options.etagCache) api.use(etagCache());

  // One runtime path for all four; the types above say what each answers.
  const call =
    (method: Method) => async (path: string, init?: Record<string, unknown>) =>
      // deno-lint-ignore no-explicit-any
      result(await (api.request as any)(method, path, init));
  const typed = {
    get: call("get") as OutcomeMethod<"get">,
    post: call("post") as OutcomeMethod<"post">,
    patch: call("patch") as OutcomeMethod<"patch">,
    delete: call("delete") as OutcomeMethod<"delete">,
  };

  const client = Object.assign(api, typed, {
    login: (username: string, password: string) =>
      typed.post("/api/auth/login", { body: { username, password } }),
    async logout() {
      const answer = await typed.post("/api/auth/logout");
      session = undefined;
      return answer;
    },
    me: () => typed.get("/api/auth/me"),
    users: (query: Omit<ListQuery, "limit" | "after"> = {}, pageSize = 500) =>
      walk(api, query, pageSize),
    findByUsername: (username: string) => lookup(typed, { username }),
    findByEmail: (email: string) => lookup(typed, { email }),
    disableUser: (id: number, body?: DisableUser) =>
      typed.post("/api/users/{id}/disable", {
        params: { path: { id } },
        ...(body === undefined ? {} : { body }),
      } as never),
    enableUser: (id: number) =>
      typed.post("/api/users/{id}/enable", { params: { path: { id } } }),
    listSessions: (id: number) =>
      typed.get("/api/users/{id}/sessions", { params: { path: { id } } }),
    endSessions: (id: number, sessionId?: string) =>
      sessionId === undefined
        ? typed.delete("/api/users/{id}/sessions", {
          params: { path: { id } },
        })
        : typed.delete("/api/users/{id}/sessions/{sessionId}", {
          params: { path: { id, sessionId } },
        }),
  });
  // Defined, not assigned: Object.assign would copy a getter's value once.
  return Object.defineProperty(client, "hasSession", {
    get: () => session !== undefined,
  }) as typeof client & { readonly hasSession: boolean };
}

// --- The audit trail, page by page ---------------------------------------

export type AuditRecord = components["schemas"]["AuditRecord"];
export type AuditAction = AuditRecord["action"];
/** The filters and page size of `GET /api/audit`; the iterator moves the cursor. */
export type AuditQuery = Omit<
  NonNullable<operations["listAuditEvents"]["parameters"]["query"]>,
  "before"
>;

/** A page of the audit trail answered an error (401, 403, 400, 500). */
export class AuditPageError extends Error {
  constructor(readonly status: number, readonly error: string) {
    super(`GET /api/audit answered ${status}: ${error}`);
    this.name = "AuditPageError";
  }
}

/**
 * The audit trail newest first, one page (an array of records) at a time,
 * following each answer's `next` link (which keeps the filters) until the
 * last page. Throws {@link AuditPageError} when a page answers an error.
 *
 * ```ts
 * for await (const page of auditPages(api, { action: "user.role_changed" })) {
 *   for (const r of page) console.log(r.time, r.actor?.username, r.details);
 * }
 * ```
 */
export async function* auditPages(
  client: UserAdminClient,
  query: AuditQuery = {},
): AsyncGenerator<AuditRecord[], void, undefined> {
  let params: Record<string, unknown> | undefined = query;
  while (params) {
    const answer = await client.GET("/api/audit", {
      params: { query: params as AuditQuery },
    });
    if (!answer.data) {
      const body = answer.error as { error?: string } | undefined;
      throw new AuditPageError(answer.response.status, body?.error ?? "");
    }
    yield answer.data;
    const next = nextLink(answer.response.headers.get("link"));
    params = next && Object.fromEntries(next.searchParams);
  }
}

async function lookup(
  typed: { get: OutcomeMethod<"get"> },
  query: { username: string } | { email: string },
): Promise<Lookup> {
  const found = await typed.get("/api/users", { params: { query } });
  if (!found.ok) return found;
  return { ok: true, status: 200, data: found.data[0] ?? null };
}

async function* walk(
  api: Client<paths>,
  query: Omit<ListQuery, "limit" | "after">,
  pageSize: number,
): AsyncGenerator<User> {
  let params: ListQuery = { ...query, limit: pageSize };
  while (true) {
    const { data, error, response } = await api.GET("/api/users", {
      params: { query: params },
    });
    if (!data) {
      throw new UserAdminError(
        response.status,
        (error as { error?: string } | undefined)?.error ?? response.statusText,
      );
    }
    yield* data;
    const next = nextLink(response.headers.get("link"));
    if (!next) return;
    // The link keeps the query; only its parameters are taken from it.
    params = Object.fromEntries(next.searchParams) as unknown as ListQuery;
  }
}

/** The target of `rel="next"` in a Link header (RFC 8288), if any. */
export function nextLink(header: string | null): URL | undefined {
  for (const m of (header ?? "").matchAll(/<([^>]*)>\s*((?:;[^,]*)*)/g)) {
    if (/;\s*rel="?([^";]*\s)?next(\s[^";]*)?"?/i.test(m[2])) {
      return new URL(m[1], "http://link.invalid");
    }
  }
  return undefined;
}

/** GET answers by URL, for If-None-Match; see `etagCache`. */
function etagCache(): Middleware {
  const cache = new Map<
    string,
    { etag: string; body: string; headers: [string, string][] }
  >();
  return {
    onRequest({ request }) {
      const hit = request.method === "GET" && cache.get(request.url);
      if (hit && !request.headers.has("if-none-match")) {
        request.headers.set("if-none-match", hit.etag);
      }
      return request;
    },
    async onResponse({ request, response }) {
      if (request.method !== "GET") return response;
      const hit = cache.get(request.url);
      if (response.status === 304 && hit) {
        return new Response(hit.body, { status: 200, headers: hit.headers });
      }
      const etag = response.headers.get("etag");
      if (response.status === 200 && etag) {
        cache.set(request.url, {
          etag,
          body: await response.clone().text(),
          headers: [...response.headers],
        });
      }
      return response;
    },
  };
}
