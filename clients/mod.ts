/**
 * Typed client of the user administration service: openapi-fetch over the
 * types that openapi-typescript generates from openapi/openapi.yaml.
 *
 * Two ways to call, one client:
 * - `get`/`post`/`put`/`patch`/`delete` answer a {@link Outcome}: `{ ok: true,
 *   status, data }`, or `{ ok: false, status, error }` where `error` is the
 *   contract's message for that operation and status, as a literal type.
 * - `GET`/`POST`/`PUT`/`PATCH`/`DELETE` are openapi-fetch's own
 *   (`{ data, error, response }`), for headers and anything else raw.
 *
 * On a server, fetch has no cookie jar: the client keeps the session cookie
 * that `login` receives in memory and sends it with every call after.
 * In a browser, the browser's own cookie handling applies. A service passes
 * `apiKey` instead and never logs in.
 *
 * A user with a second factor logs in in one call, `login(username,
 * password, code)` (a TOTP or recovery code), or in two: `login(username,
 * password)` answers 401 `Second factor required` and the client keeps the
 * pending-login cookie, then `secondFactor({ code })` (or `{ passkey }`,
 * the assertion for `secondFactorOptions()`) finishes it. `stepUp({ code })`
 * renews the session's second factor before the actions that need a
 * recent one.
 *
 * Creating a user safely under retries: `createUserWithRetry` (one
 * Idempotency-Key for every attempt), or `post("/api/users", { body,
 * params: { header: { "idempotency-key": key } } })` by hand.
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
/** An API key as listed (never the key itself). */
export type ApiKey = components["schemas"]["ApiKey"];
/** A new API key: the listed fields and `key`, shown this once. */
export type NewApiKey = components["schemas"]["NewApiKey"];
/** The body of `PATCH /api/users/{id}`. */
export type UpdateUser = components["schemas"]["UpdateUser"];
/** One user as `GET /api/users/{id}` answers: a User with `disabled` and `lastLoginAt`. */
export type UserDetail = components["schemas"]["UserDetail"];
/** A list item: a User, and with `include=state` its `disabled`, `lastLoginAt`, `mfaEnabled` and `source`. */
export type UserListItem = components["schemas"]["UserListItem"];
/** `GET /api/users/count`: `{count, exact}` (exact up to 10,000, else an estimate). */
export type UserCount = components["schemas"]["UserCount"];
/** The body of `POST /api/users/{id}/disable`: `{reason?, until?}`. */
export type DisableUser = components["schemas"]["DisableUser"];
/** One of a user's live sessions (`GET /api/users/{id}/sessions`). */
export type Session = components["schemas"]["Session"];
/** A second factor as the login's second step and step-up take it: `{code}` or `{passkey}`. */
export type SecondFactor = components["schemas"]["SecondFactor"];
/** A user's second factors as listed (never a secret). */
export type MfaSummary = components["schemas"]["MfaSummary"];
/** `"admin"` or `"viewer"`. */
export type Role = User["role"];
/** The list's query parameters (`limit`, `after`, `role`, `q`, `username`, `email`). */
export type ListQuery = NonNullable<
  operations["listUsers"]["parameters"]["query"]
>;

/** The HTTP methods the lowercase calls cover. */
export type Method = "get" | "post" | "put" | "patch" | "delete";

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
   * An API key (`uak_...`, from `POST /api/users/{id}/keys`): sent as
   * `Authorization: Bearer <key>` with every call, so no login is needed.
   * The key acts as its owner with the owner's current role; while it is
   * set, the server looks at nothing else (not a session cookie).
   */
  apiKey?: string;
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
  put: OutcomeMethod<"put">;
  patch: OutcomeMethod<"patch">;
  delete: OutcomeMethod<"delete">;
  /**
   * Logs in; on success the client keeps the session cookie. For a user
   * with a second factor: with `code` (a TOTP or recovery code) in this
   * one call; without it the answer is 401 `Second factor required` and
   * the client keeps the pending-login cookie for {@link secondFactor}.
   */
  login(
    username: string,
    password: string,
    code?: string,
  ): Promise<Outcome<Operation<"/api/auth/login", "post">>>;
  /**
   * The login's second step, after `login` answered 401 `Second factor
   * required`: a TOTP or recovery code, or a passkey's assertion (for the
   * options of {@link secondFactorOptions}). On success the client keeps
   * the session cookie, as `login` does.
   */
  secondFactor(
    factor: SecondFactor,
  ): Promise<Outcome<Operation<"/api/auth/login/second-factor", "post">>>;
  /** WebAuthn request options for the pending login's passkeys. */
  secondFactorOptions(): Promise<
    Outcome<Operation<"/api/auth/login/second-factor/options", "post">>
  >;
  /** Renews the session's second factor (before minting a key, deleting a user...). */
  stepUp(
    factor: SecondFactor,
  ): Promise<Outcome<Operation<"/api/auth/step-up", "post">>>;
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
/** The pending-login cookie, sent under /api/auth only, as the service sets it. */
const PENDING_COOKIE = "mfa";

