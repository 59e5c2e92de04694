import type { RouteHandler } from "@hono/zod-openapi";
import type { Context, TypedResponse } from "hono";
import type { PasswordHasher } from "../auth/passwords.ts";
import type { Config } from "../config.ts";
import type { Store } from "../db/store.ts";
import { isRefusal } from "../db/write.ts";
import { callerWrites, refused } from "../http/caller-write.ts";
import type { AppEnv } from "../http/env.ts";
import { ifMatchTags, noneMatch } from "../http/conditional.ts";
import { readJsonValue } from "../http/body.ts";
import { parseStorable } from "../http/validation.ts";
import { errorResponse } from "../http/errors.ts";
import { idempotent } from "../http/idempotency.ts";
import { jsonArrayBody } from "../http/json-array.ts";
import { MSG } from "../http/messages.ts";
import {
  encodeCursor,
  type ListPosition,
  type ListQuery,
  listTag,
  userTag,
  versionsOf,
} from "./listing.ts";
import type { User } from "./user.ts";
import { DisableUserSchema } from "./users.routes.ts";
import type * as routes from "./users.routes.ts";

export interface UserDeps {
  store: Store;
  passwords: PasswordHasher;
  config: Pick<Config, "TRUST_PROXY" | "REQUEST_TIMEOUT_MS">;
}

/**
 * The handlers run after the admin guard and the body's validation, so each
 * reads as the rest of the contract's list of checks, in order.
 */
