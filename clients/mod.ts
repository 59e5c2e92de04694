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
/** `"admin"` or `"viewer"`. */
export type Role = User["role"];

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
    [S in keyof R & number]: `${S}` extends `2${string}`
      ? { ok: true; status: S; data: JsonBody<R[S]> }
      : JsonBody<R[S]> extends { error: infer E } ? {
          ok: false;
          status: S;
          error: E;
        }
      // A failure whose body is not an error, like /health's 503.
      : { ok: false; status: S; data: JsonBody<R[S]> };
  }[keyof R & number]
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
}

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
  });
  // Defined, not assigned: Object.assign would copy a getter's value once.
  return Object.defineProperty(client, "hasSession", {
    get: () => session !== undefined,
  }) as UserAdminClient;
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

/** The target of an RFC 8288 `Link` header's `rel="next"`, if any. */
function nextLink(link: string | null): string | undefined {
  for (const part of link?.split(",") ?? []) {
    const match = /^\s*<([^>]*)>\s*;\s*rel="?next"?\s*$/i.exec(part);
    if (match) return match[1];
  }
  return undefined;
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
    params = next === undefined ? undefined : Object.fromEntries(
      new URL(next, "http://service.invalid").searchParams,
    );
  }
}
