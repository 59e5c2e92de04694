import type { Sql } from "postgres";
import { createBatchWriter } from "./import-batch.ts";
import {
  type ClaimedImport,
  importJobRows,
  ownerOf,
  type OwnerRow,
  type StoredRecord,
  uploaderOf,
} from "./import-jobs.ts";
import {
  lineError,
  type OnConflict,
  type PreparedBatch,
} from "./import-verdicts.ts";
import { NO_DEADLINE, type Writer } from "./write.ts";

/** Batches that may fail unforeseen in a row before the job is `failed`. */
const MAX_ATTEMPTS = 5;

/** Imports as the workers work them: a job leased, its records read, its batches written. */
export function createImportWork(sql: Sql, { transaction }: Writer) {
  const { end, uploaderRefused } = importJobRows(sql);
  const batches = createBatchWriter(sql);

  return {
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
        (OwnerRow & { id: number; on_conflict: OnConflict; dry_run: boolean })[]
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
          j.actor_key_id, j.actor_session, j.request_id, j.client_address`;
      if (!row) return undefined;
      return {
        id: row.id,
        token,
        onConflict: row.on_conflict,
        dryRun: row.dry_run,
        session: row.actor_session,
        uploader: uploaderOf(row),
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
     * while the cursor is still `after`, and the uploader's once checked
     * again (an uploader who lost the right to write ends the job `failed`,
     * writing nothing more): the batch's users written (a dry run's rolled
     * back) with their records, the errors, the counts and the cursor (the
     * batch's last line), and the records up to it deleted. An empty
     * batch: the job is finished and recorded. `stopped` when the lease is
     * no longer this worker's, the job was cancelled, or the cursor moved.
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
        if (await uploaderRefused(tx, job.id, job.uploader, job)) return "done";
        if (verdicts.length === 0) {
          await end(tx, job.id, "finished", job);
          return "done";
        }
        const refused = verdicts.filter((v) => "refused" in v);
        const written = await batches.write(tx, job, batch);
        const { created, updated, skipped } = written;
        const errors = [...refused, ...written.errors].map(lineError);
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
            created = created + ${created},
            updated = updated + ${updated},
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
