/**
 * Provisioning connections: made, changed and deleted by an admin through
 * the API. A change of the adminGroups applies the roles of its users at
 * once; a deletion revokes the token, and its groups give nothing from
 * then on.
 */
import type { Sql } from "postgres";
import { scimEvents } from "../audit/scim-events.ts";
import { recordAudit } from "./audit.ts";
import type { ScimRoles } from "./scim-roles.ts";
import type { Connection } from "./scim-types.ts";
import { iso } from "./time.ts";
import type { CallerRefusal, CallerWrite, Writer } from "./write.ts";
import { type Refusal, refuse } from "../refusal.ts";

export function createScimConnections(
  sql: Sql,
  { asCaller }: Writer,
  roles: ScimRoles,
) {
  const connectionShown = sql`c.id, c.name, c.admin_groups as "adminGroups",
    ${iso(sql, "c.created_at")} as "createdAt",
    ${iso(sql, "c.last_used_at")} as "lastUsedAt"`;

  return {
    async create(
      c: { name: string; adminGroups: string[] },
      tokenHash: Uint8Array,
      write: CallerWrite,
    ): Promise<Connection | CallerRefusal> {
      return await asCaller(write, "share", async (tx, actor) => {
        const [row] = await tx<Connection[]>`
          insert into scim_connections as c (name, admin_groups, token_hash)
          values (${c.name}, ${c.adminGroups}::text[], ${tokenHash})
          returning ${connectionShown}`;
        await recordAudit(
          tx,
          scimEvents.connection(
            "connection.created",
            actor,
            row,
            write.context,
          ),
        );
        return row;
      });
    },

    async list(): Promise<Connection[]> {
      return await sql<Connection[]>`
        select ${connectionShown} from scim_connections c
        where c.revoked_at is null order by c.id`;
    },

    async get(id: number): Promise<Connection | undefined> {
      const [row] = await sql<Connection[]>`
        select ${connectionShown} from scim_connections c
        where c.id = ${id} and c.revoked_at is null`;
      return row;
    },

    /**
     * The live connection a token's hash names: one indexed lookup, which
     * also notes the request as the connection's last activity. That write
     * happens at most once a minute per connection (the condition skips it
     * otherwise), so a busy provider does not turn every read into a write;
     * the answer shows the time as it was before this request.
     */
    async resolve(tokenHash: Uint8Array): Promise<Connection | undefined> {
      const [row] = await sql<Connection[]>`
        with touched as (
          update scim_connections set last_used_at = now()
          where token_hash = ${tokenHash} and revoked_at is null
            and (last_used_at is null
              or last_used_at < now() - interval '1 minute'))
        select ${connectionShown} from scim_connections c
        where c.token_hash = ${tokenHash} and c.revoked_at is null`;
      return row;
    },

    /**
     * Renames the connection or changes its adminGroups; a change of the
     * adminGroups applies the roles of its groups' members it owns at once.
     */
    async update(
      id: number,
      change: { name?: string; adminGroups?: string[] },
      write: CallerWrite,
    ): Promise<Connection | Refusal<"not_found"> | CallerRefusal> {
      return await asCaller(write, "share", async (tx, actor) => {
        const [row] = await tx<Connection[]>`
          update scim_connections c set
            name = coalesce(${change.name ?? null}::text, name),
            admin_groups = coalesce(${change.adminGroups ?? null}::text[],
              admin_groups)
          where c.id = ${id} and c.revoked_at is null
          returning ${connectionShown}`;
        if (!row) return refuse("not_found");
        if (change.adminGroups) {
          const members = await tx<{ id: number }[]>`
            select distinct m.user_id as id from scim_members m
            join scim_groups g on g.id = m.group_id
            where g.connection_id = ${id}`;
          await roles.apply(tx, id, members.map((m) => m.id), {
            connection: row,
            context: write.context,
            writeBy: write.writeBy,
          });
        }
        await recordAudit(
          tx,
          scimEvents.connection(
            "connection.updated",
            actor,
            row,
            write.context,
          ),
        );
        return row;
      });
    },

    /**
     * Revokes the token at once; the connection's users and groups stay,
     * but its groups give nothing any more: a user it owns who was admin
     * by them becomes a viewer (recorded as the admin's change), and it
     * owns no one any more.
     */
    async remove(
      id: number,
      write: CallerWrite,
    ): Promise<"deleted" | Refusal<"not_found"> | CallerRefusal> {
      return await asCaller(write, "share", async (tx, actor) => {
        const madeAdmin = await tx<{ id: number }[]>`
          select u.id from users u
          where u.role = 'admin' and ${roles.adminBy(id, sql`u.id`)}`;
        const [row] = await tx<Connection[]>`
          update scim_connections c set revoked_at = now()
          where c.id = ${id} and c.revoked_at is null
          returning ${connectionShown}`;
        if (!row) return refuse("not_found");
        await recordAudit(
          tx,
          scimEvents.connection(
            "connection.deleted",
            actor,
            row,
            write.context,
          ),
        );
        await roles.apply(tx, id, madeAdmin.map((u) => u.id), {
          connection: row,
          context: write.context,
          writeBy: write.writeBy,
          actor,
        });
        return "deleted";
      });
    },
  };
}
