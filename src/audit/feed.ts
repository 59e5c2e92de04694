/**
 * The change feed behind GET /api/audit/stream: one reader of new sealed
 * records per instance, fanning each out in memory to every open stream.
 *
 * The reader wakes on each seal: this instance's own (`onSealed`), every
 * instance's through PostgreSQL's `audit_sealed` notification (migration
 * 013), and once every `catchUpMs` in case a notification was missed (a
 * listening connection that reconnected, the embedded database, which has
 * no second connection to listen on). Each wake is one query for all the
 * streams of the instance; between them a stream holds no connection.
 *
 * A stream that starts behind the reader (a resume by its last id) reads its
 * own backlog in batches first, at its reader's pace, then joins the others.
 */
import type { AuditRecord } from "../db/audit-trail.ts";
import type { InFlight } from "../db/in-flight.ts";
import type { Logger } from "../log.ts";
import type { AuditAction } from "./actions.ts";

/** What the feed reads: the audit store's feed queries. */
export interface FeedSource {
  after(
    after: number,
    upTo: number,
    limit: number,
    actions?: readonly AuditAction[],
  ): Promise<AuditRecord[]>;
  listenSealed(
    sealed: () => void,
    listening: () => void,
  ): Promise<{ unlisten(): Promise<void> }>;
  onSealed(listener: () => void): void;
}

export interface FeedOptions {
  source: FeedSource;
  /** Listen for other instances' seals (a PostgreSQL server, not the embedded database). */
  listen: boolean;
  log: Logger;
  /** Open streams, for the metrics. */
  gauge?: InFlight;
  /** How often the reader looks for records without a notification. */
  catchUpMs?: number;
  /** Records per query of the shared reader. */
  batch?: number;
  /** Records per query of a stream's own backlog (held while its client reads them). */
  backlogBatch?: number;
  /** Bytes queued for one stream past which its client is dropped. */
  maxBufferBytes?: number;
}

export interface StreamOptions {
  /** Whose stream it is: a user has at most STREAMS_PER_USER_MAX open. */
  userId: number;
  /** Records after this id (a resume's last id, or the head for only new ones). */
  after: number;
  /** The chain's head id when the stream was asked for. */
  head: number;
  /** Only these actions; all when undefined. */
  actions?: readonly AuditAction[];
  /** Only the records this passes (a limited reader's reach); all when undefined. */
  shows?: (record: AuditRecord) => boolean;
  /** A comment line this often. */
  heartbeatMs: number;
  /** How often `allowed` is asked again. */
  recheckMs: number;
  /** Whether the caller may still read the feed; false ends the stream. */
  allowed(): Promise<boolean>;
}

export interface AuditFeed {
  /** A text/event-stream body of the records after `options.after`. */
  open(options: StreamOptions): ReadableStream<Uint8Array>;
  /**
   * Whether the user may open another stream on this instance: fewer than
   * STREAMS_PER_USER_MAX are open. Asked in the same turn as `open`, so no
   * two requests both pass at the limit.
   */
  mayOpen(userId: number): boolean;
  /** Ends every open stream and stops reading: for shutdown. */
  close(): Promise<void>;
}

export const FEED_BUFFER_BYTES = 1024 * 1024;
/** Open streams of one user on one instance, at most: each holds timers and a buffer. */
export const STREAMS_PER_USER_MAX = 100;
const HIGHEST_ID = Number.MAX_SAFE_INTEGER;

const encoder = new TextEncoder();

/**
 * One record as one Server-Sent Event: its id, its action and its JSON as
 * GET /api/audit serialises it (JSON.stringify, which leaves no line break
 * inside the data).
 */
export const sseEvent = (r: AuditRecord) =>
  encoder.encode(
    `id: ${r.id}\nevent: ${r.action}\ndata: ${JSON.stringify(r)}\n\n`,
  );

/**
 * What a stream opens with: reconnect after a second (the EventSource
 * default is about three), and its starting position as the last event id,
 * so that a client that saw no record yet resumes from there, not from
 * whatever is new when it reconnects (an `id:` without data sets it
 * without an event).
 */
