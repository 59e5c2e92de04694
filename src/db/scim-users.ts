/**
 * The users a connection writes: created (and so owned by it), replaced or
 * changed, deleted. Every write of an existing user asks the connection's
 * standing first (scim-owners.ts): a user managed elsewhere is refused and
 * nothing changes; a viewer it takes over is linked when the write goes on.
 */
import type { PendingQuery, Row, Sql, TransactionSql } from "postgres";
import {
  type Acting,
  createAccountWrites,
  type DisableChange,
  type NewAccount,
  recordAll,
} from "./account-writes.ts";
import { NO_PASSWORD } from "../accounts/fields.ts";
import { recordAudits } from "./audit.ts";
import type { User } from "../users/user.ts";
import { canonicalJson } from "../audit/chain.ts";
import type { ScimOwners } from "./scim-owners.ts";
import {
  orTaken,
  type ScimRefusal,
  type ScimRemoved,
  type ScimUserRow,
  type ScimUserState,
  type ScimWrite,
} from "./scim-types.ts";
import type { Writer } from "./write.ts";
import { isRefusal, type Refusal, refuse } from "../refusal.ts";

/** A user as the connection reads it, its row locked when asked. */
export type ReadUser = (
  q: Sql | TransactionSql,
  connectionId: number,
  id: number,
  lock?: boolean,
) => Promise<ScimUserRow | undefined>;

/**
 * A user just created active, as readUser would read them: its own
 * creation time as lastModified, no group yet, the link's attributes as
 * the database keeps them.
 */
const shownNew = (
  u: User & { version: string },
  s: ScimUserState,
  attributes: Record<string, unknown>,
): ScimUserRow => ({
  id: u.id,
  username: u.username,
  name: u.name,
  email: u.email,
  role: u.role,
  created: u.createdAt,
  modified: u.createdAt,
  version: u.version,
  expired: false,
  active: true,
  externalId: s.externalId,
  attributes,
  profile: s.profile,
  groups: [],
});

