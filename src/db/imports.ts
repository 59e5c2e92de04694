import type { Sql, TransactionSql } from "postgres";
import type { AuditParty } from "../audit/chain.ts";
import { type AuditContext, auditEvents } from "../audit/events.ts";
import { lowerCaseKey } from "../users/canonical.ts";
import type { Role } from "../users/user.ts";
import { recordAudit, recordAudits } from "./audit.ts";
import { identityKeys } from "./user-rows.ts";
import { iso } from "./time.ts";
import { disabledNow } from "./account-state.ts";
import { createUserList } from "./user-list.ts";
import {
  type CallerRefusal,
  type CallerWrite,
  NO_DEADLINE,
  type Writer,
} from "./write.ts";

export type OnConflict = "fail" | "skip" | "update";
export type ImportState =
  | "queued"
  | "running"
  | "finished"
  | "failed"
  | "cancelled";

/** Who asked for an import and from where: the actor and context of its records. */
export interface ImportOwner {
  actor: AuditParty;
  context: AuditContext;
}

export interface ImportOptions {
  onConflict: OnConflict;
  dryRun: boolean;
}

/** An import as `GET /api/imports/{id}` shows it. */
export interface ImportStatus {
  id: number;
  status: ImportState;
  total: number;
  processed: number;
  created: number;
  updated: number;
  skipped: number;
  failed: number;
  startedAt: string | null;
  finishedAt: string | null;
}

/** A record as the upload stored it: its JSON object's text, or why its line could not be read. */
export interface StoredRecord {
  line: number;
  record: string | null;
  problem: string | null;
}

/** A disable as an import gives it (an export's `disabled`). */
export interface ImportedDisable {
  reason: string | null;
  until: string | null;
  since: string | null;
}

/**
 * A record that passed the account rules. For an update the fields given
 * replace the stored ones: `undefined` is a field the record did not give.
 */
export interface ImportedUser {
  line: number;
  username: string;
  name: string;
  email: string;
  role?: Role;
  /** A bcrypt hash of a given password, or a hash given as is. */
  passwordHash?: string;
  externalId?: string | null;
  createdAt?: string;
  disabled?: ImportedDisable | null;
}

/** What the job runner judged of a record: a user to write, or the line's error. */
export type Verdict = ImportedUser | { line: number; error: string };

/** A user of a batch with the keys its row is stored under. */
interface KeyedUser {
  user: ImportedUser;
  keys: ReturnType<typeof identityKeys>;
}

/**
 * A batch as `write` takes it: its verdicts, the users among them with
 * their keys, and their rows as the insert reads them (one JSON text).
 * Made by `prepareBatch`, while the batch before is written.
 */
export interface PreparedBatch {
  verdicts: Verdict[];
  users: KeyedUser[];
  rows: string;
  /** Two of its users share a key: they cannot all be inserted. */
  clashes: boolean;
}

/**
 * The work of a batch that needs no database: the users' keys (canonical
 * forms, look-alike skeletons) and the rows the insert reads.
 */
export function prepareBatch(verdicts: Verdict[]): PreparedBatch {
  const users: KeyedUser[] = [];
  for (const v of verdicts) {
    if (!("error" in v)) users.push({ user: v, keys: identityKeys(v) });
  }
  const seen = new Set<string>();
  let clashes = false;
  for (const { keys } of users) {
    for (
      const key of [
        `u${keys.username_fold}`,
        `e${keys.email_fold}`,
        `U${keys.username_skeleton}`,
        `E${keys.email_skeleton}`,
        `k${keys.username_key}`,
        `K${keys.email_key}`,
      ]
    ) {
      if (seen.has(key)) clashes = true;
      seen.add(key);
    }
  }
  const rows = JSON.stringify(users.map(({ user: u, keys }) => ({
    line: u.line,
    username: u.username,
    name: u.name,
    name_key: lowerCaseKey(u.name),
    email: u.email,
    role: u.role ?? "viewer",
    password_hash: u.passwordHash ?? NO_PASSWORD,
    ...keys,
    external_id: u.externalId ?? null,
    created_at: u.createdAt ?? null,
    disabled: u.disabled ? true : false,
    disabled_since: u.disabled?.since ?? null,
    disabled_reason: u.disabled?.reason ?? null,
    disabled_until: u.disabled?.until ?? null,
  })));
  return { verdicts, users, rows, clashes };
}

