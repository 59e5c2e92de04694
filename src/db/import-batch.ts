import type { Sql, TransactionSql } from "postgres";
import { PROFILE_FIELDS } from "../accounts/fields.ts";
import { createAccountWrites } from "./account-writes.ts";
import { type AuditEvent, auditEvents } from "../audit/events.ts";
import type { Role } from "../users/user.ts";
import { recordAudits } from "./audit.ts";
import { updateImported } from "./import-update.ts";
import type {
  BatchJob,
  BatchWritten,
  PreparedBatch,
  RefusedLine,
} from "./import-verdicts.ts";
import { refuse } from "../refusal.ts";

/** A name or e-mail already taken, in the file or before it. */
const DUPLICATE = refuse("duplicate");
import { isUniqueViolation } from "./user-rows.ts";

/** Thrown to roll back a dry run's writes, carrying what they would have been. */
class DryRun<T> {
  constructor(readonly result: T) {}
}

/**
 * The users of an import's batches written: created, or (`onConflict`
 * update) changed as the API changes an account, with the same records and
 * the same consequences (revokeMinted, sessions, login failures).
 */
export function createBatchWriter(sql: Sql) {
  /** The profile's columns (src/accounts/fields.ts), as the insert lists them. */
  const profile = {
    columns: sql.unsafe(PROFILE_FIELDS.map((f) => f.column).join(", ")),
    values: sql.unsafe(PROFILE_FIELDS.map((f) => `u.${f.column}`).join(", ")),
    types: sql.unsafe(
      PROFILE_FIELDS.map((f) => `${f.column} text`).join(", "),
    ),
  };
  /**
   * The batch's users inserted in line order; a name already taken (here,
   * in an earlier batch or before the job) inserts nothing for its line
   * when `careful`, and otherwise fails the statement (unique_violation),
   * which skips the per-row conflict checks of `on conflict`.
   */
  const insertUsers = (
    tx: TransactionSql,
    job: BatchJob,
    rows: string,
    careful: boolean,
  ) =>
    tx<{ id: number; username: string; role: Role; fold: string }[]>`
      insert into users (${dryRunId.column(job)} username, name, name_key,
        email, role, password_hash,
        username_key, email_key, username_fold, email_fold, username_skeleton,
        email_skeleton, external_id, import_id, created_at, disabled_at,
        disabled_reason, disabled_until, ${profile.columns})
      ${dryRunId.overriding(job)}
      select ${dryRunId.value(job)} u.username, u.name, u.name_key, u.email,
        u.role, u.password_hash,
        u.username_key, u.email_key, u.username_fold, u.email_fold,
        u.username_skeleton, u.email_skeleton, u.external_id, ${job.id},
        coalesce(u.created_at, clock_timestamp()),
        case when u.disabled then coalesce(u.disabled_since, now()) end,
        u.disabled_reason, u.disabled_until, ${profile.values}
      from json_to_recordset(${rows}::text::json) as u(line int, username text,
        name text, name_key text, email text, role text, password_hash text,
        username_key text, email_key text, username_fold text,
        email_fold text, username_skeleton text, email_skeleton text,
        external_id text, created_at timestamptz, disabled boolean,
        disabled_since timestamptz, disabled_reason text,
        disabled_until timestamptz, ${profile.types})
      order by u.line
      ${careful ? sql`on conflict do nothing` : sql``}
      returning id, username, role, username_fold as fold`;

  /**
   * A dry run's rows take the negative of their line as id: its savepoint
   * is rolled back, but a sequence is not, so drawing ids from it would use
   * them up (real ids are positive: no clash).
   */
  const dryRunId = {
    column: (job: BatchJob) => job.dryRun ? sql`id,` : sql``,
    overriding: (job: BatchJob) =>
      job.dryRun ? sql`overriding system value` : sql``,
    value: (job: BatchJob) => job.dryRun ? sql`-u.line,` : sql``,
  };

  const accounts = createAccountWrites(sql);

  /** Jobs whose last batch met a name already taken: their next batch goes the careful way at once. */
  const conflicted = new WeakSet<BatchJob>();

  /**
   * The users of a batch written under the job's conflict policy, and the
   * records of what they changed: the counts and the errors of the lines
   * refused.
   */
  const writeUsers = async (
    tx: TransactionSql,
    job: BatchJob,
    batch: PreparedBatch,
  ): Promise<BatchWritten & { events: AuditEvent[] }> => {
    const events: AuditEvent[] = [];
    const errors: RefusedLine[] = [];
    let updated = 0;
    let skipped = 0;
    const { users } = batch;
    if (users.length === 0) {
      return { created: 0, updated, skipped, errors, events };
    }
    // Most batches take no name that exists: one plain insert, in a
    // savepoint so that a batch that does goes on the careful way.
    let rows;
    if (!batch.clashes && !conflicted.has(job)) {
      try {
        rows = await tx.savepoint((sp) =>
          insertUsers(sp, job, batch.rows, false)
        );
      } catch (e) {
        if (!isUniqueViolation(e)) throw e;
      }
    }
    rows ??= await insertUsers(tx, job, batch.rows, true);
    // The line of each row: the first of its name (a later one inserts nothing).
    const lineOf = new Map<string, number>();
    for (const { user, keys } of users) {
      if (!lineOf.has(keys.username_fold)) {
        lineOf.set(keys.username_fold, user.line);
      }
    }
    const done = new Set<number>();
    for (const { fold, ...row } of rows) {
      events.push(auditEvents.userCreated(job.actor, row, job.context));
      done.add(lineOf.get(fold)!);
    }
    const created = rows.length;
    const rest = users.map(({ user: u, keys: k }) => ({ u, k }))
      .filter(({ u }) => !done.has(u.line));
    if (rest.length === 0) {
      conflicted.delete(job);
      return { created, updated, skipped, errors, events };
    }
    conflicted.add(job);
    // Whom each of the rest collides with: the user of the same name first.
    const holders = await tx<
      { line: number; id: number | null; sameName: boolean; ours: boolean }[]
    >`
      select r.line, c.id, coalesce(c.same_name, false) as "sameName",
        coalesce(c.import_id = ${job.id}, false) as ours
      from unnest(${rest.map(({ u }) => u.line)}::int[],
        ${rest.map(({ k }) => k.username_fold)}::text[],
        ${rest.map(({ k }) => k.email_fold)}::text[],
        ${rest.map(({ k }) => k.username_skeleton)}::text[],
        ${rest.map(({ k }) => k.email_skeleton)}::text[])
        as r(line, uf, ef, us, es)
      left join lateral (
        select id, import_id, username_fold = r.uf as same_name from users
        where username_fold = r.uf or email_fold = r.ef
          or username_skeleton = r.us or email_skeleton = r.es
        order by username_fold = r.uf desc, id limit 1) c on true`;
    const holder = new Map(holders.map((h) => [h.line, h]));
    for (const { u } of rest) {
      const h = holder.get(u.line);
      // A name given twice in one file is refused whatever the policy.
      if (!h || h.id === null || h.ours || job.onConflict === "fail") {
        errors.push({ line: u.line, refused: DUPLICATE });
      } else if (job.onConflict === "skip") {
        skipped++;
      } else if (!h.sameName) {
        errors.push({ line: u.line, refused: DUPLICATE });
      } else {
        const changes = await updateImported(tx, accounts, job, h.id, u);
        if (changes) {
          updated++;
          events.push(...changes);
        } else errors.push({ line: u.line, refused: DUPLICATE });
      }
    }
    return { created, updated, skipped, errors, events };
  };

  return {
    /**
     * The batch's users written and their records kept; a dry run's writes
     * are rolled back (a savepoint), leaving only what they would have been.
     */
    async write(
      tx: TransactionSql,
      job: BatchJob,
      batch: PreparedBatch,
    ): Promise<BatchWritten> {
      if (!job.dryRun) {
        const { events, ...written } = await writeUsers(tx, job, batch);
        await recordAudits(tx, events);
        return written;
      }
      try {
        await tx.savepoint(async (sp) => {
          const { events: _, ...written } = await writeUsers(sp, job, batch);
          throw new DryRun(written);
        });
      } catch (e) {
        if (e instanceof DryRun) return e.result as BatchWritten;
        throw e;
      }
      throw new Error("a dry run's savepoint ended without its result");
    },
  };
}
