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
import { Component } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { auditStream, AuditStreamError } from "../../../clients/mod.ts";
import { actionLabel, ACTIONS, isAction, LABELS } from "../actions.ts";
import { describeDetails } from "../audit-details.ts";
import {
  api,
  type AuditAction,
  type AuditRecord,
  type Failure,
  nextCursor,
  send,
  UNREACHABLE,
} from "../api.ts";
import { href, navigate } from "../router.ts";
import { Field, Notice, onSubmit, Text, Time, Title } from "../ui.tsx";

/** Records kept on the page; older ones leave it (they stay in the trail). */
export const SHOWN = 500;
const FLUSH_MS = 250;
const HISTORY = 100;

type Feed = "connecting" | "live" | "paused" | "stopped" | "off";

/** The API's filters, as the address holds them. */
interface Filters {
  action?: AuditAction;
  actorId?: string;
  targetId?: string;
  /** ISO 8601, as the API takes it. */
  since?: string;
  until?: string;
}

const FILTER_NAMES = [
  "action",
  "actorId",
  "targetId",
  "since",
  "until",
] as const;

function filtersOf(query: URLSearchParams): Filters {
  const action = query.get("action");
  const text = (name: string) => query.get(name) || undefined;
  return {
    action: isAction(action) ? action : undefined,
    actorId: text("actorId"),
    targetId: text("targetId"),
    since: text("since"),
    until: text("until"),
  };
}

/** Whether a record sealed after the page opened is one the filters keep. */
function keeps(f: Filters, r: AuditRecord) {
  return (!f.action || r.action === f.action) &&
    (!f.actorId || String(r.actor?.id) === f.actorId) &&
    (!f.targetId || String(r.target?.id) === f.targetId) &&
    (!f.since || r.time >= new Date(f.since).toISOString()) &&
    (!f.until || r.time < new Date(f.until).toISOString());
}

/** An `until` already past (or unreadable): no new record can match. */
const closed = (f: Filters) =>
  f.until !== undefined && !(new Date(f.until).getTime() > Date.now());

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

/** The filters as the API's query takes them (ids as numbers). */
function apiFilters(f: Filters) {
  const id = (s: string | undefined) =>
    s === undefined ? undefined : (Number(s) as number);
  return Object.fromEntries(
    Object.entries({
      action: f.action,
      // A value the API refuses is sent as it is, so its 400 names it.
      actorId: f.actorId && /^\d+$/.test(f.actorId) ? id(f.actorId) : f.actorId,
      targetId: f.targetId && /^\d+$/.test(f.targetId)
        ? id(f.targetId)
        : f.targetId,
      since: f.since,
      until: f.until,
    }).filter(([, v]) => v !== undefined),
  ) as {
    action?: AuditAction;
    actorId?: number;
    targetId?: number;
    since?: string;
    until?: string;
  };
}

