import type { Sql, TransactionSql } from "postgres";
import { canonicalTail } from "../audit/chain.ts";
import type { AuditEvent } from "../audit/events.ts";

/** Records per seal statement: a backlog (after an outage) takes several. */
const SEAL_BATCH = 1000;

/**
 * Adds one record to the audit trail inside the caller's transaction, so the
 * record commits or rolls back with the change it records: as its canonical
 * text without id and time, to audit_pending (migration 008), which locks
 * nothing that other writes wait for. A seal puts it into the chain after
 * the commit (`createSealer`).
 *
 * In a transaction that `audited` opened, the insert is sent without waiting
 * for its answer, so it travels with what follows (the COMMIT, as writes
 * record last): the rows the change locked are held one round trip less.
 * Its answer is awaited after the COMMIT; a failed insert aborted the
 * transaction, which PostgreSQL then ends with a rollback, and `audited`
 * throws its error: still no change without its record.
 */
export async function recordAudit(
  tx: TransactionSql,
  event: AuditEvent,
): Promise<void> {
  const insert = tx`
    insert into audit_pending (tail) values (${canonicalTail(event)})`;
  const sentAhead = insertsSentAhead.get(tx);
  if (!sentAhead) {
    await insert;
    return;
  }
  sentAhead.push(insert.execute());
  // Answered (and thrown) by `audited`, after the COMMIT.
  insert.catch(() => {});
}

const insertsSentAhead = new WeakMap<TransactionSql, Promise<unknown>[]>();

/**
 * Many records in one statement, in their order, inside the caller's
 * transaction (a bulk write: an import's batch of users); as recordAudit,
 * they commit or roll back with the change, and in a transaction that
 * `audited` opened they are sealed soon after its commit.
 */
export async function recordAudits(
  tx: TransactionSql,
  events: readonly AuditEvent[],
): Promise<void> {
  if (events.length === 0) return;
  await tx`
    insert into audit_pending (tail)
    select t from unnest(${events.map(canonicalTail)}::text[])
      with ordinality as e(t, n)
    order by n`;
  // Already answered: only tells `audited` to seal after the commit.
  insertsSentAhead.get(tx)?.push(Promise.resolve());
}

/**
 * Puts records into the chain (audit_seal, migration 027): `soon` after a
 * write committed some, without waiting; `now` before reading the chain,
 * resolving once every record committed before the call is in it.
 */
export interface Sealer {
  soon(): void;
  now(): Promise<void>;
  /** Calls `listener` after each seal of this pool that sealed records. */
  onSealed(listener: () => void): void;
}

/**
 * One seal at a time per pool (and, under the chain's lock, per database).
 * `soon` seals at most `delayMs` later, so under load one seal takes every
 * record committed meanwhile: the chain's lock, its statement and its commit
 * are paid per batch, not per write (tests/bench/audit_measure.ts measures
 * what a record costs a write). `now` waits for a running seal and then
 * starts one, shared by every caller meanwhile: the running one may have
 * read the pending rows before the caller's committed. `stop` seals what
 * its writes left, and no more later.
 */
export function createSealer(
  sql: Sql,
  failed: (cause: unknown) => void,
  delayMs = 20,
): Sealer & { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  const listeners: (() => void)[] = [];
  const sealAll = async () => {
    for (;;) {
      const [{ n }] = await sql<{ n: number }[]>`
        select audit_seal(${SEAL_BATCH}) as n`;
      if (n > 0) { for (const listener of listeners) listener(); }
      if (n < SEAL_BATCH) return;
    }
  };
  const start = () => {
    const run: Promise<void> = sealAll().finally(() => {
      if (running === run) running = undefined;
    });
    running = run;
    return run;
  };
  // The seal every earlier call waits for: `stop` waits for it too.
  let last: Promise<void> = Promise.resolve();
  const now = () => {
    if (!running) return last = start();
    next ??= running.catch(() => {}).then(() => {
      next = undefined;
      return start();
    });
    return last = next;
  };
  return {
    soon() {
      if (timer !== undefined || stopped) return;
      timer = setTimeout(() => {
        timer = undefined;
        now().catch(failed);
      }, delayMs);
      // A process that ends without `stop` leaves its records to the next
      // seal (any instance's write, read of the trail or housekeeping).
      Deno.unrefTimer(timer);
    },
    now,
    onSealed: (listener) => void listeners.push(listener),
    async stop() {
      stopped = true;
      if (timer === undefined) return await last.catch(() => {});
      clearTimeout(timer);
      timer = undefined;
      await now().catch(failed);
    },
  };
}

/**
 * A transaction whose audit records are sent ahead (see recordAudit):
 * resolves once it committed and every record in it was added, then asks
 * for a seal soon.
 */
export async function audited<T>(
  sql: Sql,
  sealer: Sealer,
  body: (tx: TransactionSql) => Promise<T>,
): Promise<T> {
  const sentAhead: Promise<unknown>[] = [];
  const result = await sql.begin((tx) => {
    insertsSentAhead.set(tx, sentAhead);
    return body(tx);
  });
  if (sentAhead.length > 0) {
    await Promise.all(sentAhead);
    sealer.soon();
  }
  return result as T;
}
