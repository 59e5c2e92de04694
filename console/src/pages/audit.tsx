/**
 * The audit trail, live: the newest records from `GET /api/audit`, then
 * every record sealed after them from the change feed, as it happens.
 * Records are drawn in batches (at most one render per FLUSH_MS) and the
 * page keeps the newest SHOWN of them, so a burst of thousands never
 * freezes it; the count says how many arrived.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { auditStream, AuditStreamError } from "../../../clients/mod.ts";
import { ACTIONS, isAction } from "../actions.ts";
import {
  api,
  type AuditRecord,
  type Failure,
  send,
  UNREACHABLE,
} from "../api.ts";
import { href, navigate } from "../router.ts";
import { Field, Notice, Text, Time, Title } from "../ui.tsx";

/** Records kept on the page; older ones leave it (they stay in the trail). */
export const SHOWN = 500;
const FLUSH_MS = 100;
const HISTORY = 100;

type Feed = "connecting" | "live" | "paused" | "stopped";

export function AuditTrail({ query }: { query: URLSearchParams }) {
  const chosen = query.get("action");
  const action = isAction(chosen) ? chosen : undefined;
  const [records, setRecords] = useState<AuditRecord[]>([]);
  const [received, setReceived] = useState(0);
  const [feed, setFeed] = useState<Feed>("connecting");
  const [failure, setFailure] = useState<Failure>();
  const [round, setRound] = useState(0);
  const paused = useRef(false);
  const waiting = useRef<AuditRecord[]>([]);
  const [held, setHeld] = useState(0);

  useEffect(() => {
    const stop = new AbortController();
    let timer: number | undefined;
    let count = 0;
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
      batch.reverse();
      setRecords((had) => batch.concat(had).slice(0, SHOWN));
    };
    (async () => {
      setFeed("connecting");
      setFailure(undefined);
      setRecords([]);
      setReceived(0);
      const first = await send(() =>
        api.GET("/api/audit", {
          params: { query: { limit: HISTORY, ...(action ? { action } : {}) } },
          signal: stop.signal,
        }), stop.signal).catch(() => undefined);
      if (!first || stop.signal.aborted) return;
      if (!first.ok) {
        setFailure(first);
        setFeed("stopped");
        return;
      }
      setRecords(first.data);
      setFeed(paused.current ? "paused" : "live");
      try {
        for await (
          const record of auditStream({
            client: api,
            after: first.data[0]?.id ?? 0,
            actions: action ? [action] : undefined,
            signal: stop.signal,
          })
        ) {
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
  }, [action, round]);

  const togglePause = () => {
    paused.current = !paused.current;
    setFeed(paused.current ? "paused" : "live");
    if (!paused.current) {
      const batch = waiting.current.reverse();
      waiting.current = [];
      setHeld(0);
      setRecords((had) => batch.concat(had).slice(0, SHOWN));
    }
  };

  return (
    <>
      <Title>Audit trail</Title>
      <div class="toolbar">
        <Field label="Action" id="action">
          <select
            id="action"
            value={action ?? ""}
            onChange={(e) =>
              navigate(href("/audit", { action: e.currentTarget.value }), true)}
          >
            <option value="">All actions</option>
            {ACTIONS.map((a) => <option key={a} value={a}>{a}</option>)}
          </select>
        </Field>
        <button
          type="button"
          class="secondary"
          aria-pressed={feed === "paused"}
          disabled={feed === "stopped" || feed === "connecting"}
          onClick={togglePause}
        >
          {feed === "paused" ? "Resume" : "Pause"}
        </button>
      </div>
      <p class="feed-state" role="status">
        {feed === "connecting" && "Connecting…"}
        {feed === "live" && "Live: new records appear at the top."}
        {feed === "paused" && `Paused: ${held} new records wait.`}
        {feed === "stopped" && "The live feed stopped."}
        {received > 0 && ` ${received} received since opening`}
        {received > SHOWN
          ? `; the newest ${SHOWN} are shown.`
          : received > 0 && "."}
      </p>
      {failure && (
        <Notice
          failure={failure}
          onRetry={() => setRound((n) => n + 1)}
        />
      )}
      <AuditList records={records} />
    </>
  );
}

/** Audit records, newest first, each in one line of words. */
export function AuditList({ records }: { records: AuditRecord[] }) {
  if (records.length === 0) return null;
  return (
    <ol class="records">
      {records.map((r) => (
        <li key={r.id}>
          <span class="when">
            <Time iso={r.time} />
          </span>{" "}
          <code class="action">{r.action}</code>{" "}
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
            <code class="details">{JSON.stringify(r.details)}</code>
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