/** A client of the service at `options.baseUrl`, with a cookie jar of its own. */
export function createUserAdminClient(
  options: UserAdminClientOptions,
): UserAdminClient {
  let session: string | undefined;
  let pending: string | undefined;
  const api = createClient<paths>({
    baseUrl: options.baseUrl,
    fetch: options.fetch,
    headers: options.apiKey === undefined
      ? options.headers
      : { ...options.headers, authorization: `Bearer ${options.apiKey}` },
  });

  const cookieJar: Middleware = {
    onRequest({ request }) {
      if (request.headers.has("cookie")) return request;
      const pairs = [];
      if (session !== undefined) pairs.push(`${SESSION_COOKIE}=${session}`);
      if (
        pending !== undefined &&
        new URL(request.url).pathname.startsWith("/api/auth/")
      ) {
        pairs.push(`${PENDING_COOKIE}=${pending}`);
      }
      if (pairs.length) request.headers.set("cookie", pairs.join("; "));
      return request;
    },
    onResponse({ response }) {
      for (const line of response.headers.getSetCookie()) {
        const [pair, ...attributes] = line.split(";");
        const eq = pair.indexOf("=");
        const name = pair.slice(0, eq).trim();
        if (name !== SESSION_COOKIE && name !== PENDING_COOKIE) continue;
        const value = pair.slice(eq + 1).trim();
        const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a));
        const kept = expired || value === "" ? undefined : value;
        if (name === SESSION_COOKIE) session = kept;
        else pending = kept;
      }
      return response;
    },
  };
  api.use(cookieJar);
  if (options.etagCache) api.use(etagCache());

  // One runtime path for all five; the types above say what each answers.
  const call =
    (method: Method) => async (path: string, init?: Record<string, unknown>) =>
      // deno-lint-ignore no-explicit-any
      result(await (api.request as any)(method, path, init));
  const typed = {
    get: call("get") as OutcomeMethod<"get">,
    post: call("post") as OutcomeMethod<"post">,
    put: call("put") as OutcomeMethod<"put">,
    patch: call("patch") as OutcomeMethod<"patch">,
    delete: call("delete") as OutcomeMethod<"delete">,
  };

  const client = Object.assign(api, typed, {
    login: (username: string, password: string, code?: string) =>
      typed.post("/api/auth/login", {
        body: code === undefined
          ? { username, password }
          : { username, password, code },
      }),
    secondFactor: (factor: SecondFactor) =>
      typed.post("/api/auth/login/second-factor", { body: factor }),
    secondFactorOptions: () =>
      typed.post("/api/auth/login/second-factor/options"),
    stepUp: (factor: SecondFactor) =>
      typed.post("/api/auth/step-up", { body: factor }),
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

// --- The audit trail as a live feed ---------------------------------------

/** What `auditStream` takes. */
export interface AuditStreamOptions {
  /** A client holding an admin's session (after `login`). */
  client: UserAdminClient;
  /**
   * Only records after this id (0: from the first record kept); without it,
   * only records sealed from now on.
   */
  after?: number;
  /** Only records of these actions. */
  actions?: AuditAction[];
  /** Stops the iteration (it then ends without an error). */
  signal?: AbortSignal;
  /**
   * Milliseconds before reconnecting after a dropped connection; the
   * server's `retry:` replaces it. 1000 by default.
   */
  retryMs?: number;
}

/** The feed refused the connection (401, 403, 400, 410 or 500). */
export class AuditStreamError extends Error {
  constructor(readonly status: number, readonly error: string) {
    super(`GET /api/audit/stream answered ${status}: ${error}`);
    this.name = "AuditStreamError";
  }
}

/**
 * Every audit record as it is sealed, oldest first, from the live feed
 * (`GET /api/audit/stream`, Server-Sent Events). When the connection drops
 * (a restart, a proxy, a reader too slow), it reconnects with the last id it
 * yielded (`Last-Event-ID`): no record is missed or repeated. It throws
 * {@link AuditStreamError} when the service refuses (the session ended:
 * 401; no longer an admin: 403; history removed: 410), and ends when
 * `signal` aborts.
 *
 * ```ts
 * const stop = new AbortController();
 * for await (const r of auditStream({ client: api, after: 0, signal: stop.signal })) {
 *   console.log(r.id, r.action, r.target?.username);
 * }
 * ```
 */
export async function* auditStream(
  options: AuditStreamOptions,
): AsyncGenerator<AuditRecord, void, undefined> {
  const { client, actions, signal } = options;
  let lastId = options.after;
  let retryMs = options.retryMs ?? 1000;
  while (!signal?.aborted) {
    let body: ReadableStream<Uint8Array> | undefined;
    try {
      const answer = await client.GET("/api/audit/stream", {
        params: {
          query: {
            ...(lastId === undefined ? {} : { after: lastId }),
            ...(actions?.length ? { action: actions } : {}),
          },
        },
        parseAs: "stream",
        signal,
      });
      if (!answer.response.ok) {
        const error = answer.error as { error?: string } | string | undefined;
        const message = typeof error === "object" ? error?.error : error;
        if (answer.response.status < 500) {
          throw new AuditStreamError(answer.response.status, message ?? "");
        }
      } else {
        body = answer.data as unknown as ReadableStream<Uint8Array>;
      }
    } catch (e) {
      if (e instanceof AuditStreamError) throw e;
      if (signal?.aborted) return;
      // A failed connection: tried again below.
    }
    if (body) {
      try {
        for await (const event of serverSentEvents(body)) {
          if (event.retry !== undefined) retryMs = event.retry;
          if (event.data === undefined) {
            // The stream's starting position, before any record.
            if (event.id && /^[0-9]+$/.test(event.id)) {
              lastId = Number(event.id);
            }
            continue;
          }
          const record = JSON.parse(event.data) as AuditRecord;
          lastId = record.id;
          yield record;
        }
      } catch {
        // Dropped mid-stream: resumed below from the last record yielded.
      }
      if (signal?.aborted) return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, retryMs);
      function done() {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        resolve();
      }
      signal?.addEventListener("abort", done);
    });
  }
}

