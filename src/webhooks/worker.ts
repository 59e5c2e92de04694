/**
 * The delivery worker of one instance. Every instance runs one; they share
 * the queue in PostgreSQL. A worker leases due endpoints (the endpoint row,
 * FOR UPDATE SKIP LOCKED, then a lease that outlives the lock) and delivers
 * each one's records in id order, one at a time: a record that fails holds
 * back the later ones of its endpoint until it succeeds, or until the
 * endpoint's retry budget runs out and it is disabled. The cursor moves
 * only after a 2xx, so a worker killed mid-delivery loses nothing: its
 * lease runs out and any instance sends that record again (at least once).
 *
 * Each leased endpoint is worked on its own: the worker goes on leasing
 * due endpoints while others wait for their receivers, so a slow or
 * hanging receiver holds up only its own queue. A waiting endpoint holds
 * no database connection. The worker looks for due endpoints on each seal:
 * this instance's own, every other process's through PostgreSQL's
 * `audit_sealed` notification (a PostgreSQL server; the embedded database
 * belongs to this process alone), and every WEBHOOK_POLL_MS in case a
 * notification was missed or a retry fell due.
 */
import type { AuditRecord } from "../db/audit-trail.ts";
import type { Store } from "../db/store.ts";
import type { AttemptResult, ClaimedEndpoint } from "../db/webhook-queue.ts";
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
  | "WEBHOOK_ENDPOINTS_AT_ONCE"
>;

/** What a worker reports, when metrics are on. */
export interface DeliveryCounter {
  (outcome: "delivered" | "failed"): void;
}

/** A kept connection to an endpoint not delivered to for this long is closed. */
const KEEP_CONNECTION_MS = 60_000;
/** The least time between two looks for due endpoints that a wake asks for. */
const CLAIM_GAP_MS = 25;
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

/** The `webhook-id` of a test event: unique per endpoint, apart from every record's. */
export const testMessageId = (endpointId: number, testId: number) =>
  `msg_${endpointId}_test_${testId}`;

/**
 * The JSON body of a test event: `{type: "webhook.test", timestamp, data}`,
 * `data` naming the endpoint and the delivery (the 202's id).
 */
export const testMessageOf = (endpointId: number, testId: number) =>
  JSON.stringify({
    type: "webhook.test",
    timestamp: new Date().toISOString(),
    data: { webhookId: endpointId, deliveryId: testId },
  });

export interface WorkerOptions {
  /** Counts attempts, when metrics are on. */
  counted?: DeliveryCounter;
  /** Wake on other processes' seals (a PostgreSQL server, not the embedded database). */
  listen?: boolean;
}

