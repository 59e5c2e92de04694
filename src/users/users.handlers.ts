import type { Context, TypedResponse } from "hono";
import { PROFILE_FIELDS, profileGiven } from "../accounts/fields.ts";
import { type Need, reachOf } from "../auth/permissions.ts";
import type { PasswordHasher } from "../auth/passwords.ts";
import type { Config } from "../config.ts";
import type { Store } from "../db/store.ts";
import { callerWrites } from "../http/caller-write.ts";
import type { Handlers } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import { noneMatch } from "../http/conditional.ts";
import { jsonArrayBody } from "../http/json-array.ts";
import { apiAnswers } from "../http/security-headers.ts";
import {
  DEFAULT_SORT,
  encodeCursor,
  type ListPosition,
  type ListQuery,
  listTag,
  userTag,
  versionsOf,
} from "./listing.ts";
import type { User } from "./user.ts";
import type * as routes from "./users.routes.ts";
import { isRefusal, refuse } from "../refusal.ts";

export interface UserDeps {
  store: Store;
  passwords: PasswordHasher;
  config: Pick<Config, "TRUST_PROXY" | "REQUEST_TIMEOUT_MS">;
}

type Handler<K extends keyof typeof routes> = Handlers<typeof routes>[K];

/**
 * Each handler runs after its route's steps (users.routes.ts), with what
 * they passed on, and does the endpoint's own work: what the store answers
 * that is not a success is an outcome the route answers.
 */