/** `2026-11-25T10:00:00.000Z` as a datetime-local value in the reader's zone. */
function localValue(iso: string | undefined): string {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${
    pad(d.getHours())
  }:${pad(d.getMinutes())}`;
}

/** A datetime-local value (the reader's zone) as the API's ISO time. */
function isoValue(local: string): string | undefined {
  if (!local) return undefined;
  const d = new Date(local);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

function FilterForm({ filters }: { filters: Filters }) {
  const [actorId, setActorId] = useState(filters.actorId ?? "");
  const [targetId, setTargetId] = useState(filters.targetId ?? "");
  const [since, setSince] = useState(localValue(filters.since));
  const [until, setUntil] = useState(localValue(filters.until));
  const apply = (change: Partial<Filters> = {}) =>
    navigate(
      href("/audit", {
        action: filters.action,
        actorId: actorId.trim() || undefined,
        targetId: targetId.trim() || undefined,
        since: isoValue(since),
        until: isoValue(until),
        ...change,
      }),
    );
  const any = FILTER_NAMES.some((n) => filters[n] !== undefined);
  return (
    <form
      class="filters audit-filters"
      role="search"
      aria-label="Filter the audit trail"
      onSubmit={onSubmit(() => apply())}
    >
      <Field label="Action" id="action">
        <select
          id="action"
          value={filters.action ?? ""}
          onChange={(e) =>
            apply({
              action: (e.currentTarget.value || undefined) as
                | AuditAction
                | undefined,
            })}
        >
          <option value="">All actions</option>
          {ACTIONS.map((a) => <option key={a} value={a}>{LABELS[a]}</option>)}
        </select>
      </Field>
      <Field label="Actor (user id)" id="actorId">
        <input
          id="actorId"
          inputMode="numeric"
          autoComplete="off"
          value={actorId}
          onInput={(e) => setActorId(e.currentTarget.value)}
        />
      </Field>
      <Field label="Target (user id)" id="targetId">
        <input
          id="targetId"
          inputMode="numeric"
          autoComplete="off"
          value={targetId}
          onInput={(e) => setTargetId(e.currentTarget.value)}
        />
      </Field>
      <Field label="From" id="since">
        <input
          id="since"
          type="datetime-local"
          value={since}
          onInput={(e) => setSince(e.currentTarget.value)}
        />
      </Field>
      <Field label="Before" id="until">
        <input
          id="until"
          type="datetime-local"
          value={until}
          onInput={(e) => setUntil(e.currentTarget.value)}
        />
      </Field>
      <div class="actions">
        <button type="submit">Apply filters</button>
        {any && (
          <a class="button secondary" href={href("/audit")}>Clear filters</a>
        )}
      </div>
    </form>
  );
}

/** Audit records, newest first, one row each. */
export function AuditTable({ records }: { records: AuditRecord[] }) {
  if (records.length === 0) return null;
  return (
    <table class="list audit">
      <thead>
        <tr>
          <th scope="col">Time</th>
          <th scope="col">Action</th>
          <th scope="col">Actor</th>
          <th scope="col">Target</th>
          <th scope="col">Client address</th>
          <th scope="col">Details</th>
        </tr>
      </thead>
      <tbody>
        {records.map((r) => <AuditRow key={r.id} record={r} />)}
      </tbody>
    </table>
  );
}

/**
 * One record's row. A record never changes, so its row is drawn once: a
 * burst redraws only the rows it adds, not the hundreds already shown.
 */
class AuditRow extends Component<{ record: AuditRecord }> {
  override shouldComponentUpdate(next: { record: AuditRecord }) {
    return next.record !== this.props.record;
  }

  override render() {
    const r = this.props.record;
    return (
      <tr data-id={r.id}>
        <td data-label="Time" class="when">
          <Time iso={r.time} />
        </td>
        <td data-label="Action">
          <span class="action" data-action={r.action}>
            {actionLabel(r.action)}
          </span>
        </td>
        <td data-label="Actor">
          <span>
            {r.actor ? <Party party={r.actor} /> : <NoActor record={r} />}
            {r.via && (
              <>
                {" "}
                <span class="via">via {r.via}</span>
              </>
            )}
          </span>
        </td>
        <td data-label="Target">
          {r.target
            ? <Party party={r.target} />
            : <span class="muted">none</span>}
        </td>
        <td data-label="Client address">
          {r.clientAddress
            ? <span class="mono wrap">{r.clientAddress}</span>
            : <span class="muted">none</span>}
        </td>
        <td data-label="Details" class="details">
          <Text>{describeDetails(r)}</Text>
        </td>
      </tr>
    );
  }
}

/** Audit records, newest first, each in one line of words (a user's own trail). */
export function AuditList({ records }: { records: AuditRecord[] }) {
  if (records.length === 0) return null;
  return (
    <ol class="records">
      {records.map((r) => (
        <li key={r.id}>
          <span class="when">
            <Time iso={r.time} />
          </span>{" "}
          <code class="action" title={actionLabel(r.action)}>{r.action}</code>
          {" "}
          <span class="who">
            {r.actor ? <Party party={r.actor} /> : <NoActor record={r} />}
            {r.target && (
              <>
                {" → "}
                <Party party={r.target} />
              </>
            )}
          </span>
          {r.via && <span class="via">via {r.via}</span>}
          {Object.keys(r.details).length > 0 && (
            <span class="details">{describeDetails(r)}</span>
          )}
          <span class="visually-hidden">Record {r.id}</span>
        </li>
      ))}
    </ol>
  );
}

/**
 * Who acted when no person did: the service itself (no door), a SCIM
 * connection (named in its details), or no one signed in (a login attempt).
 */
function NoActor({ record }: { record: AuditRecord }) {
  if (record.via === null) return <span class="muted">service</span>;
  const connection = record.details.connection as
    | { name?: unknown }
    | undefined;
  if (record.via === "scim" && typeof connection?.name === "string") {
    return (
      <span>
        connection <Text>{connection.name}</Text>
      </span>
    );
  }
  return <span class="muted">anonymous</span>;
}

function Party({ party }: { party: { id: number; username: string } }) {
  return (
    <a href={href(`/users/${party.id}`)}>
      <Text>{party.username}</Text>
    </a>
  );
}
