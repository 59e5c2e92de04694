/**
 * Typed client of the user administration service: openapi-fetch over the
 * types that openapi-typescript generates from openapi/openapi.yaml.
 *
 * On a server, fetch has no cookie jar: the client keeps the session cookie
 * that `login` receives in memory and sends it with every call after.
 * In a browser, the browser's own cookie handling applies.
 */
import createClient, { type Client, type Middleware } from "openapi-fetch";
import type { components, paths } from "./schema.d.ts";

export type { components, paths };
export type User = components["schemas"]["User"];
export type Account = components["schemas"]["Account"];
export type CreateUser = components["schemas"]["CreateUser"];
export type UpdateUser = components["schemas"]["UpdateUser"];
export type Role = User["role"];

/** A call's outcome: the data of a 2xx, or the status and contract message of anything else. */
export type Result<T, Message extends string = string> =
  | { ok: true; status: number; data: T }
  | { ok: false; status: number; error: Message };

/** Turns an openapi-fetch answer into a Result, keeping the message types. */
export function result<T, E extends { error: string }>(
  answer: { data?: T; error?: E; response: Response },
): Result<T, E["error"]> {
  const { status } = answer.response;
  if (answer.response.ok) return { ok: true, status, data: answer.data as T };
  return {
    ok: false,
    status,
    error: answer.error?.error ?? `HTTP ${status}` as E["error"],
  };
}

export interface UserAdminClientOptions {
  /** Where the service is, e.g. `http://127.0.0.1:8000`. */
  baseUrl: string;
  /** A fetch of your own (tests, proxies, instrumentation). */
  fetch?: (request: Request) => Promise<Response>;
  headers?: Record<string, string>;
}

export type UserAdminClient = Client<paths> & {
  login(
    username: string,
    password: string,
  ): Promise<
    Result<
      Account,
      ErrorMessage<"/api/auth/login", "post">
    >
  >;
  logout(): Promise<
    Result<{ ok: true }, ErrorMessage<"/api/auth/logout", "post">>
  >;
  me(): Promise<Result<Account, ErrorMessage<"/api/auth/me", "get">>>;
  /** Whether the client holds a session cookie. */
  readonly hasSession: boolean;
};

/** The error messages an operation can answer, from the contract. */
export type ErrorMessage<
  P extends keyof paths,
  M extends "get" | "post" | "patch" | "delete",
> = paths[P][M] extends { responses: infer R } ? {
    [S in keyof R]: S extends 200 | 201 ? never
      : R[S] extends { content: { "application/json": { error: infer E } } } ? E
      : never;
  }[keyof R]
  : never;

const SESSION_COOKIE = "sid";

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

  return Object.assign(api, {
    async login(username: string, password: string) {
      return result(
        await api.POST("/api/auth/login", { body: { username, password } }),
      );
    },
    async logout() {
      const answer = result(await api.POST("/api/auth/logout"));
      session = undefined;
      return answer;
    },
    async me() {
      return result(await api.GET("/api/auth/me"));
    },
    get hasSession() {
      return session !== undefined;
    },
  });
}