/** One dispatched Server-Sent Event: its fields, or a `retry:` alone. */
interface ServerSentEvent {
  id?: string;
  event?: string;
  data?: string;
  retry?: number;
}

/**
 * The events of a text/event-stream body (the WHATWG HTML parsing rules,
 * for what this service sends): fields up to a blank line, comments
 * skipped. An event cut off by the end of the body is not dispatched.
 */
async function* serverSentEvents(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<ServerSentEvent> {
  const decoder = new TextDecoder();
  let buffer = "";
  let event: ServerSentEvent = {};
  let data: string[] = [];
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffer.search(/\r\n|\r|\n/)) >= 0) {
        // A lone \r at the end of the buffer may be the first half of \r\n.
        if (buffer[end] === "\r" && end === buffer.length - 1) break;
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + (buffer.startsWith("\r\n", end) ? 2 : 1));
        if (line === "") {
          if (data.length > 0) event.data = data.join("\n");
          if (
            event.data !== undefined || event.retry !== undefined ||
            event.id !== undefined
          ) {
            yield event;
          }
          event = {};
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "data") data.push(value);
        else if (field === "id") event.id = value;
        else if (field === "event") event.event = value;
        else if (field === "retry" && /^[0-9]+$/.test(value)) {
          event.retry = Number(value);
        }
      }
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => {});
  }
}

// --- Creating a user, safe to retry ---------------------------------------

/** How `createUserWithRetry` retries. */
export interface RetryOptions {
  /** Attempts in all, the first included (default 4). */
  attempts?: number;
  /** The wait before the first retry, doubled before each next (default 200 ms). */
  delayMs?: number;
  /** The Idempotency-Key of every attempt (default: a new random UUID). */
  idempotencyKey?: string;
}

/** The answer of `POST /api/users`. */
export type CreateUserOutcome = Outcome<Operation<"/api/users", "post">>;

/** The 409 of a request whose Idempotency-Key is still running elsewhere. */
const IN_PROGRESS = "Request with this Idempotency-Key is in progress";

