import { NO_PASSWORD } from "../accounts/fields.ts";
import type { Context } from "hono";
import { auditContext } from "../http/audit-context.ts";
import type { PasswordHasher } from "../auth/passwords.ts";
import type { Config } from "../config.ts";
import { type Connection, isScimRefusal, type ScimWrite } from "../db/scim.ts";
import type { Store } from "../db/store.ts";
import type { Handlers } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import { versionsOf } from "../users/listing.ts";
import { scimBase, sendScim, showsMembers } from "./answers.ts";
import { applyPatch } from "./patch.ts";
import {
  groupFromBody,
  groupResource,
  groupVersion,
  project,
  userFromBody,
  userResource,
  userVersion,
} from "./resources.ts";
import { GROUP_ATTRIBUTES, USER_ATTRIBUTES } from "./schema.ts";
import type * as routes from "./scim.routes.ts";
import { isRefusal, type Refusal, refuse } from "../refusal.ts";

export interface ScimDeps {
  store: Store;
  passwords: PasswordHasher;
  config: Pick<Config, "TRUST_PROXY" | "BCRYPT_COST">;
}

type Handler<K extends keyof typeof routes> = Handlers<typeof routes>[K];

/** The refusals only a PATCH's paths can make. */
const PATH_REASONS = [
  "invalidPath",
  "invalidFilter",
  "noTarget",
  "mutability",
] as const;
type PathRefusal = Refusal<typeof PATH_REASONS[number]>;
const isPathRefusal = (x: unknown): x is PathRefusal =>
  isRefusal(x) && (PATH_REASONS as readonly string[]).includes(x.reason);

