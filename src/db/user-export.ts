import type { Sql } from "postgres";
import { auditEvents } from "../audit/events.ts";
import { disabledNow } from "./account-state.ts";
import { recordAudit } from "./audit.ts";
import { iso } from "./time.ts";
import { createUserList } from "./user-list.ts";
import type { UserFilter } from "./user-filter.ts";
import type { ListSort } from "../users/listing.ts";
import type { CallerRefusal, CallerWrite, Writer } from "./write.ts";
import { accountColumns, profileColumns } from "./user-rows.ts";

/** The export of every user as NDJSON, and its record. */
export function createUserExport(
  sql: Sql,
  { asCaller }: Pick<Writer, "asCaller">,
) {
  /**
   * An export's line: the detail `GET /api/users/{id}` shows, the external
   * id, and the hash when asked. The external id is the one an import gave
   * the user, else the one a provisioning connection gave it (the first
   * connection's that has one): what importing the export stores back.
   */
  const profile = profileColumns(sql);
  const exported = (passwordHashes: boolean) =>
    sql`${accountColumns(sql)},
    ${iso(sql, "users.created_at")} as "createdAt",
    case when ${disabledNow(sql)} then json_build_object(
      'reason', users.disabled_reason,
      'until', ${iso(sql, "users.disabled_until")},
      'since', ${iso(sql, "users.disabled_at")}) end as disabled,
    ${iso(sql, "users.last_login_at")} as "lastLoginAt", ${profile},
    coalesce(users.external_id, (
      select l.external_id from scim_user_links l
      where l.user_id = users.id and l.external_id is not null
      order by l.connection_id limit 1)) as "externalId"${
      passwordHashes ? sql`, users.password_hash as "passwordHash"` : sql``
    }`;

  /** Counts what an export's filter matches (its items are never read). */
  const counted = createUserList(sql, exported(false));

  return {
    /**
     * `users.exported` `{count, passwordHashes}`, if the caller may still
     * write (re-checked as every caller's write is), before the first line.
     */
    async recordExport(
      passwordHashes: boolean,
      write: CallerWrite,
      filter: UserFilter = {},
    ): Promise<"recorded" | CallerRefusal> {
      return await asCaller(write, "share", async (tx, actor) => {
        const count = await counted.exactCount(filter, tx);
        await recordAudit(
          tx,
          auditEvents.usersExported(
            actor,
            { count, passwordHashes },
            write.context,
          ),
        );
        return "recorded" as const;
      });
    },

    /** Every user as NDJSON (lines joined by newlines), in list order, a batch per statement. */
    exportNdjson(
      passwordHashes: boolean,
      filter: UserFilter = {},
      sort?: ListSort,
    ): AsyncIterable<string> {
      return createUserList(sql, exported(passwordHashes), "\n").listJson(
        filter,
        undefined,
        undefined,
        undefined,
        sort,
      );
    },
  };
}