const opening = (after: number) =>
  encoder.encode(`retry: 1000\nid: ${after}\n\n`);
const HEARTBEAT = encoder.encode(":\n\n");

const SLOW =
  "change feed stream dropped: more than 1 MiB waited for its client (it resumes by its last id)";

/**
 * The error a cut stream ends with. Deno prints a response body's error on
 * stderr: one line, without a stack that says nothing more.
 */
const oneLine = (message: string) =>
  Object.assign(new Error(message), { stack: message });

/** A stream that joined the shared reader. */
interface Subscriber {
  /** The last record id it was handed or passed over. */
  pos: number;
  actions?: ReadonlySet<string>;
  shows?: (record: AuditRecord) => boolean;
  deliver(id: number, event: () => Uint8Array): void;
}

export function createAuditFeed(options: FeedOptions): AuditFeed {
  const {
    source,
    log,
    catchUpMs = 1000,
    batch = 500,
    backlogBatch = 100,
    maxBufferBytes = FEED_BUFFER_BYTES,
  } = options;
  const live = new Set<Subscriber>();
  /** Streams open, joined or still reading their backlog. */
  let members = 0;
  /** Ends every open stream (joined or still reading its backlog). */
  const open = new Set<() => void>();
  /** The newest record the reader handed to the live streams. */
  let lastId = 0;
  /** Grows when the reader restarts from a new position: older reads are void. */
  let generation = 0;
  let reading: Promise<void> | undefined;
  let again = false;
  let timer: ReturnType<typeof setInterval> | undefined;
  let listener: Promise<{ unlisten(): Promise<void> } | undefined> | undefined;
  let closed = false;

  const read = async () => {
    for (;;) {
      const from = lastId;
      const seen = generation;
      const records = await source.after(from, HIGHEST_ID, batch);
      if (seen !== generation) continue;
      for (const record of records) {
        let bytes: Uint8Array | undefined;
        const event = () => bytes ??= sseEvent(record);
        for (const s of live) {
          if (record.id <= s.pos) continue;
          if (
            (s.actions && !s.actions.has(record.action)) ||
            (s.shows && !s.shows(record))
          ) s.pos = record.id;
          else s.deliver(record.id, event);
        }
      }
      if (records.length > 0) {
        lastId = Math.max(lastId, records[records.length - 1].id);
      }
      if (records.length < batch) return;
    }
  };

  /** Reads what is new now, or once more after the read under way. */
  const wake = () => {
    if (live.size === 0 || closed) return;
    if (reading) {
      again = true;
      return;
    }
    reading = read()
      .catch((cause) => log.warn("change feed read failed", { cause }))
      .finally(() => {
        reading = undefined;
        if (again) {
          again = false;
          wake();
        }
      });
  };

  let hooked = false;

  const join = (s: Subscriber) => {
    if (!hooked) {
      // On first use: an app is built without a database too (the document).
      hooked = true;
      source.onSealed(wake);
    }
    if (live.size === 0) {
      timer = setInterval(wake, catchUpMs);
      Deno.unrefTimer(timer);
    }
    live.add(s);
    if (options.listen && !listener) {
      listener = source.listenSealed(wake, wake).catch((cause) => {
        log.warn("listening for audit seals failed", { cause });
        listener = undefined;
        return undefined;
      });
    }
    wake();
  };

  const leave = (s: Subscriber) => {
    if (!live.delete(s) || live.size > 0) return;
    clearInterval(timer);
    timer = undefined;
  };

  /** Open streams per user id. */
  const streamsOf = new Map<number, number>();

  return {
    mayOpen: (userId) => (streamsOf.get(userId) ?? 0) < STREAMS_PER_USER_MAX,

    open(o) {
      streamsOf.set(o.userId, (streamsOf.get(o.userId) ?? 0) + 1);
      let controller!: ReadableStreamDefaultController<Uint8Array>;
      let ended = false;
      let wantMore: (() => void) | undefined;
      const timers: ReturnType<typeof setInterval>[] = [];
      const sub: Subscriber = {
        pos: o.after,
        actions: o.actions && new Set(o.actions),
        shows: o.shows,
        deliver(id, event) {
          sub.pos = id;
          controller.enqueue(event());
          // A client that stopped reading: dropped, not buffered without
          // end. It resumes by its last id.
          if (controller.desiredSize! < 0) end("error", SLOW);
        },
      };
      /** `close` ends it cleanly, `error` aborts it, `cancel` is the client's. */
      const end = (how: "close" | "error" | "cancel", reason?: string) => {
        if (ended) return;
        ended = true;
        const left = streamsOf.get(o.userId)! - 1;
        if (left === 0) streamsOf.delete(o.userId);
        else streamsOf.set(o.userId, left);
        leave(sub);
        if (open.delete(abort)) members--;
        for (const t of timers) clearInterval(t);
        options.gauge?.dec();
        wantMore?.();
        if (how === "close") controller.close();
        if (how === "error") controller.error(oneLine(reason!));
      };
      // At shutdown: a stream whose client has read everything ends
      // cleanly; one with bytes still queued is cut, so that no client that
      // stopped reading holds the shutdown up.
      const abort = () =>
        controller.desiredSize === maxBufferBytes
          ? end("close")
          : end("error", "change feed stream cut at shutdown");

      /**
       * Records older than the reader's, then the live ones. At the
       * client's pace: each record is queued once the client has read what
       * came before it down to the buffer's bound, so a backlog never
       * counts as a slow reader.
       */
      const backlog = async () => {
        while (!ended) {
          if (sub.pos >= lastId) return join(sub);
          const upTo = lastId;
          const records = await source.after(
            sub.pos,
            upTo,
            backlogBatch,
            o.actions,
          );
          for (const r of records) {
            if (controller.desiredSize! <= 0) {
              await new Promise<void>((resolve) => wantMore = resolve);
              wantMore = undefined;
            }
            if (ended) return;
            if (!o.shows || o.shows(r)) controller.enqueue(sseEvent(r));
            sub.pos = r.id;
          }
          if (records.length < backlogBatch) sub.pos = Math.max(sub.pos, upTo);
          if (controller.desiredSize! <= 0) {
            await new Promise<void>((resolve) => wantMore = resolve);
            wantMore = undefined;
          }
        }
      };

      const body = new ReadableStream<Uint8Array>({
        start(c) {
          controller = c;
          options.gauge?.inc();
          if (closed) {
            end("close");
            return;
          }
          open.add(abort);
          if (members++ === 0) {
            // Nothing is read for anyone: the reader starts at the head
            // (older reads under way are void), and this stream reads what
            // lies before it on its own, at its client's pace.
            generation++;
            lastId = o.head;
          }
          c.enqueue(opening(o.after));
          timers.push(setInterval(() => {
            if (ended) return;
            c.enqueue(HEARTBEAT);
            // Only a joined stream is judged: a backlog waits for its reader.
            if (live.has(sub) && c.desiredSize! < 0) end("error", SLOW);
          }, o.heartbeatMs));
          timers.push(setInterval(() => {
            o.allowed().then(
              (ok) => ok || end("close"),
              // Unknown for now (the database is away): asked again next time.
              () => {},
            );
          }, o.recheckMs));
          backlog().catch((cause) => {
            log.warn("change feed backlog read failed", { cause });
            end("error", "change feed stream cut: its backlog read failed");
          });
        },
        pull() {
          wantMore?.();
        },
        cancel() {
          end("cancel");
        },
      }, { highWaterMark: maxBufferBytes, size: (chunk) => chunk.byteLength });
      return body;
    },

    async close() {
      closed = true;
      for (const abort of [...open]) abort();
      clearInterval(timer);
      const listening = await listener;
      await listening?.unlisten().catch(() => {});
    },
  };
}