/** A job a worker holds the lease of. */
export interface ClaimedImport extends ImportOwner, ImportOptions {
  id: number;
  token: string;
}

/**
 * What a password hash column holds for a user imported without a password
 * or hash: matches no format (passwords.ts checks it against the dummy
 * hash), so that user cannot log in with a password until one is set.
 */
export const NO_PASSWORD = "!";

/** The message of a name or e-mail already taken, in the file or before it. */
const DUPLICATE = "Username or email already exists";

/** Batches that may fail unforeseen in a row before the job is `failed`. */
const MAX_ATTEMPTS = 5;

const UNIQUE_VIOLATION = "23505";

/** Thrown to roll back a dry run's writes, carrying what they would have been. */
class DryRun<T> {
  constructor(readonly result: T) {}
}

/** Imports: jobs, their uploaded records and errors, and the batches that write users. */
export function createImportStore(
  sql: Sql,
  { transaction, asCaller }: Writer,
) {
  /**
   * An export's line: the detail `GET /api/users/{id}` shows, the external
   * id, and the hash when asked. The external id is the one an import gave
   * the user, else the one a provisioning connection gave it (the first
   * connection's that has one): what importing the export stores back.
   */
  const exported = (passwordHashes: boolean) =>
    sql`users.id, users.username, users.name, users.email, users.role,
    ${iso(sql, "users.created_at")} as "createdAt",
    case when ${disabledNow(sql)} then json_build_object(
      'reason', users.disabled_reason,
      'until', ${iso(sql, "users.disabled_until")},
      'since', ${iso(sql, "users.disabled_at")}) end as disabled,
    ${iso(sql, "users.last_login_at")} as "lastLoginAt",
    coalesce(users.external_id, (
      select l.external_id from scim_user_links l
      where l.user_id = users.id and l.external_id is not null
      order by l.connection_id limit 1)) as "externalId"${
      passwordHashes ? sql`, users.password_hash as "passwordHash"` : sql``
    }`;

  const status = sql`id, status, total, processed, created, updated, skipped,
    failed, ${iso(sql, "started_at")} as "startedAt",
    ${iso(sql, "finished_at")} as "finishedAt"`;

  const counts = (s: ImportStatus) => ({
    total: s.total,
    processed: s.processed,
    created: s.created,
    updated: s.updated,
    skipped: s.skipped,
    failed: s.failed,
  });

  const ownerOf = (row: {
    actor_id: number;
    actor_username: string;
    actor_key_id: number | null;
    request_id: string | null;
    client_address: string | null;
  }): ImportOwner => ({
    actor: row.actor_key_id === null
      ? { id: row.actor_id, username: row.actor_username }
      : {
        id: row.actor_id,
        username: row.actor_username,
        keyId: row.actor_key_id,
      },
    context: {
      requestId: row.request_id,
      clientAddress: row.client_address,
    },
  });

  /** Ends the job in `tx` (finished or cancelled) and records `import.finished`. */
  const end = async (
    tx: TransactionSql,
    id: number,
    to: "finished" | "cancelled" | "failed",
    owner: ImportOwner,
  ) => {
    const [row] = await tx<ImportStatus[]>`
      update import_jobs set status = ${to}, finished_at = now(),
        lease_until = null, lease_token = null
      where id = ${id} returning ${status}`;
    await tx`delete from import_records where job_id = ${id}`;
    await recordAudit(
      tx,
      auditEvents.importFinished(owner.actor, {
        importId: id,
        status: to,
        counts: counts(row),
      }, owner.context),
    );
    return row;
  };

  /**
   * The batch's users inserted in line order; a name already taken (here,
   * in an earlier batch or before the job) inserts nothing for its line
   * when `careful`, and otherwise fails the statement (unique_violation),
   * which skips the per-row conflict checks of `on conflict`.
   */
  const insertUsers = (
    tx: TransactionSql,
    job: ClaimedImport,
    rows: string,
    careful: boolean,
  ) =>
    tx<{ id: number; username: string; role: Role; fold: string }[]>`
      insert into users (username, name, name_key, email, role, password_hash,
        username_key, email_key, username_fold, email_fold, username_skeleton,
        email_skeleton, external_id, import_id, created_at, disabled_at,
        disabled_reason, disabled_until)
      select u.username, u.name, u.name_key, u.email, u.role, u.password_hash,
        u.username_key, u.email_key, u.username_fold, u.email_fold,
        u.username_skeleton, u.email_skeleton, u.external_id, ${job.id},
        coalesce(u.created_at, clock_timestamp()),
        case when u.disabled then coalesce(u.disabled_since, now()) end,
        u.disabled_reason, u.disabled_until
      from json_to_recordset(${rows}::text::json) as u(line int, username text,
        name text, name_key text, email text, role text, password_hash text,
        username_key text, email_key text, username_fold text,
        email_fold text, username_skeleton text, email_skeleton text,
        external_id text, created_at timestamptz, disabled boolean,
        disabled_since timestamptz, disabled_reason text,
        disabled_until timestamptz)
      order by u.line
      ${careful ? sql`on conflict do nothing` : sql``}
      returning id, username, role, username_fold as fold`;

  /** Jobs whose last batch met a name already taken: their next batch goes the careful way at once. */
  const conflicted = new WeakSet<ClaimedImport>();

  /**
   * The users of a batch written, under the job's conflict policy: the
   * lines created, updated and skipped, and the errors of the rest.
   */
  const writeUsers = async (
    tx: TransactionSql,
    job: ClaimedImport,
    batch: PreparedBatch,
  ) => {
    const created: {
      line: number;
      id: number;
      username: string;
      role: Role;
    }[] = [];
    const updated: { id: number; username: string; fields: string[] }[] = [];
    const errors: { line: number; error: string }[] = [];
    let skipped = 0;
    const { users } = batch;
    if (users.length === 0) return { created, updated, errors, skipped };
    // Most batches take no name that exists: one plain insert, in a
    // savepoint so that a batch that does goes on the careful way.
    let rows;
    if (!batch.clashes && !conflicted.has(job)) {
      try {
        rows = await tx.savepoint((sp) =>
          insertUsers(sp, job, batch.rows, false)
        );
      } catch (e) {
        if ((e as { code?: string })?.code !== UNIQUE_VIOLATION) throw e;
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
      const line = lineOf.get(fold)!;
      created.push({ ...row, line });
      done.add(line);
    }
    const rest = users.map(({ user: u, keys: k }) => ({ u, k }))
      .filter(({ u }) => !done.has(u.line));
    if (rest.length === 0) {
      conflicted.delete(job);
      return { created, updated, errors, skipped };
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
        errors.push({ line: u.line, error: DUPLICATE });
      } else if (job.onConflict === "skip") {
        skipped++;
      } else if (!h.sameName) {
        errors.push({ line: u.line, error: DUPLICATE });
      } else {
        const outcome = await updateUser(tx, h.id, u);
        if (outcome) updated.push(outcome);
        else errors.push({ line: u.line, error: DUPLICATE });
      }
    }
    return { created, updated, errors, skipped };
  };

  /**
   * The fields the record gives written over the user's, in a savepoint:
   * an e-mail another user has refuses this record alone. A new password
   * ends the user's sessions, as a reset does.
   */
  const updateUser = async (
    tx: TransactionSql,
    id: number,
    u: ImportedUser,
  ) => {
    const keys = identityKeys(u);
    const fields = ["name", "email"];
    if (u.role !== undefined) fields.push("role");
    if (u.passwordHash !== undefined) fields.push("password");
    if (u.externalId !== undefined) fields.push("externalId");
    if (u.disabled !== undefined) fields.push("disabled");
    try {
      return await tx.savepoint(async (sp) => {
        const [row] = await sp<{ id: number; username: string }[]>`
          update users set name = ${u.name}, name_key = ${lowerCaseKey(u.name)},
            email = ${u.email}, email_key = ${keys.email_key},
            email_fold = ${keys.email_fold},
            email_skeleton = ${keys.email_skeleton},
            role = coalesce(${u.role ?? null}::text, role),
            password_hash = coalesce(${u.passwordHash ?? null}::text,
              password_hash),
            password_version = password_version +
              case when ${
          u.passwordHash ?? null
        }::text is null then 0 else 1 end,
            external_id = case when ${u.externalId !== undefined}
              then ${u.externalId ?? null}::text else external_id end
            ${
          u.disabled === undefined ? sql`` : sql`,
            disabled_at = case when ${u.disabled !== null}
              then coalesce(${u.disabled?.since ?? null}::timestamptz,
                disabled_at, now()) end,
            disabled_reason = ${u.disabled?.reason ?? null}::text,
            disabled_until = ${u.disabled?.until ?? null}::timestamptz`
        }
          where id = ${id} returning id, username`;
        if (!row) return undefined;
        if (u.passwordHash !== undefined || u.disabled) {
          await sp`delete from sessions where user_id = ${id}`;
        }
        return { ...row, fields };
      });
    } catch (e) {
      if ((e as { code?: string })?.code === UNIQUE_VIOLATION) return undefined;
      throw e;
    }
  };

  return {
    /**
     * `users.exported` `{count, passwordHashes}`, if the caller may still
     * write (re-checked as every caller's write is), before the first line.
     */
    async recordExport(
      passwordHashes: boolean,
      write: CallerWrite,
    ): Promise<"recorded" | CallerRefusal> {
      return await asCaller(write, "share", async (tx, actor) => {
        const [{ count }] = await tx<{ count: number }[]>`
          select count(*)::int as count from users`;
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

    /** Every user as NDJSON (UTF-8, lines joined by newlines), in list order, a batch per statement. */
    exportNdjson(passwordHashes: boolean): AsyncIterable<Uint8Array> {
      return createUserList(sql, exported(passwordHashes), "\n").listJson();
    },

    /** A job whose body is about to stream in; its id is given out once it is queued. */
    async begin(owner: ImportOwner, options: ImportOptions): Promise<number> {
      const [{ id }] = await sql<{ id: number }[]>`
        insert into import_jobs (status, on_conflict, dry_run, actor_id,
          actor_username, actor_key_id, request_id, client_address, lease_until)
        values ('receiving', ${options.onConflict}, ${options.dryRun},
          ${owner.actor.id}, ${owner.actor.username},
          ${owner.actor.keyId ?? null}, ${owner.context.requestId},
          ${owner.context.clientAddress}, now() + interval '10 minutes')
        returning id`;
      return id;
    },

    /**
     * Records of the body, in one statement; each keeps the receiving
     * job's lease, so no worker takes a body still streaming in as one
     * its uploader left.
     */
    async addRecords(id: number, records: StoredRecord[]): Promise<void> {
      if (records.length === 0) return;
      // The records as one text, a line each (a record's JSON holds no raw
      // newline; an unreadable one is empty): no array literal to escape.
      await sql`
        with added as (
          insert into import_records (job_id, line, record, problem)
          select ${id}, r.line, nullif(r.record, ''), r.problem
          from unnest(${records.map((r) => r.line)}::int[],
            string_to_array(${
        records.map((r) => r.record ?? "").join("\n")
      }, E'\n'),
            ${
        records.map((r) => r.problem)
      }::text[]) as r(line, record, problem)
          returning 1)
        update import_jobs set lease_until = now() + interval '10 minutes'
        where id = ${id} and status = 'receiving'
          and (select count(*) from added) > 0`;
    },

    /** The body is in: the job is queued for any instance's worker, and `import.started` recorded. */
    async queue(
      id: number,
      total: number,
      owner: ImportOwner,
      options: ImportOptions,
    ): Promise<ImportStatus> {
      return await transaction(NO_DEADLINE, async (tx) => {
        const [row] = await tx<ImportStatus[]>`
          update import_jobs set status = 'queued', total = ${total},
            lease_until = null
          where id = ${id} returning ${status}`;
        await recordAudit(
          tx,
          auditEvents.importStarted(owner.actor, {
            importId: id,
            total,
            dryRun: options.dryRun,
            onConflict: options.onConflict,
          }, owner.context),
        );
        return row;
      });
    },

    /** A body that did not arrive whole: the job and its records go. */
    async discard(id: number): Promise<void> {
      await sql`delete from import_jobs where id = ${id}`;
    },

    async get(id: number): Promise<ImportStatus | undefined> {
      const [row] = await sql<ImportStatus[]>`
        select ${status} from import_jobs
        where id = ${id} and status <> 'receiving'`;
      return row;
    },

    /**
     * Stops a queued or running job: what its batches wrote stays; the
     * batch under way (which holds the job's row) commits first. A job
     * already at its end is answered as it is.
     */
    async cancel(id: number): Promise<ImportStatus | "not_found"> {
      return await transaction(NO_DEADLINE, async (tx) => {
        const [row] = await tx<
          (ImportStatus & Parameters<typeof ownerOf>[0])[]
        >`
          select ${status}, actor_id, actor_username, actor_key_id,
            request_id, client_address
          from import_jobs where id = ${id} and status <> 'receiving'
          for update`;
        if (!row) return "not_found";
        if (row.status !== "queued" && row.status !== "running") {
          const {
            actor_id: _a,
            actor_username: _u,
            actor_key_id: _k,
            request_id: _r,
            client_address: _c,
            ...shown
          } = row;
          return shown;
        }
        return await end(tx, id, "cancelled", ownerOf(row));
      });
    },

    /** The errors of an import, in line order, as JSON text in batches (streamed). */
    errorsJson(id: number, batchSize = 2000): AsyncIterable<string[]> {
      let after = 0;
      let done = false;
      return {
        [Symbol.asyncIterator]: () => ({
          async next(): Promise<IteratorResult<string[]>> {
            if (done) return { done: true, value: undefined };
            const rows = await sql<{ line: number; json: string }[]>`
              select line, json_build_object('line', line, 'error', error)::text
                as json
              from import_errors where job_id = ${id} and line > ${after}
              order by line limit ${batchSize}`;
            if (rows.length < batchSize) done = true;
            if (rows.length === 0) return { done: true, value: undefined };
            after = rows[rows.length - 1].line;
            return { done: false, value: rows.map((r) => r.json) };
          },
          return(): Promise<IteratorResult<string[]>> {
            done = true;
            return Promise.resolve({ done: true, value: undefined });
          },
        }),
      };
    },

    /**
     * Leases one job that is queued, running without a live lease (its
     * worker died), or received so long ago that its uploader is gone (a
     * body that never finished: deleted, as `discard`).
     */
    async claim(leaseMs: number): Promise<ClaimedImport | undefined> {
      const token = crypto.randomUUID();
      await sql`
        delete from import_jobs
        where status = 'receiving' and lease_until < now()`;
      const [row] = await sql<
        (Parameters<typeof ownerOf>[0] & {
          id: number;
          on_conflict: OnConflict;
          dry_run: boolean;
        })[]
      >`
        with ready as (
          select id from import_jobs
          where status in ('queued', 'running')
            and (lease_until is null or lease_until < now())
          order by id limit 1
          for update skip locked
        )
        update import_jobs j set status = 'running',
          started_at = coalesce(j.started_at, now()),
          lease_until = now() + make_interval(secs => ${leaseMs / 1000}),
          lease_token = ${token}
        from ready where j.id = ready.id
        returning j.id, j.on_conflict, j.dry_run, j.actor_id, j.actor_username,
          j.actor_key_id, j.request_id, j.client_address`;
      if (!row) return undefined;
      return {
        id: row.id,
        token,
        onConflict: row.on_conflict,
        dryRun: row.dry_run,
        ...ownerOf(row),
      };
    },

    /**
     * The job's next records after its cursor (or `after`), at most
     * `size`, and the line they follow; `stopped` when the lease is no longer this
     * worker's or the job was cancelled. Nothing is locked: only the
     * lease's holder moves the cursor (`write` checks it did not move).
     */
    async next(
      job: ClaimedImport,
      size: number,
      /** Read past a batch not yet written (its last line), not the cursor. */
      after?: number,
    ): Promise<{ after: number; records: StoredRecord[] } | "stopped"> {
      const [held] = await sql<{ done_line: number }[]>`
        select done_line from import_jobs
        where id = ${job.id} and lease_token = ${job.token}
          and status = 'running'`;
      if (!held) return "stopped";
      const from = after ?? held.done_line;
      const records = await sql<StoredRecord[]>`
        select line, record, problem from import_records
        where job_id = ${job.id} and line > ${from}
        order by line limit ${size}`;
      return { after: from, records };
    },

    /**
     * One batch of the job, in one transaction that holds the job's row
     * while the cursor is still `after`: the batch's users written (a dry
     * run's rolled back), their `user.created` records, the errors, the
     * counts and the cursor (the batch's last line), and the records up
     * to it deleted. An empty batch: the job is finished and recorded.
     * `stopped` when the lease is no longer this worker's, the job was
     * cancelled, or the cursor moved.
     */
    async write(
      job: ClaimedImport,
      after: number,
      batch: PreparedBatch,
      leaseMs: number,
    ): Promise<"more" | "done" | "stopped"> {
      const { verdicts } = batch;
      return await transaction(NO_DEADLINE, async (tx) => {
        // A batch is no request: bounded by the lease, not a request's share.
        await tx`select set_config('statement_timeout', ${`${leaseMs}ms`}, true)`;
        const [held] = await tx`
          select 1 from import_jobs
          where id = ${job.id} and lease_token = ${job.token}
            and status = 'running' and done_line = ${after}
          for update`;
        if (!held) return "stopped";
        if (verdicts.length === 0) {
          await end(tx, job.id, "finished", job);
          return "done";
        }
        const refused = verdicts.filter((v) => "error" in v) as {
          line: number;
          error: string;
        }[];
        let written;
        if (job.dryRun) {
          try {
            await tx.savepoint(async (sp) => {
              throw new DryRun(await writeUsers(sp, job, batch));
            });
          } catch (e) {
            if (!(e instanceof DryRun)) throw e;
            written = e.result as Awaited<ReturnType<typeof writeUsers>>;
          }
        } else {
          written = await writeUsers(tx, job, batch);
          await recordAudits(tx, [
            ...written.created.map((u) =>
              auditEvents.userCreated(job.actor, u, job.context)
            ),
            ...written.updated.map((u) =>
              auditEvents.userUpdated(job.actor, u, u.fields, job.context)
            ),
          ]);
        }
        const { created, updated, skipped } = written!;
        const errors = [...refused, ...written!.errors];
        if (errors.length > 0) {
          await tx`
            insert into import_errors (job_id, line, error)
            select ${job.id}, * from unnest(${errors.map((e) => e.line)}::int[],
              ${errors.map((e) => e.error)}::text[])`;
        }
        const last = Math.max(...verdicts.map((v) => v.line));
        // From the cursor on: the index entries of records deleted before
        // stay until a vacuum, and a scan from the first line would read
        // them all at every batch.
        await tx`
          delete from import_records
          where job_id = ${job.id} and line > ${after} and line <= ${last}`;
        await tx`
          update import_jobs set done_line = ${last},
            processed = processed + ${verdicts.length},
            created = created + ${created.length},
            updated = updated + ${updated.length},
            skipped = skipped + ${skipped},
            failed = failed + ${errors.length},
            attempts = 0,
            lease_until = now() + make_interval(secs => ${leaseMs / 1000})
          where id = ${job.id}`;
        return "more";
      });
    },

    /** The worker stops: its lease ends now, so any instance goes on at once. */
    async release(job: ClaimedImport): Promise<void> {
      await sql`
        update import_jobs set lease_until = null, lease_token = null
        where id = ${job.id} and lease_token = ${job.token}`;
    },

    /**
     * A batch of the job failed unforeseen: its lease is given back for a
     * retry, and after MAX_ATTEMPTS in a row the job is `failed`.
     */
    async batchFailed(job: ClaimedImport): Promise<void> {
      await transaction(NO_DEADLINE, async (tx) => {
        const [row] = await tx<{ attempts: number }[]>`
          update import_jobs set attempts = attempts + 1, lease_until = null,
            lease_token = null
          where id = ${job.id} and lease_token = ${job.token}
          returning attempts`;
        if (row && row.attempts >= MAX_ATTEMPTS) {
          await end(tx, job.id, "failed", job);
        }
      });
    },
  };
}

export type ImportStore = ReturnType<typeof createImportStore>;
