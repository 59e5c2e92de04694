import type { TransactionSql } from "postgres";
import { type AuditEvent, auditEvents } from "../audit/events.ts";
import { lowerCaseKey } from "../users/canonical.ts";
import type { Role } from "../users/user.ts";
import { disabledNow, disableExpired } from "./account-state.ts";
import { mintedRevokedEvents, revokeMinted } from "./api-keys.ts";
import type { BatchJob, ImportedUser } from "./import-verdicts.ts";
import { clearLoginFailures } from "./throttle.ts";
import { iso } from "./time.ts";
import { identityKeys, isUniqueViolation } from "./user-rows.ts";

/** The user as an update by an import finds it, before it writes. */
interface Before {
  username: string;
  name: string;
  email: string;
  role: Role;
  externalId: string | null;
  sameHash: boolean;
  disabled: boolean;
  ranOut: boolean;
  reason: string | null;
  until: string | null;
}

const sameInstant = (a: string | null, b: string | null) =>
  a === b || (a !== null && b !== null && Date.parse(a) === Date.parse(b));

/**
 * The fields the record gives written over the user's, in a savepoint
 * that holds the user's row: an e-mail another user has refuses this
 * record alone. Answers the records of what changed, in the order the
 * API writes them: the profile fields that differ (`user.updated`
 * `{changed}`), a role change, a disable or enable, the keys a demoted
 * or disabled admin minted for others (revoked), a new password (which
 * ends the user's sessions but the uploader's own, and clears the
 * username's failed logins). A disable ends every session.
 */
export async function updateImported(
  tx: TransactionSql,
  job: BatchJob,
  id: number,
  u: ImportedUser,
): Promise<AuditEvent[] | undefined> {
  const keys = identityKeys(u);
  try {
    return await tx.savepoint(async (sp) => {
      const [before] = await sp<Before[]>`
        select username, name, email, role, external_id as "externalId",
          password_hash = ${u.passwordHash ?? null}::text as "sameHash",
          ${disabledNow(sp)} as disabled,
          ${disableExpired(sp)} as "ranOut",
          disabled_reason as reason, ${iso(sp, "disabled_until")} as until
        from users where id = ${id} for update`;
      if (!before) return undefined;
      const role = u.role !== undefined && u.role !== before.role
        ? u.role
        : null;
      const hash = u.passwordHash !== undefined && !before.sameHash
        ? u.passwordHash
        : null;
      const d = u.disabled;
      const disabling = d != null && (!before.disabled ||
        d.reason !== before.reason || !sameInstant(d.until, before.until));
      const enabling = d === null && (before.disabled || before.ranOut);
      const [row] = await sp<{ passwordVersion: number }[]>`
        update users set name = ${u.name}, name_key = ${lowerCaseKey(u.name)},
          email = ${u.email}, email_key = ${keys.email_key},
          email_fold = ${keys.email_fold},
          email_skeleton = ${keys.email_skeleton},
          role = coalesce(${role}::text, role),
          password_hash = coalesce(${hash}::text, password_hash),
          password_version = password_version +
            case when ${hash}::text is null then 0 else 1 end,
          external_id = case when ${u.externalId !== undefined}
            then ${u.externalId ?? null}::text else external_id end
          ${
        d === undefined ? sp`` : sp`,
          disabled_at = case when ${d !== null}
            then coalesce(${d?.since ?? null}::timestamptz,
              disabled_at, now()) end,
          disabled_reason = ${d?.reason ?? null}::text,
          disabled_until = ${d?.until ?? null}::timestamptz`
      }
        where id = ${id} returning password_version as "passwordVersion"`;
      const target = { id, username: before.username };
      const { actor, context } = job;
      const events: AuditEvent[] = [];
      const changed = [
        ...before.name !== u.name ? ["name"] : [],
        ...before.email !== u.email ? ["email"] : [],
        ...u.externalId !== undefined &&
            (u.externalId ?? null) !== before.externalId
          ? ["externalId"]
          : [],
      ];
      if (changed.length > 0) {
        events.push(auditEvents.userUpdated(actor, target, changed, context));
      }
      if (role !== null) {
        events.push(
          auditEvents.roleChanged(actor, target, before.role, role, context),
        );
      }
      if ((disabling || enabling) && before.ranOut) {
        events.push(auditEvents.userEnabled(null, target, true, context));
      }
      if (disabling) {
        events.push(auditEvents.userDisabled(actor, target, d!, context));
        await sp`delete from sessions where user_id = ${id}`;
      } else if (enabling && before.disabled) {
        events.push(auditEvents.userEnabled(actor, target, false, context));
      }
      if (disabling || (before.role === "admin" && role !== null)) {
        const minted = await revokeMinted(sp, id);
        events.push(...mintedRevokedEvents(minted, actor, context));
      }
      if (hash !== null) {
        const keep = job.session ?? new Uint8Array();
        await sp`
          delete from sessions where user_id = ${id} and token_hash <> ${keep}`;
        await sp`
          update sessions set password_version = ${row.passwordVersion}
          where user_id = ${id} and token_hash = ${keep}`;
        await clearLoginFailures(sp, id);
        events.push(auditEvents.passwordReset(actor, target, context));
      }
      return events;
    });
  } catch (e) {
    if (isUniqueViolation(e)) return undefined;
    throw e;
  }
}