/** The handlers run after their routes' steps (scim.routes.ts). */
export function createScimHandlers({ store, passwords, config }: ScimDeps) {
  const base = (c: Context<AppEnv>) => scimBase(c, config.TRUST_PROXY);
  const writeOf = (c: Context<AppEnv>, connection: Connection): ScimWrite => ({
    connection,
    context: auditContext(c, config.TRUST_PROXY, "scim"),
    writeBy: c.get("writeBy"),
  });
  const send = sendScim;
  /**
   * A body's refusal (a POST or PUT): a body has no paths, so only a bad
   * value, bad syntax or a taken value arise; a path's kind would be
   * answered as a bad value, with its words.
   */
  const bodyRefused = <T>(
    answer: T,
  ): Exclude<T, PathRefusal> | Refusal<"invalidValue"> =>
    isPathRefusal(answer)
      ? refuse("invalidValue", answer.detail)
      : answer as Exclude<T, PathRefusal>;
  /** The versions If-Match names (weakly compared), or undefined: no precondition. */
  const userVersions = (id: number, tags: string[] | undefined) =>
    tags && versionsOf(id, tags.map((t) => t));
  const groupVersions = (id: number, tags: string[] | undefined) =>
    tags?.flatMap((t) => {
      const m = /^"g(\d+)\.(\d+)"$/.exec(t);
      return m && Number(m[1]) === id ? [m[2]] : [];
    });

  const getUser: Handler<"getUser"> = async (
    c,
    { connection, id, projection },
  ) => {
    const row = await store.scim.users.get(connection.id, id);
    if (!row) return refuse("not_found");
    return send(
      c,
      200,
      project(
        userResource(row, base(c)),
        projection.attributes,
        projection.excluded,
      ),
      { ETag: userVersion(row) },
    );
  };

  const createUser: Handler<"createUser"> = async (
    c,
    { connection, body, projection },
  ) => {
    const read = userFromBody(body);
    if (isRefusal(read)) return bodyRefused(read);
    const passwordHash = read.password === undefined
      ? NO_PASSWORD
      : await passwords.hash(read.password);
    const row = await store.scim.users.create(
      { ...read.state, passwordHash },
      writeOf(c, connection),
    );
    if (isRefusal(row)) return bodyRefused(row);
    const resource = userResource(row, base(c));
    return send(
      c,
      201,
      project(resource, projection.attributes, projection.excluded),
      {
        ETag: userVersion(row),
        Location: (resource.meta as { location: string }).location,
      },
    );
  };

  /** A write of the user by `make` (a PUT's body, a PATCH's result), answered as the route says. */
  const writeUser = async (
    c: Context<AppEnv>,
    connection: Connection,
    id: number,
    ifMatch: string[] | undefined,
    projection: { attributes?: string[]; excluded?: string[] },
    make: (current: Parameters<typeof userResource>[0]) => unknown,
  ) => {
    const at = base(c);
    const outcome = await store.scim.users.write(
      id,
      userVersions(id, ifMatch),
      async (cur) => {
        const next = make(cur);
        if (isScimRefusal(next)) return next;
        const read = userFromBody(next, cur);
        if (isRefusal(read)) return read;
        return read.password === undefined ? read.state : {
          ...read.state,
          passwordHash: await passwords.hash(read.password),
        };
      },
      writeOf(c, connection),
    );
    if (isRefusal(outcome)) return outcome;
    return send(
      c,
      200,
      project(
        userResource(outcome, at),
        projection.attributes,
        projection.excluded,
      ),
      { ETag: userVersion(outcome) },
    );
  };

  const replaceUser: Handler<"replaceUser"> = (
    c,
    { connection, id, body, ifMatch, projection },
  ) =>
    writeUser(c, connection, id, ifMatch, projection, () => body).then(
      bodyRefused,
    );

  const patchUser: Handler<"patchUser"> = (
    c,
    { connection, id, body, ifMatch, projection },
  ) =>
    writeUser(
      c,
      connection,
      id,
      ifMatch,
      projection,
      (cur) =>
        applyPatch(
          userResource(cur, base(c)),
          operations(body),
          USER_ATTRIBUTES,
        ),
    );

  const deleteUser: Handler<"deleteUser"> = async (
    c,
    { connection, id, ifMatch },
  ) => {
    const outcome = await store.scim.users.remove(
      id,
      userVersions(id, ifMatch),
      writeOf(c, connection),
    );
    return outcome === "deleted" ? c.body(null, 204) as never : outcome;
  };

  const sendGroup = async (
    c: Context<AppEnv>,
    connection: Connection,
    id: number,
    status: 200 | 201,
    projection: { attributes?: string[]; excluded?: string[] },
  ) => {
    const row = await store.scim.groups.get(
      connection.id,
      id,
      showsMembers(projection),
    );
    if (!row) return refuse("not_found");
    const resource = groupResource(row, base(c));
    return send(
      c,
      status,
      project(resource, projection.attributes, projection.excluded),
      {
        ETag: groupVersion(row),
        ...status === 201 &&
          { Location: (resource.meta as { location: string }).location },
      },
    );
  };

  const getGroup: Handler<"getGroup"> = (c, { connection, id, projection }) =>
    sendGroup(c, connection, id, 200, projection);

  const createGroup: Handler<"createGroup"> = async (
    c,
    { connection, body, projection },
  ) => {
    const read = groupFromBody(body);
    if (isRefusal(read)) return bodyRefused(read);
    const row = await store.scim.groups.create(read, writeOf(c, connection));
    if (isRefusal(row)) return bodyRefused(row);
    const sent = await sendGroup(c, connection, row.id, 201, projection);
    // Deleted at once by another request: answered as created, without members.
    return isRefusal(sent) ? send(c, 201, groupResource(row, base(c))) : sent;
  };

  const writeGroup = async (
    c: Context<AppEnv>,
    connection: Connection,
    id: number,
    ifMatch: string[] | undefined,
    projection: { attributes?: string[]; excluded?: string[] },
    make: (current: Record<string, unknown>) => unknown,
  ) => {
    const outcome = await store.scim.groups.write(
      id,
      groupVersions(id, ifMatch),
      (cur) => {
        const next = make({
          displayName: cur.displayName,
          ...cur.externalId !== null && { externalId: cur.externalId },
          members: cur.members.map((m) => ({ value: String(m) })),
        });
        return isScimRefusal(next) ? next : groupFromBody(next);
      },
      writeOf(c, connection),
    );
    if (isRefusal(outcome)) return outcome;
    return await sendGroup(c, connection, id, 200, projection);
  };

  const replaceGroup: Handler<"replaceGroup"> = (
    c,
    { connection, id, body, ifMatch, projection },
  ) =>
    writeGroup(c, connection, id, ifMatch, projection, () => body).then(
      bodyRefused,
    );

  const patchGroup: Handler<"patchGroup"> = (
    c,
    { connection, id, body, ifMatch, projection },
  ) =>
    writeGroup(
      c,
      connection,
      id,
      ifMatch,
      projection,
      (cur) => applyPatch(cur, operations(body), GROUP_ATTRIBUTES),
    );

  const deleteGroup: Handler<"deleteGroup"> = async (
    c,
    { connection, id, ifMatch },
  ) => {
    const outcome = await store.scim.groups.remove(
      id,
      groupVersions(id, ifMatch),
      writeOf(c, connection),
    );
    return outcome === "deleted" ? c.body(null, 204) as never : outcome;
  };

  return {
    getUser,
    createUser,
    replaceUser,
    patchUser,
    deleteUser,
    getGroup,
    createGroup,
    replaceGroup,
    patchGroup,
    deleteGroup,
  };
}

/** A PatchOp body's `Operations` (named in any case). */
function operations(body: Record<string, unknown>): unknown {
  const key = Object.keys(body).find((k) => k.toLowerCase() === "operations");
  return key === undefined ? undefined : body[key];
}
