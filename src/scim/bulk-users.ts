/**
 * A Bulk request's runs of user creations written together: the users an
 * identity provider's import sends, a hundred or a thousand a request, in
 * one transaction of a few statements instead of one each. Only what its
 * single `POST /Users` would create at once (a valid body, no password to
 * hash, active) joins a run; the run's users, their links and their
 * records are written as each single request writes them (the one write
 * path, src/db/account-writes.ts). A run that fails (a name taken, by one
 * of its own or by anyone) writes nothing, and each of its operations then
 * runs alone, answering as it would have.
 */
import type { Context } from "hono";
import type { Config } from "../config.ts";
import type { Connection, ScimUserState } from "../db/scim.ts";
import type { Store } from "../db/store.ts";
import { auditContext } from "../http/audit-context.ts";
import { unstorableText } from "../http/body-text.ts";
import type { AppEnv } from "../http/env.ts";
import { isRefusal } from "../refusal.ts";
import type { SingleRequest } from "./bulk.ts";
import { userFromBody, userVersion } from "./resources.ts";

/** A created user as the Bulk answers it. */
export interface BatchCreated {
  id: string;
  location: string;
  version: string;
}

export interface UserBatch {
  /** The user a creation makes, when a run may take it; undefined: it runs alone. */
  read(one: SingleRequest): ScimUserState | undefined;
  /** Creates the users, all or none: undefined when none was. */
  create(
    c: Context<AppEnv>,
    connection: Connection,
    states: ScimUserState[],
    base: string,
  ): Promise<BatchCreated[] | undefined>;
}

export function createUserBatch(
  { store, config }: {
    store: Store;
    config: Pick<Config, "TRUST_PROXY">;
  },
): UserBatch {
  return {
    read(one) {
      if (
        one.method !== "POST" || one.path !== "/Users" ||
        one.version !== undefined
      ) return undefined;
      const data = one.data;
      // What the single request's body step would refuse runs alone.
      if (
        typeof data !== "object" || data === null || Array.isArray(data) ||
        unstorableText(data)
      ) return undefined;
      const read = userFromBody(data);
      if (isRefusal(read) || read.password !== undefined) return undefined;
      return read.state.active ? read.state : undefined;
    },

    async create(c, connection, states, base) {
      try {
        const rows = await store.scim.users.createMany(states, {
          connection,
          context: auditContext(c, config.TRUST_PROXY, "scim"),
          writeBy: c.get("writeBy"),
        });
        return rows.map((r) => ({
          id: String(r.id),
          location: `${base}/Users/${r.id}`,
          version: userVersion(r),
        }));
      } catch {
        // Whatever failed is said by the operations run alone.
        return undefined;
      }
    },
  };
}
