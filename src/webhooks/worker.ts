/**
 * The delivery worker of one instance. Every instance runs one; they share
 * the queue in PostgreSQL. A worker leases due endpoints (the endpoint row,
 * FOR UPDATE SKIP LOCKED, then a lease that outlives the lock) and delivers
 * each one's records in id order, one at a time: a record that fails holds
 * back the later ones of its endpoint until it succeeds, or until the
 * endpoint's retry budget runs out and it is disabled. The cursor moves
 * only after a 2xx, so a worker killed mid-delivery loses nothing: its
 * lease runs out and any instance sends that record again (at least once).
 */
import type { AuditRecord } from "../db/audit.ts";
import type { Store } from "../db/store.ts";
import type { AttemptResult, ClaimedEndpoint } from "../db/webhooks.ts";
import type { Config } from "../config.ts";
import type { Logger } from "../log.ts";
import { closeKept, deliver, type KeptConnection } from "./deliver.ts";

export type WebhookConfig = Pick<
  Config,
  | "WEBHOOK_ALLOW_PRIVATE"
  | "WEBHOOK_RETRY_SCHEDULE"
  | "WEBHOOK_RETRY_BUDGET_MS"
  | "WEBHOOK_TIMEOUT_MS"
  | "WEBHOOK_POLL_MS"
>;

/** What a worker reports, when metrics are on. */
export interface DeliveryCounter {
  (outcome: "delivered" | "failed"): void;
}

/** Endpoints one instance delivers to at once (each holds no connection while it waits). */
const ENDPOINTS_AT_ONCE = 4;
/** Successes written together (the cursor moved once for them all). */
const WRITE_EVERY = 20;
/** How often a worker seals what other processes left pending. */
const SEAL_EVERY_MS = 5_000;
/** Records read per query; an endpoint is given back after two such batches, for fairness. */
const RECORD_BATCH = 50;

/** The JSON body of one record's message: `{type, timestamp, data}`. */
export const messageOf = (r: AuditRecord) =>
  JSON.stringify({ type: r.action, timestamp: r.time, data: r });

/** The `webhook-id`: the record's id, made unique per endpoint, the same on every attempt. */
export const messageId = (endpointId: number, recordId: number) =>
  `msg_${endpointId}_${recordId}`;

export function startWebhookWorker(
  store: Store,
  config: WebhookConfig,
  log: Logger,
  counted?: DeliveryCounter,
): { stop(): Promise<void>; wake(): void } {
  const webhooks = store.webhooks;
  // A lease outlives the longest attempt (resolve, connect and answer each
  // bounded by the timeout) by a margin; it is renewed after each success.
  const leaseMs = 3 * config.WEBHOOK_TIMEOUT_MS + 5_000;
  const stopping = new AbortController();
  let woken = false;
  let wakeUp: (() => void) | undefined;
  const wake = () => {
    woken = true;
    wakeUp?.();
  };

  // One connection per endpoint, kept across its records in one run.
  const runEndpoint = async (c: ClaimedEndpoint) => {
    const kept: KeptConnection = {};
    try {
      await deliverRecords(c, kept);
    } finally {
      closeKept(kept);
    }
  };

  const deliverRecords = async (c: ClaimedEndpoint, kept: KeptConnection) => {
    // Successes not yet written: the cursor moves after several at once
    // (one statement for them all). A process that dies before writing
    // them sends them again: at least once.
    let done: (AttemptResult & { attempt: number })[] = [];
    let writtenAt = performance.now();
    const write = async () => {
      if (done.length === 0) return true;
      const last = done[done.length - 1].recordId;
      const kept = await webhooks.advance(c, last, leaseMs, done);
      done = [];
      writtenAt = performance.now();
      if (kept) c.cursor = last;
      return kept;
    };
    let sent = c.cursor;
    for (let batch = 0; batch < 2; batch++) {
      const { records, head } = await webhooks.recordsAfter(
        sent,
        c.actions,
        RECORD_BATCH,
      );
      for (const record of records) {
        const outcome = await deliver({
          url: c.url,
          secret: c.secret,
          id: messageId(c.id, record.id),
          body: messageOf(record),
        }, {
          timeoutMs: config.WEBHOOK_TIMEOUT_MS,
          allowPrivate: config.WEBHOOK_ALLOW_PRIVATE,
          signal: stopping.signal,
          kept,
        });
        // Stopping: this one is not recorded, and is sent again later.
        if (stopping.signal.aborted) {
          await write();
          return await webhooks.release(c);
        }
        const attempt: AttemptResult = {
          recordId: record.id,
          outcome: outcome.ok ? "delivered" : "failed",
          status: outcome.status,
          error: outcome.error,
          responseExcerpt: outcome.responseExcerpt,
          durationMs: outcome.durationMs,
        };
        counted?.(attempt.outcome);
        if (!outcome.ok) {
          if (!await write()) return;
          const next = await webhooks.failed(
            c,
            attempt,
            config.WEBHOOK_RETRY_SCHEDULE,
            config.WEBHOOK_RETRY_BUDGET_MS,
          );
          if (next === "disabled") {
            log.warn("webhook disabled: its retry budget ran out", {
              webhookId: c.id,
              recordId: record.id,
            });
          }
          return;
        }
        done.push({ ...attempt, attempt: c.failures + 1 });
        c.failures = 0;
        sent = record.id;
        if (
          done.length >= WRITE_EVERY ||
          performance.now() - writtenAt > leaseMs / 3
        ) {
          if (!await write()) return;
        }
      }
      if (records.length < RECORD_BATCH) {
        if (!await write()) return;
        // Whatever follows up to the head is not of its actions.
        if (head > c.cursor && await webhooks.advance(c, head, leaseMs)) {
          c.cursor = head;
        }
        break;
      }
    }
    if (!await write()) return;
    await webhooks.release(c);
  };

  const tick = async () => {
    const claimed = await webhooks.claim(
      ENDPOINTS_AT_ONCE,
      leaseMs,
      crypto.randomUUID(),
    );
    await Promise.all(
      claimed.map((c) =>
        runEndpoint(c).catch((cause) =>
          log.warn("webhook delivery failed", { webhookId: c.id, cause })
        )
      ),
    );
    return claimed.length;
  };

  let sealedAt = 0;
  let downSince: number | undefined;
  let loggedAt = 0;
  const loop = (async () => {
    while (!stopping.signal.aborted) {
      woken = false;
      let claimed = 0;
      try {
        // Records an ended process left unsealed wait for any seal; an
        // idle check costs one read of the (small) pending table.
        if (Date.now() - sealedAt > SEAL_EVERY_MS) {
          sealedAt = Date.now();
          await store.audit.seal();
        }
        claimed = await tick();
        if (downSince !== undefined) {
          log.info("webhook queue available again");
          downSince = undefined;
        }
      } catch (cause) {
        // Once when it starts, then once a minute: an outage must not
        // flood the log at the poll's rate.
        const now = Date.now();
        if (downSince === undefined || now - loggedAt >= 60_000) {
          log.warn("webhook queue unavailable", { cause });
          loggedAt = now;
        }
        downSince ??= now;
      }
      if (stopping.signal.aborted) break;
      if (claimed > 0 || woken) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, config.WEBHOOK_POLL_MS);
        wakeUp = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wakeUp = undefined;
    }
  })();

  store.audit.onSealed(wake);

  return {
    wake,
    async stop() {
      stopping.abort();
      wakeUp?.();
      await loop;
    },
  };
}
