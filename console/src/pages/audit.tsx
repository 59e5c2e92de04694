/**
 * The audit trail: a page of records from `GET /api/audit` with every
 * filter the API has (kept in the address, so a view can be linked), older
 * pages through its `before` cursor, and every record sealed since from the
 * change feed, at the top, as it happens (those the filters exclude left
 * out). Records are drawn in batches (at most one render per FLUSH_MS) and
 * the page keeps the newest SHOWN of them (more once older pages were
 * asked for), so a burst of thousands never freezes it; the count says how
 * many arrived.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { auditStream, AuditStreamError } from "../../../clients/mod.ts";
import {
  api,
  type AuditRecord,
  type Failure,
  nextCursor,
  send,
  UNREACHABLE,
} from "../api.ts";
import { Notice, Title } from "../ui.tsx";
import {
  apiFilters,
  closed,
  FILTER_NAMES,
  FilterForm,
  filtersOf,
  keeps,
} from "./audit-filters.tsx";
import { AuditTable } from "./audit-records.tsx";

/** Records kept on the page; older ones leave it (they stay in the trail). */
export const SHOWN = 500;
const FLUSH_MS = 250;
const HISTORY = 100;

type Feed = "connecting" | "live" | "paused" | "stopped" | "off";

export function AuditTrail({ query }: { query: URLSearchParams }) {
  const filters = filtersOf(query);
  const key = JSON.stringify(filters);
  const [records, setRecords] = useState<AuditRecord[]>([]);
  const [older, setOlder] = useState(false);
  const [loadingOlder, setLoadingOlder] = useState(false);
  const [olderFailure, setOlderFailure] = useState<Failure>();
  const [received, setReceived] = useState(0);
  const [feed, setFeed] = useState<Feed>("connecting");
  const [failure, setFailure] = useState<Failure>();
  const [round, setRound] = useState(0);
  const paused = useRef(false);
  const waiting = useRef<AuditRecord[]>([]);
  /** How many the page keeps: SHOWN, more once older pages were loaded. */
  const keep = useRef(SHOWN);
  const [held, setHeld] = useState(0);

  /** Newer records on top; what falls past `keep` leaves, and "Older" brings it back. */
  const prepend = (batch: AuditRecord[]) =>
    setRecords((had) => {
      const seen = new Set(had.map((r) => r.id));
      const all = batch.filter((r) => !seen.has(r.id)).concat(had);
      if (all.length > keep.current) setOlder(true);
      return all.slice(0, keep.current);
    });

  useEffect(() => {
    const stop = new AbortController();
    let timer: number | undefined;
    let count = 0;
    keep.current = SHOWN;
    const flush = () => {
      timer = undefined;
      setReceived(count);
      if (paused.current) {
        setHeld(waiting.current.length);
        return;
      }
      const batch = waiting.current;
      waiting.current = [];
      // Newest first; the feed sends oldest first.
      prepend(batch.reverse());
    };
    (async () => {
      setFeed("connecting");
      setFailure(undefined);
      setOlderFailure(undefined);
      setRecords([]);
      setOlder(false);
      setReceived(0);
      const live = !closed(filters);
      // The newest record of all, before the filtered page is read: the
      // feed starts after it, so nothing sealed meanwhile is missed (what
      // both bring is shown once).
      const head = live
        ? await send(() =>
          api.GET("/api/audit", {
            params: { query: { limit: 1 } },
            signal: stop.signal,
          }), stop.signal).catch(() => undefined)
        : undefined;
      if (stop.signal.aborted) return;
      if (head && !head.ok) {
        setFailure(head);
        setFeed("stopped");
        return;
      }
      const first = await send(() =>
        api.GET("/api/audit", {
          params: { query: { limit: HISTORY, ...apiFilters(filters) } },
          signal: stop.signal,
        }), stop.signal).catch(() => undefined);
      if (!first || stop.signal.aborted) return;
      if (!first.ok) {
        setFailure(first);
        setFeed("stopped");
        return;
      }
      setRecords(first.data);
      setOlder(nextCursor(first.headers, "before") !== undefined);
      if (!live || !head?.ok) {
        setFeed("off");
        return;
      }
      setFeed(paused.current ? "paused" : "live");
      try {
        for await (
          const record of auditStream({
            client: api,
            after: head.data[0]?.id ?? 0,
            actions: filters.action ? [filters.action] : undefined,
            signal: stop.signal,
          })
        ) {
          if (!keeps(filters, record)) continue;
          count++;
          waiting.current.push(record);
          // While paused only the newest SHOWN wait.
          if (waiting.current.length > 2 * SHOWN) {
            waiting.current = waiting.current.slice(-SHOWN);
          }
          timer ??= setTimeout(flush, FLUSH_MS);
        }
      } catch (e) {
        if (stop.signal.aborted) return;
        setFailure(
          e instanceof AuditStreamError
            ? { ok: false, status: e.status, error: e.error }
            : { ok: false, status: 0, error: UNREACHABLE },
        );
        setFeed("stopped");
      }
    })();
    return () => {
      stop.abort();
      clearTimeout(timer);
      waiting.current = [];
    };
  }, [key, round]);

  const togglePause = () => {
    paused.current = !paused.current;
    setFeed(paused.current ? "paused" : "live");
    if (!paused.current) {
      const batch = waiting.current.reverse();
      waiting.current = [];
      setHeld(0);
      prepend(batch);
    }
  };

  /** The page after the last record shown: `before` its id, the same filters. */
  const loadOlder = async () => {
    const last = records.at(-1);
    if (!last) return;
    setLoadingOlder(true);
    setOlderFailure(undefined);
    const page = await send(() =>
      api.GET("/api/audit", {
        params: {
          query: { limit: HISTORY, before: last.id, ...apiFilters(filters) },
        },
      })
    );
    setLoadingOlder(false);
    if (!page.ok) {
      setOlderFailure(page);
      return;
    }
    setRecords((had) => {
      const all = had.concat(page.data.filter((r) => r.id < last.id));
      keep.current = Math.max(keep.current, all.length);
      return all;
    });
    setOlder(nextCursor(page.headers, "before") !== undefined);
  };

  const filtered = FILTER_NAMES.some((n) => filters[n] !== undefined);
  return (
    <>
      <Title>Audit trail</Title>
      <FilterForm key={key} filters={filters} />
      <div class="toolbar">
        <p class="feed-state" role="status">
          {feed === "connecting" && "Connecting…"}
          {feed === "live" && "Live: new records appear at the top."}
          {feed === "paused" && `Paused: ${held} new records wait.`}
          {feed === "stopped" && "The live feed stopped."}
          {feed === "off" &&
            "Not live: the time filter ends in the past."}
          {received > 0 && ` ${received} received since opening`}
          {received > SHOWN
            ? `; the newest ${SHOWN} are shown.`
            : received > 0 && "."}
        </p>
        {feed !== "off" && (
          <button
            type="button"
            class="secondary"
            aria-pressed={feed === "paused"}
            disabled={feed === "stopped" || feed === "connecting"}
            onClick={togglePause}
          >
            {feed === "paused" ? "Resume" : "Pause"}
          </button>
        )}
      </div>
      {failure && (
        <Notice
          failure={failure}
          onRetry={() => setRound((n) => n + 1)}
        />
      )}
      {!failure && feed !== "connecting" && records.length === 0 && (
        <p class="muted">
          {filtered ? "No records match these filters." : "No records."}
        </p>
      )}
      <AuditTable records={records} />
      {olderFailure && <Notice failure={olderFailure} onRetry={loadOlder} />}
      {older && records.length > 0 && (
        <div class="pager">
          <button
            type="button"
            class="secondary"
            disabled={loadingOlder}
            onClick={loadOlder}
          >
            {loadingOlder ? "Loading older records…" : "Older records"}
          </button>
        </div>
      )}
    </>
  );
}
