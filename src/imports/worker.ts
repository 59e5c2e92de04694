/**
 * The import worker of one instance. Every instance runs one; they share
 * the jobs in PostgreSQL. A worker leases a job (its row FOR UPDATE SKIP
 * LOCKED, then a lease that outlives the lock) and works through its
 * records in line order, one batch per transaction (store.imports.write):
 * a worker killed mid-batch leaves the batch undone, its lease runs out,
 * and any instance goes on after the last batch that committed, so every
 * user is created once. One job at a time per worker: other instances take
 * other jobs.
 */
import type { PasswordHasher } from "../auth/passwords.ts";
import { type ClaimedImport, prepareBatch } from "../db/imports.ts";
import type { Store } from "../db/store.ts";
import type { Logger } from "../log.ts";
import { judgeRecords } from "./judge.ts";

/**
 * Records per batch (one transaction): bounds the memory and a lost
 * batch's work; 2,000 rather than 1,000 halves what each batch costs
 * apart from its users (the job's row, the cursor, the commit, a seal).
 */
export const IMPORT_BATCH = 2000;
export interface ImportWorkerOptions {
  /** How often the worker looks for jobs when nothing wakes it. */
  pollMs?: number;
  /** How long a lease lasts; renewed by every batch. */
  leaseMs?: number;
  batchSize?: number;
}

export function startImportWorker(
  store: Store,
  passwords: PasswordHasher,
  log: Logger,
  {
    pollMs = 1_000,
    leaseMs = 60_000,
    batchSize = IMPORT_BATCH,
  }: ImportWorkerOptions = {},
): { stop(): Promise<void>; wake(): void } {
  const imports = store.imports;
  let stopped = false;
  let wakeUp: (() => void) | undefined;
  let woken = false;
  const wake = () => {
    woken = true;
    wakeUp?.();
  };

  /** The batch after `after` (the cursor when undefined), read, judged and keyed. */
  const prepare = async (job: ClaimedImport, after?: number) => {
    const next = await imports.next(job, batchSize, after);
    if (next === "stopped") return undefined;
    return {
      after: next.after,
      batch: prepareBatch(await judgeRecords(next.records, passwords)),
    };
  };

  /**
   * Works the job until it ends, is taken away, or the worker stops. The
   * next batch is read and judged while the last one is written, so the
   * database's work and this process's overlap.
   */
  const work = async (job: ClaimedImport) => {
    let ready = prepare(job);
    while (!stopped) {
      const batch = await ready;
      if (!batch) return;
      const last = batch.batch.verdicts.at(-1)?.line;
      ready = last === undefined
        ? Promise.resolve(undefined)
        : prepare(job, last);
      // Awaited at the next turn; a failure then, or never when the write ends the job.
      ready.catch(() => {});
      const outcome = await imports.write(
        job,
        batch.after,
        batch.batch,
        leaseMs,
      );
      if (outcome !== "more") return;
    }
    // Stopped between batches: what is left is any instance's at once.
    await ready.catch(() => {});
    await imports.release(job);
  };

  const loop = async () => {
    while (!stopped) {
      woken = false;
      let job: ClaimedImport | undefined;
      try {
        job = await imports.claim(leaseMs);
        if (job) {
          await work(job);
          // Another job may be queued: looked for at once.
          continue;
        }
      } catch (cause) {
        log.warn("import batch failed", { importId: job?.id, cause });
        if (job) await imports.batchFailed(job).catch(() => {});
      }
      if (stopped || woken) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, pollMs);
        wakeUp = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wakeUp = undefined;
    }
  };
  const running = loop();

  return {
    wake,
    async stop() {
      stopped = true;
      wakeUp?.();
      await running;
    },
  };
}