/**
 * Creates a user, retrying what may be retried without creating a second
 * one: every attempt sends the same `Idempotency-Key` (one UUID per call),
 * so the service runs the request at most once and answers a retry of a
 * finished one with the kept answer (`Idempotent-Replayed: true`).
 * Retries, after a growing wait with jitter, a network error (the request
 * may or may not have arrived), a 500 (never applied) and a 409 for a key
 * still in progress; any other answer is returned as it is. Throws the last
 * network error when every attempt failed on the network.
 *
 * ```ts
 * const created = await createUserWithRetry(api, body, { attempts: 5 });
 * if (created.ok) console.log(created.data.id);
 * ```
 */
export async function createUserWithRetry(
  client: UserAdminClient,
  body: CreateUser,
  options: RetryOptions = {},
): Promise<CreateUserOutcome> {
  const attempts = Math.max(1, options.attempts ?? 4);
  const delayMs = options.delayMs ?? 200;
  const key = options.idempotencyKey ?? crypto.randomUUID();
  for (let attempt = 1;; attempt++) {
    let outcome: CreateUserOutcome | undefined;
    try {
      outcome = await client.post("/api/users", {
        body,
        params: { header: { "idempotency-key": key } },
      });
    } catch (e) {
      // An answer outside the contract is an answer: not retried.
      if (e instanceof UnexpectedResponseError || attempt >= attempts) throw e;
    }
    const retry = outcome === undefined || outcome.status === 500 ||
      (outcome.status === 409 && !outcome.ok &&
        outcome.error === IN_PROGRESS);
    if (!retry || attempt >= attempts) return outcome!;
    const wait = delayMs * 2 ** (attempt - 1);
    await new Promise((r) => setTimeout(r, wait / 2 + Math.random() * wait));
  }
}

// --- Webhooks --------------------------------------------------------------

/** A registered endpoint, as every webhook call but creation answers it. */
export type Webhook = components["schemas"]["Webhook"];
/** The answer of creation: the endpoint and its `secret`, shown this once. */
export type CreatedWebhook = components["schemas"]["CreatedWebhook"];
/** The body of `POST /api/webhooks`. */
export type CreateWebhook = components["schemas"]["CreateWebhook"];
/** One delivery attempt, as `GET /api/webhooks/{id}/deliveries` lists it. */
export type DeliveryAttempt = components["schemas"]["DeliveryAttempt"];
/** The JSON body of every delivery: `{type, timestamp, data}`. */
export type WebhookMessage = components["schemas"]["WebhookMessage"];

/** What {@link webhooks} answers: one call per webhook operation. */
export interface WebhookCalls {
  create(
    body: CreateWebhook,
  ): Promise<Outcome<Operation<"/api/webhooks", "post">>>;
  list(): Promise<Outcome<Operation<"/api/webhooks", "get">>>;
  get(id: number): Promise<Outcome<Operation<"/api/webhooks/{id}", "get">>>;
  delete(
    id: number,
  ): Promise<Outcome<Operation<"/api/webhooks/{id}", "delete">>>;
  deliveries(
    id: number,
    limit?: number,
  ): Promise<Outcome<Operation<"/api/webhooks/{id}/deliveries", "get">>>;
  enable(
    id: number,
  ): Promise<Outcome<Operation<"/api/webhooks/{id}/enable", "post">>>;
}

/**
 * The webhook calls of a client, typed: thin wrappers over its lowercase
 * calls, each answering an {@link Outcome} with the contract's messages
 * (`400 Invalid webhook`, `404 Webhook not found`, ...).
 *
 * ```ts
 * const hooks = webhooks(api);
 * const created = await hooks.create({ url: "https://hooks.example.com/x" });
 * if (created.ok) saveSecret(created.data.secret); // shown this once
 * ```
 */
export function webhooks(client: UserAdminClient): WebhookCalls {
  const id = (id: number) => ({ params: { path: { id } } });
  return {
    create: (body: CreateWebhook) => client.post("/api/webhooks", { body }),
    list: () => client.get("/api/webhooks"),
    get: (webhookId: number) => client.get("/api/webhooks/{id}", id(webhookId)),
    delete: (webhookId: number) =>
      client.delete("/api/webhooks/{id}", id(webhookId)),
    deliveries: (webhookId: number, limit?: number) =>
      client.get("/api/webhooks/{id}/deliveries", {
        params: { path: { id: webhookId }, query: { limit } },
      }),
    enable: (webhookId: number) =>
      client.post("/api/webhooks/{id}/enable", id(webhookId)),
  };
}