export function createScimUsers(
  sql: Sql,
  { transaction }: Writer,
  { owners, readUser }: {
    owners: ScimOwners;
    readUser: ReadUser;
  },
) {
  const accounts = createAccountWrites(sql);
  /** The connection acts: named in every record, no person as actor. */
  const by = (write: ScimWrite): Acting => ({
    actor: null,
    connection: write.connection,
    context: write.context,
  });
  /** What a user sent inactive becomes: disabled, in the connection's name. */
  const deprovisioned = (write: ScimWrite): DisableChange => ({
    reason: `Deprovisioned by ${write.connection.name}`,
    until: null,
  });

  /** The account a SCIM user's state makes: a viewer until membership says otherwise. */
  const newAccount = (
    s: ScimUserState & { passwordHash: string },
    write: ScimWrite,
  ): NewAccount => ({
    username: s.username,
    name: s.name,
    email: s.email,
    role: "viewer",
    passwordHash: s.passwordHash,
    profile: s.profile,
    ...!s.active && { disabled: deprovisioned(write) },
  });

  /** Links an existing user to the connection, which does not own them. */
  const link = (
    tx: TransactionSql,
    connectionId: number,
    userId: number,
    s: Pick<ScimUserState, "externalId" | "attributes">,
  ) =>
    tx`
      insert into scim_user_links (connection_id, user_id, external_id,
        attributes, owner)
      values (${connectionId}, ${userId}, ${s.externalId},
        ${sql.json(s.attributes as never)}, false)
      on conflict (connection_id, user_id) do update
      set external_id = excluded.external_id, attributes = excluded.attributes`;

  /**
   * Links users the connection just created, which it owns: `ids` are
   * theirs, in the order of `states`; answers each link's attributes as
   * kept.
   */
  const linkNew = (
    tx: TransactionSql,
    connectionId: number,
    ids: PendingQuery<Row[]>,
    states: Pick<ScimUserState, "externalId" | "attributes">[],
  ) =>
    tx<{ id: number; attributes: Record<string, unknown> }[]>`
      insert into scim_user_links (connection_id, user_id, external_id,
        attributes, owner)
      select ${connectionId}, l.id, l.external_id, l.attributes::jsonb, true
      from unnest(${ids}, ${states.map((s) => s.externalId)}::text[], ${
      // Texts made jsonb one by one: a text array cast to jsonb[] whole
      // would keep each as a JSON string.
      states.map((s) => JSON.stringify(s.attributes))}::text[])
        as l(id, external_id, attributes)
      returning user_id as id, attributes`;

  return {
    /** A new user (a viewer until membership says otherwise), linked to the connection. */
    async create(
      s: ScimUserState & { passwordHash: string },
      write: ScimWrite,
    ): Promise<ScimUserRow | ScimRefusal> {
      const connectionId = write.connection.id;
      return await orTaken(transaction(write.writeBy, async (tx) => {
        // The link is sent with the user's insert, naming the id it drew
        // (currval): one round trip for both.
        const [made, [linked]] = await Promise.all([
          accounts.create(tx, newAccount(s, write), by(write)),
          linkNew(
            tx,
            connectionId,
            tx`array[currval(pg_get_serial_sequence('users', 'id'))]::int[]`,
            [s],
          ),
        ]);
        await recordAll(tx, made.events);
        // Created disabled, the row was written again: read as it is now.
        return s.active
          ? shownNew(
            { ...made.user, version: made.version },
            s,
            linked.attributes,
          )
          : (await readUser(tx, connectionId, made.user.id))!;
      }));
    },

    /**
     * New users, as `create` makes each, in one transaction of a few
     * statements (a Bulk's run of creations): all of them, or on a broken
     * unique key (or any failure) none, the error thrown. Active users
     * without a password only: a disable and a hash are `create`'s.
     */
    async createMany(
      states: ScimUserState[],
      write: ScimWrite,
    ): Promise<ScimUserRow[]> {
      const connectionId = write.connection.id;
      return await transaction(write.writeBy, async (tx) => {
        const made = await accounts.createMany(
          tx,
          states.map((s) =>
            newAccount({ ...s, passwordHash: NO_PASSWORD }, write)
          ),
          by(write),
        );
        const ids = made.users.map((u) => u.id);
        const [linked] = await Promise.all([
          linkNew(tx, connectionId, tx`${ids}::int[]`, states),
          recordAudits(tx, made.events),
        ]);
        const attributes = new Map(linked.map((l) => [l.id, l.attributes]));
        return made.users.map((u, i) =>
          shownNew(u, states[i], attributes.get(u.id)!)
        );
      });
    },

    /**
     * Replaces what the connection sees of the user with what `decide`
     * makes of it (a PUT's body, a PATCH's operations applied), in one
     * transaction holding the user's row: all of it or, on a refusal, a
     * broken unique key or a stale If-Match, none of it. The account
     * changes through the one write path (src/db/account-writes.ts).
     */
    async write(
      id: number,
      ifVersions: string[] | undefined,
      decide: (
        current: ScimUserRow,
      ) => Promise<ScimUserState | ScimRefusal>,
      write: ScimWrite,
    ): Promise<
      | ScimUserRow
      | ScimRefusal
      | Refusal<"not_found">
      | Refusal<"managed_elsewhere">
      | Refusal<"precondition_failed">
    > {
      const connectionId = write.connection.id;
      return await orTaken(transaction(write.writeBy, async (tx) => {
        const cur = await readUser(tx, connectionId, id, true);
        if (!cur) return refuse("not_found");
        const allowed = await owners.decide(tx, write, [id]);
        if (isRefusal(allowed)) return allowed;
        if (ifVersions && !ifVersions.includes(cur.version)) {
          return refuse("precondition_failed");
        }
        const next = await decide(cur);
        if (isRefusal(next)) return next;
        // What only the link holds: the connection's externalId and the
        // attributes as sent (compared whatever the order of their keys).
        const linked = [
          ...next.externalId !== cur.externalId ? ["externalId"] : [],
          ...canonicalJson(next.attributes) !== canonicalJson(cur.attributes)
            ? ["attributes"]
            : [],
        ];
        const changed = await accounts.change(tx, id, {
          username: next.username,
          name: next.name,
          email: next.email,
          profile: next.profile,
          passwordHash: next.passwordHash,
          ...cur.active && !next.active && { disabled: deprovisioned(write) },
          ...!cur.active && next.active && { disabled: null },
          alsoChanged: linked,
        }, by(write));
        if (isRefusal(changed)) return changed;
        // A user taken over is linked by the first write that changes them
        // (recorded before the change's records, which are recorded last).
        if (changed.written || linked.length > 0) {
          await owners.take(tx, write, allowed.takeOver);
        }
        if (!changed.written && linked.length > 0) {
          // The resource changed though the account's row did not: its
          // version and lastModified move, as the resource did.
          await tx`
            update users set modified_at = clock_timestamp()
            where id = ${id}`;
        }
        // Without a link the user reads as one without externalId and
        // attributes: one is made only when they change.
        if (linked.length > 0) await link(tx, connectionId, id, next);
        await recordAll(tx, changed.events);
        return (await readUser(tx, connectionId, id))!;
      }));
    },

    /** Deletes the user: sessions and keys go with the row, groups leave them. */
    async remove(
      id: number,
      ifVersions: string[] | undefined,
      write: ScimWrite,
    ): Promise<ScimRemoved> {
      return await transaction(write.writeBy, async (tx) => {
        const [cur] = await tx<{ version: string }[]>`
          select version::text from users where id = ${id} for update`;
        if (!cur) return refuse("not_found");
        const allowed = await owners.decide(tx, write, [id]);
        if (isRefusal(allowed)) return allowed;
        if (ifVersions && !ifVersions.includes(cur.version)) {
          return refuse("precondition_failed");
        }
        await owners.take(tx, write, allowed.takeOver);
        const events = await accounts.remove(tx, id, by(write));
        if (isRefusal(events)) return events;
        await recordAll(tx, events);
        return "deleted";
      });
    },
  };
}