export function startWebhookWorker(
  store: Store,
  config: WebhookConfig,
  log: Logger,
  { counted, listen = false }: WorkerOptions = {},
): { stop(): Promise<void>; wake(): void } {
  const queue = store.webhookQueue;
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

  /** Endpoints under way, by id. */
  const running = new Map<number, Promise<void>>();
  /** One connection per endpoint, kept across its records and runs. */
  const connections = new Map<number, { kept: KeptConnection; at: number }>();

  const runEndpoint = (c: ClaimedEndpoint) => {
    const connection = connections.get(c.id) ?? { kept: {}, at: 0 };
    connections.set(c.id, connection);
    const run = deliverRecords(c, connection.kept)
      .catch((cause) =>
        log.warn("webhook delivery failed", { webhookId: c.id, cause })
      )
      .finally(() => {
        connection.at = performance.now();
        running.delete(c.id);
        // More may be due (its next batch, a retry): leased again at once.
        wake();
      });
    running.set(c.id, run);
  };

  const closeIdleConnections = () => {
    const now = performance.now();
    for (const [id, { kept, at }] of connections) {
      if (!running.has(id) && now - at > KEEP_CONNECTION_MS) {
        closeKept(kept);
        connections.delete(id);
      }
    }
  };

  /**
   * Sends the endpoint's waiting test events, each once, on the endpoint's
   * connection and with its signature, as records are sent: false when
   * the worker stops or its lease is lost meanwhile.
   */
  const deliverTests = async (c: ClaimedEndpoint, kept: KeptConnection) => {
    for (const test of await queue.pendingTests(c.id)) {
      const outcome = await deliver({
        url: c.url,
        secret: c.secret,
        id: testMessageId(c.id, test.id),
        body: testMessageOf(c.id, test.id),
      }, {
        timeoutMs: config.WEBHOOK_TIMEOUT_MS,
        allowPrivate: config.WEBHOOK_ALLOW_PRIVATE,
        signal: stopping.signal,
        kept,
      });
      // Stopping: not written, so it waits for the next worker.
      if (stopping.signal.aborted) return false;
      const result = outcome.ok ? "delivered" : "failed";
      counted?.(result);
      const written = await queue.tested(c, test.id, {
        outcome: result,
        status: outcome.status,
        error: outcome.error,
        responseExcerpt: outcome.responseExcerpt,
        durationMs: outcome.durationMs,
      });
      if (!written) return false;
    }
    return true;
  };

  const deliverRecords = async (c: ClaimedEndpoint, kept: KeptConnection) => {
    if (!await deliverTests(c, kept)) return await queue.release(c);
    // Claimed for its tests alone: its records wait for their own time.
    if (!c.recordsDue) return await queue.release(c);
    // Successes not yet written: the cursor moves after several at once
    // (one statement for them all). A process that dies before writing
    // them sends them again: at least once.
    let done: (AttemptResult & { attempt: number })[] = [];
    let writtenAt = performance.now();
    const write = async () => {
      if (done.length === 0) return true;
      const last = done[done.length - 1].recordId;
      const kept = await queue.advance(c, last, leaseMs, done);
      done = [];
      writtenAt = performance.now();
      if (kept) c.cursor = last;
      return kept;
    };
    let sent = c.cursor;
    for (let batch = 0; batch < 2; batch++) {
      const { records, head } = await queue.recordsAfter(
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
          return await queue.release(c);
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
          const next = await queue.failed(
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
        if (head > c.cursor && await queue.advance(c, head, leaseMs)) {
          c.cursor = head;
        }
        break;
      }
    }
    if (!await write()) return;
    await queue.release(c);
  };

  /** Leases what is due, as far as there is room, and starts each: how many. */
  const tick = async () => {
    // Each endpoint in flight waits on its receiver, not on this process,
    // and holds no database connection while it waits.
    const room = config.WEBHOOK_ENDPOINTS_AT_ONCE - running.size;
    if (room <= 0) return 0;
    const claimed = await queue.claim(room, leaseMs, crypto.randomUUID());
    for (const c of claimed) runEndpoint(c);
    return claimed.length;
  };

  // Other processes' seals, through a connection of its own (shared with
  // the change feed's). A failed start is tried again at the next poll.
  let listener: Promise<{ unlisten(): Promise<void> } | undefined> | undefined;
  const listenForSeals = () => {
    if (!listen || listener) return;
    listener = store.audit.listenSealed(wake, wake).catch((cause) => {
      log.warn("listening for audit seals failed", { cause });
      listener = undefined;
      return undefined;
    });
  };

  let sealedAt = 0;
  let downSince: number | undefined;
  let loggedAt = 0;
  const loop = (async () => {
    while (!stopping.signal.aborted) {
      woken = false;
      let claimed = 0;
      listenForSeals();
      closeIdleConnections();
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
      // Leased some: more may be due. Full: a run's end wakes the loop.
      if (claimed > 0 && running.size < config.WEBHOOK_ENDPOINTS_AT_ONCE) {
        continue;
      }
      if (woken) {
        // Under a stream of seals (each instance's, every few ms under
        // load) one look serves all those of a short span.
        await new Promise((resolve) => setTimeout(resolve, CLAIM_GAP_MS));
        continue;
      }
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
      // What is under way ends at once (each attempt reports the stop).
      for (const id of running.keys()) {
        const connection = connections.get(id);
        if (connection) closeKept(connection.kept);
      }
      await loop;
      await Promise.all(running.values());
      for (const { kept } of connections.values()) closeKept(kept);
      const listening = await listener;
      await listening?.unlisten().catch(() => {});
    },
  };
}
