import type { Sql, TransactionSql } from "postgres";
import { auditEvents } from "../audit/events.ts";
import type { User } from "../users/user.ts";
import { recordAudit } from "./audit.ts";
import { clearLoginFailures } from "./throttle.ts";
import { sameIdentity } from "./user-filter.ts";
import {
  identityKeys,
  isUniqueViolation,
  type NewUser,
  orDuplicate,
  type Rekeyed,
  userRows,
} from "./user-rows.ts";
import { beforeWrite, type WriteBy, type Writer } from "./write.ts";
import type { Refusal } from "../refusal.ts";

/**
 * What the service itself writes to the users table, with no caller to
 * check: the first admin at startup, the recovery task's admin, and the
 * keys of rows an older release left without them.
 */
export function createUserService(
  sql: Sql,
  { transaction }: Pick<Writer, "transaction">,
) {
  const { newRow, insertUser } = userRows(sql);

  /** The user of that name (under the canonical key) made admin, or created as one. */
  const upsertAdmin = async (
    tx: TransactionSql,
    u: Omit<NewUser, "role">,
  ): Promise<"created" | "reset"> => {
    type Upserted = { id: number; username: string; created: boolean };
    const reset = sql`role = 'admin', password_hash = ${u.passwordHash},
      password_version = users.password_version + 1`;
    // A row an older release wrote has no canonical key yet: found by its lower-case one.
    const [existing] = await tx<Upserted[]>`
      update users set ${reset}
      where id = (select id from users
        where ${sameIdentity(sql, "username", u.username)}
        order by username_fold is null limit 1)
      returning id, username, false as created`;
    const [row] = existing ? [existing] : await tx<Upserted[]>`
      insert into users ${newRow({ ...u, role: "admin" })}
      on conflict (username_fold) do update set ${reset}
      returning id, username, (xmax = 0) as created`;
    await tx`delete from sessions where user_id = ${row.id}`;
    await clearLoginFailures(tx, row.id);
    const outcome = row.created ? "created" : "reset";
    await recordAudit(tx, auditEvents.adminRecovered(row, outcome));
    return outcome;
  };

  return {
    /**
     * The first admin, from the service itself: no caller to check; recorded
     * as `admin.bootstrapped` in the same transaction. A concurrent creation
     * of the same name (another instance) is refused as a duplicate.
     */
    async createFirst(
      u: NewUser,
      source: "environment" | "generated",
      writeBy: WriteBy,
    ): Promise<User | Refusal<"duplicate">> {
      return (await orDuplicate(
        transaction(writeBy, (tx) =>
          insertUser(
            tx,
            u,
            (row) => auditEvents.adminBootstrapped(row, source),
          )),
      ));
    },

    /**
     * Computes the keys of rows an older release inserted without them
     * (while a release rolls out), each row in its own statement. A row
     * whose key another user already holds keeps none: reported with that
     * user's ids, for an operator; it stays findable by its lower-case key.
     */
    async rekey(writeBy: WriteBy): Promise<Rekeyed[]> {
      const done: Rekeyed[] = [];
      let after = 0;
      for (;;) {
        beforeWrite(writeBy);
        const rows = await sql<
          { id: number; username: string; email: string }[]
        >`
          select id, username, email from users
          where id > ${after} and (username_fold is null or email_fold is null
            or username_skeleton is null or email_skeleton is null)
          order by id limit 500`;
        if (rows.length === 0) return done;
        for (const row of rows) {
          after = row.id;
          const keys = identityKeys(row);
          try {
            await sql`
              update users set username_fold = ${keys.username_fold},
                email_fold = ${keys.email_fold},
                username_skeleton = ${keys.username_skeleton},
                email_skeleton = ${keys.email_skeleton}
              where id = ${row.id}`;
            done.push({ id: row.id, outcome: "keyed" });
          } catch (e) {
            if (!isUniqueViolation(e)) throw e;
            const others = await sql<{ id: number }[]>`
              select id from users where id <> ${row.id} and (
                username_fold = ${keys.username_fold}
                or email_fold = ${keys.email_fold}
                or username_skeleton = ${keys.username_skeleton}
                or email_skeleton = ${keys.email_skeleton})
              order by id`;
            done.push({
              id: row.id,
              outcome: "collision",
              with: others.map((o) => o.id),
            });
          }
        }
      }
    },

    /**
     * Creates the admin, or makes the existing user of that name an admin
     * with this password, ending their sessions and clearing their failed
     * logins like any password reset.
     */
    async upsertAdmin(
      u: Omit<NewUser, "role">,
      writeBy: WriteBy,
    ): Promise<"created" | "reset" | Refusal<"duplicate">> {
      // A duplicate: another user has the e-mail, or a name that looks like this one.
      return await orDuplicate(
        transaction(writeBy, (tx) => upsertAdmin(tx, u)),
      );
    },
  };
}