export function createUserHandlers({ store, passwords, config }: UserDeps) {
  const callerWrite = callerWrites(config.TRUST_PROXY);
  const answer = apiAnswers({ trustProxy: config.TRUST_PROXY });

  /**
   * The list's tag comes from the version row before any user is read, so
   * an unchanged poll costs one small query. Without `limit` the answer is
   * streamed in batches, so memory stays flat however many users match.
   */
  const list: Handler<"list"> = async (c, { query }) => {
    const { limit, after, include, sort, ...asked } = query;
    const shape = include ?? "user";
    const reach = reachOf(c.get("caller").access, "users:read");
    const filter = { ...asked, reach };
    const [version, members] = await Promise.all([
      query.status === undefined
        ? store.users.listVersion()
        : store.users.statusListVersion(),
      reach === "all"
        ? undefined
        : store.users.membershipVersion(reach.groupIds),
    ]);
    // A limited list's tag names the reach and its groups' versions: a
    // member joining or leaving, or another reach, is another answer.
    const tag = listTag(
      version,
      reach === "all"
        ? query
        : { ...query, reach: `${reach.groupIds.join(",")}|${members}` },
    );
    if (noneMatch(c.req.header("if-none-match"), tag)) {
      return notModified(c, tag);
    }
    const headers: Record<string, string> = { ETag: tag };
    let body: string | ReadableStream<Uint8Array>;
    if (limit === undefined) {
      body = await jsonArrayBody(
        store.users.listJson(filter, after?.position, undefined, shape, sort),
        (cause) =>
          c.get("log").error("list stream failed after the first byte", {
            requestId: c.get("requestId"),
            cause,
          }),
      );
    } else {
      const page = await store.users.listPage(
        filter,
        after?.position,
        limit,
        shape,
        sort,
      );
      body = `[${page.rows.join(",")}]`;
      if (page.next) headers.Link = nextLink(query, page.next);
    }
    // The body is the contract's array, only written in pieces.
    return answer<User[], 200>(c, body, 200, headers);
  };

  const count: Handler<"count"> = async (c, { query }) =>
    c.json(
      await store.users.countMatching({
        ...query,
        reach: reachOf(c.get("caller").access, "users:read"),
      }),
      200,
    );

  const get: Handler<"get"> = async (c, { id }) => {
    const found = await store.users.get(
      id,
      reachOf(c.get("caller").access, "users:read"),
    );
    if (!found) return refuse("not_found");
    const tag = userTag(found.user.id, found.version, found.expired);
    if (noneMatch(c.req.header("if-none-match"), tag)) {
      return notModified(c, tag);
    }
    return c.json(found.user, 200, { ETag: tag });
  };

  /** Runs once per Idempotency-Key, when the request has one (idempotency.ts). */
  const create: Handler<"create"> = async (c, { body }) => {
    const { password, username, name, email, role } = body;
    const passwordHash = await passwords.hash(password);
    const created = await store.users.create(
      {
        username,
        name,
        email,
        role,
        passwordHash,
        profile: profileGiven(body),
      },
      // Only an admin acting with every permission makes admins.
      callerWrite(c, role === "admin" ? ["users:create", "admin"] : undefined),
    );
    if (isRefusal(created)) return created;
    return c.json(created, 201, { Location: `/api/users/${created.id}` });
  };

  const update: Handler<"update"> = async (c, { body, id, ifMatch }) => {
    const { role, password, name, email } = body;
    const passwordHash = password ? await passwords.hash(password) : undefined;
    const updated = await store.users.update(
      id,
      {
        role: role || undefined,
        passwordHash,
        name: name ?? undefined,
        email: email ?? undefined,
        profile: profileGiven(body),
      },
      callerWrite(c, updateNeeds(body)),
      ifMatch && versionsOf(id, ifMatch),
    );
    if (isRefusal(updated)) return updated;
    // The contract's body: the account, nothing more.
    const { user } = updated;
    return c.json({
      id: user.id,
      username: user.username,
      name: user.name,
      email: user.email,
      role: user.role,
    }, 200);
  };

  const remove: Handler<"remove"> = async (c, { id, ifMatch }) => {
    const outcome = await store.users.remove(
      id,
      callerWrite(c),
      ifMatch && versionsOf(id, ifMatch),
    );
    return outcome === "deleted" ? c.json({ ok: true as const }, 200) : outcome;
  };

  const disable: Handler<"disable"> = async (c, { id, body }) => {
    const { reason, until } = body;
    const outcome = await store.users.disable(id, {
      reason: reason ?? null,
      until: until ? new Date(until).toISOString() : null,
    }, callerWrite(c));
    if (isRefusal(outcome)) return outcome;
    return c.json(outcome.user, 200, {
      ETag: userTag(id, outcome.version, outcome.expired),
    });
  };

  const enable: Handler<"enable"> = async (c, { id }) => {
    const outcome = await store.users.enable(id, callerWrite(c));
    if (isRefusal(outcome)) return outcome;
    return c.json(outcome.user, 200, {
      ETag: userTag(outcome.user.id, outcome.version, outcome.expired),
    });
  };

  const listSessions: Handler<"listSessions"> = async (c, { id }) => {
    const reach = reachOf(c.get("caller").access, "users:sessions");
    if (reach !== "all" && !await store.users.reached(id, reach)) {
      return refuse("not_found");
    }
    const sessions = await store.sessions.list(id, c.get("caller").session);
    return sessions ? c.json(sessions, 200) : refuse("not_found");
  };

  const endSessions: Handler<"endSessions"> = async (c, { id }) => {
    const outcome = await store.sessions.end(id, "all", callerWrite(c));
    if (isRefusal(outcome)) return outcome;
    return c.json({ ok: true as const, ended: outcome.ended }, 200);
  };

  const endSession: Handler<"endSession"> = async (c, { id, sessionId }) => {
    const outcome = await store.sessions.end(id, sessionId, callerWrite(c));
    if (isRefusal(outcome)) return outcome;
    if (outcome.ended === 0) return refuse("session_not_found");
    return c.json({ ok: true as const, ended: outcome.ended }, 200);
  };

  return {
    list,
    count,
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

/**
 * What a change needs, field by field: profile fields `users:update`, a
 * password `users:password`, a role an admin acting with every permission.
 */
function updateNeeds(body: Record<string, unknown>): Need[] {
  const needs: Need[] = [];
  const given = (name: string) =>
    body[name] !== undefined && body[name] !== null && body[name] !== "";
  if (
    given("name") || given("email") ||
    // A profile field's null or "" clears it: a change too.
    PROFILE_FIELDS.some((f) => body[f.wire] !== undefined)
  ) {
    needs.push("users:update");
  }
  if (given("password")) needs.push("users:password");
  if (given("role")) needs.push("admin");
  return needs;
}

/** 304: no body, the current tag repeated (a bodiless answer, as the route declares it). */
const notModified = (c: Context<AppEnv>, tag: string) =>
  c.body(null, 304, { ETag: tag }) as unknown as TypedResponse<
    // deno-lint-ignore ban-types
    {},
    304,
    string
  >;

/** `Link: </api/users?...&after=CURSOR>; rel="next"`, the same query continued. */
function nextLink(query: ListQuery, next: ListPosition) {
  const params = new URLSearchParams();
  for (
    const name of [
      "limit",
      "sort",
      "role",
      "status",
      "q",
      "username",
      "email",
      "include",
    ] as const
  ) {
    const value = query[name];
    // The default order goes unsaid: the answer, tag and link of the list without it.
    if (value !== undefined && !(name === "sort" && value === DEFAULT_SORT)) {
      params.set(name, String(value));
    }
  }
  params.set("after", encodeCursor(next, query.sort));
  return `</api/users?${params}>; rel="next"`;
}