export function createUserHandlers({ store, passwords, config }: UserDeps) {
  // A run of an Idempotency-Key counts as crashed once its deadline passed:
  // past it, it can no longer write.
  const runningMs = config.REQUEST_TIMEOUT_MS;
  const callerWrite = callerWrites(config.TRUST_PROXY);

  /**
   * The list's tag comes from the version row before any user is read, so
   * an unchanged poll costs one small query. Without `limit` the answer is
   * streamed in batches, so memory stays flat however many users match.
   */
  const list: RouteHandler<typeof routes.list, AppEnv> = async (c) => {
    const query = c.req.valid("query");
    const { limit, after, ...filter } = query;
    const version = query.status === undefined
      ? await store.users.listVersion()
      : await store.users.statusListVersion();
    const tag = listTag(version, query);
    if (noneMatch(c.req.header("if-none-match"), tag)) {
      return notModified(c, tag);
    }
    const headers: Record<string, string> = {
      "Content-Type": "application/json",
      ETag: tag,
    };
    let body: string | ReadableStream<Uint8Array>;
    if (limit === undefined) {
      body = await jsonArrayBody(
        store.users.listJson(filter, after),
        (cause) =>
          c.get("log").error("list stream failed after the first byte", {
            requestId: c.get("requestId"),
            cause,
          }),
      );
    } else {
      const page = await store.users.listPage(filter, after, limit);
      body = `[${page.rows.join(",")}]`;
      if (page.next) headers.Link = nextLink(query, page.next);
    }
    // The body is the contract's array, only written in pieces.
    return c.body(body, 200, headers) as unknown as TypedResponse<
      User[],
      200,
      "json"
    >;
  };

  const get: RouteHandler<typeof routes.get, AppEnv> = async (c) => {
    const { id } = c.req.valid("param");
    const found = id === null ? undefined : await store.users.get(id);
    if (!found) return c.json({ error: MSG.userNotFound }, 404);
    const tag = userTag(found.user.id, found.version, found.expired);
    if (noneMatch(c.req.header("if-none-match"), tag)) {
      return notModified(c, tag);
    }
    return c.json(found.user, 200, { ETag: tag });
  };

  /** Runs once per Idempotency-Key, when the request has one (idempotency.ts). */
  const create: RouteHandler<typeof routes.create, AppEnv> = (c) => {
    const { password, ...fields } = c.req.valid("json");
    // The password stays out of the fingerprint: the database never holds
    // a fast hash of it.
    return idempotent(c, { store, runningMs }, fields, async () => {
      const passwordHash = await passwords.hash(password);
      const created = await store.users.create(
        { ...fields, passwordHash },
        callerWrite(c),
      );
      if (isRefusal(created)) return refused(c, created);
      if (created === "duplicate") {
        return c.json({ error: MSG.duplicateUser }, 409);
      }
      return c.json(created, 201, { Location: `/api/users/${created.id}` });
    });
  };

  const update: RouteHandler<typeof routes.update, AppEnv> = async (c) => {
    const { role, password } = c.req.valid("json");
    const { id } = c.req.valid("param");
    if (id === null) return c.json({ error: MSG.userNotFound }, 404);
    const passwordHash = password ? await passwords.hash(password) : undefined;
    const updated = await store.users.update(
      id,
      { role: role || undefined, passwordHash },
      callerWrite(c),
      expectedVersions(c, id),
    );
    if (isRefusal(updated)) return refused(c, updated);
    if (updated === "not_found") {
      return c.json({ error: MSG.userNotFound }, 404);
    }
    if (updated === "precondition_failed") {
      return c.json({ error: MSG.preconditionFailed }, 412);
    }
    return c.json(updated, 200);
  };

  const remove: RouteHandler<typeof routes.remove, AppEnv> = async (c) => {
    const { id } = c.req.valid("param");
    if (id === c.get("caller").account.id) {
      return c.json({ error: MSG.cannotDeleteSelf }, 400);
    }
    const outcome = id === null
      ? "not_found"
      : await store.users.remove(id, callerWrite(c), expectedVersions(c, id));
    if (isRefusal(outcome)) return refused(c, outcome);
    if (outcome === "not_found") {
      return c.json({ error: MSG.userNotFound }, 404);
    }
    if (outcome === "precondition_failed") {
      return c.json({ error: MSG.preconditionFailed }, 412);
    }
    return c.json({ ok: true as const }, 200);
  };

  /**
   * Self first (before any lookup, as for DELETE), then the id, then the
   * body, which the handler reads itself so that it is judged after the
   * lookup (the route's `handlerBody`).
   */
  const disable: RouteHandler<typeof routes.disable, AppEnv> = async (c) => {
    const { id } = c.req.valid("param");
    if (id === c.get("caller").account.id) {
      return c.json({ error: MSG.cannotDisableSelf }, 400);
    }
    if (id === null || !await store.users.get(id)) {
      return c.json({ error: MSG.userNotFound }, 404);
    }
    const body = await readJsonValue(c.req.raw);
    if (body === "too_large") {
      return errorResponse(c, 413, MSG.bodyTooLarge) as never;
    }
    const parsed = body === "not_json"
      ? undefined
      : await parseStorable(DisableUserSchema, body.value ?? {});
    if (!parsed?.success) return c.json({ error: MSG.invalidBody }, 400);
    const { reason, until } = parsed.data;
    const outcome = await store.users.disable(id, {
      reason: reason ?? null,
      until: until ? new Date(until).toISOString() : null,
    }, callerWrite(c));
    if (isRefusal(outcome)) return refused(c, outcome);
    if (outcome === "not_found") {
      return c.json({ error: MSG.userNotFound }, 404);
    }
    return c.json(outcome.user, 200, {
      ETag: userTag(id, outcome.version, outcome.expired),
    });
  };

  const enable: RouteHandler<typeof routes.enable, AppEnv> = async (c) => {
    const { id } = c.req.valid("param");
    const outcome = id === null
      ? "not_found"
      : await store.users.enable(id, callerWrite(c));
    if (isRefusal(outcome)) return refused(c, outcome);
    if (outcome === "not_found") {
      return c.json({ error: MSG.userNotFound }, 404);
    }
    return c.json(outcome.user, 200, {
      ETag: userTag(outcome.user.id, outcome.version, outcome.expired),
    });
  };

  const listSessions: RouteHandler<typeof routes.listSessions, AppEnv> = async (
    c,
  ) => {
    const { id } = c.req.valid("param");
    const sessions = id === null
      ? undefined
      : await store.sessions.list(id, c.get("caller").session);
    if (!sessions) return c.json({ error: MSG.userNotFound }, 404);
    return c.json(sessions, 200);
  };

  const endSessions: RouteHandler<typeof routes.endSessions, AppEnv> = async (
    c,
  ) => {
    const { id } = c.req.valid("param");
    const outcome = id === null
      ? "user_not_found"
      : await store.sessions.end(id, "all", callerWrite(c));
    if (isRefusal(outcome)) return refused(c, outcome);
    if (outcome === "user_not_found") {
      return c.json({ error: MSG.userNotFound }, 404);
    }
    return c.json({ ok: true as const, ended: outcome }, 200);
  };

  const endSession: RouteHandler<typeof routes.endSession, AppEnv> = async (
    c,
  ) => {
    const { id, sessionId } = c.req.valid("param");
    const outcome = id === null
      ? "user_not_found"
      : await store.sessions.end(id, sessionId, callerWrite(c));
    if (isRefusal(outcome)) return refused(c, outcome);
    if (outcome === "user_not_found") {
      return c.json({ error: MSG.userNotFound }, 404);
    }
    if (outcome === 0) return c.json({ error: MSG.sessionNotFound }, 404);
    return c.json({ ok: true as const, ended: outcome }, 200);
  };

  return {
    list,
    get,
    create,
    update,
    remove,
    disable,
    enable,
    listSessions,
    endSessions,
    endSession,
  };
}

/** 304: no body, the current tag repeated (a bodiless answer, as the route declares it). */
const notModified = (c: Context<AppEnv>, tag: string) =>
  c.body(null, 304, { ETag: tag }) as unknown as TypedResponse<
    // deno-lint-ignore ban-types
    {},
    304,
    string
  >;

/**
 * The versions of the user that If-Match allows, checked by the write
 * itself; undefined when the header is absent or `*` (then only the user's
 * existence counts, which 404 already answers).
 */
function expectedVersions(c: Context<AppEnv>, id: number) {
  const tags = ifMatchTags(c.req.header("if-match"));
  return tags && versionsOf(id, tags);
}

/** `Link: </api/users?...&after=CURSOR>; rel="next"`, the same query continued. */
function nextLink(query: ListQuery, next: ListPosition) {
  const params = new URLSearchParams();
  for (
    const name of ["limit", "role", "status", "q", "username", "email"] as const
  ) {
    const value = query[name];
    if (value !== undefined) params.set(name, String(value));
  }
  params.set("after", encodeCursor(next));
  return `</api/users?${params}>; rel="next"`;
}
