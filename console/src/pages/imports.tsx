/**
 * Imports: a file of users (NDJSON or CSV) uploaded to `POST /api/imports`,
 * then its job followed until it ends (polled), stopped on request, with
 * the records it refused. The recent jobs come from the audit trail
 * (`import.started`), as the API keeps no list of them.
 */
import { useEffect, useState } from "preact/hooks";
import type { components } from "../../../clients/mod.ts";
import { api, type Failure, type Reply, send } from "../api.ts";
import { href, navigate } from "../router.ts";
import {
  ConfirmButton,
  Field,
  Notice,
  onSubmit,
  Text,
  Time,
  Title,
  useLoad,
} from "../ui.tsx";

type ImportStatus = components["schemas"]["ImportStatus"];
type ImportError = components["schemas"]["ImportError"];
type OnConflict = "fail" | "skip" | "update";

/** How often a running job is asked for its progress. */
const POLL_MS = 500;
/** Refused records shown on the page; a file may have a million. */
const ERRORS_SHOWN = 1000;
const RECENT = 10;

const MEDIA_TYPES: Record<string, string> = {
  csv: "text/csv",
  ndjson: "application/x-ndjson",
  jsonl: "application/x-ndjson",
};

/**
 * The body's type, from the file's extension (browsers know no type for
 * .ndjson), else as the browser names it: the API judges what it gets.
 */
export function mediaTypeOf(file: File): string {
  const extension = file.name.split(".").pop()?.toLowerCase() ?? "";
  return MEDIA_TYPES[extension] ?? (file.type || "application/octet-stream");
}

const running = (job: ImportStatus) =>
  job.status === "queued" || job.status === "running";

export function Imports() {
  return (
    <>
      <Title>Imports</Title>
      <p>
        Users from a file: NDJSON (one JSON object a line, as an export writes
        them) or CSV with a header row, fields <code>username</code>,{" "}
        <code>name</code>, <code>email</code> and optionally <code>role</code>,
        {" "}
        <code>password</code> or <code>passwordHash</code>,{" "}
        <code>externalId</code>, <code>createdAt</code>.
      </p>
      <Upload />
      <RecentImports />
    </>
  );
}

function Upload() {
  const [file, setFile] = useState<File>();
  const [dryRun, setDryRun] = useState(false);
  const [onConflict, setOnConflict] = useState<OnConflict>("fail");
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<Failure>();
  const upload = async () => {
    if (!file) return;
    setBusy(true);
    setFailure(undefined);
    const answer = await send(() =>
      api.POST("/api/imports", {
        params: { query: { onConflict, ...(dryRun ? { dryRun } : {}) } },
        // The file as it is, streamed by the browser: no JSON encoding.
        body: file as never,
        bodySerializer: (body: unknown) => body as BodyInit,
        headers: { "content-type": mediaTypeOf(file) },
      })
    );
    setBusy(false);
    if (!answer.ok) return setFailure(answer);
    navigate(href(`/imports/${answer.data.id}`));
  };
  return (
    <section aria-labelledby="upload-h">
      <h2 id="upload-h">New import</h2>
      {failure && <Notice failure={failure} />}
      <form onSubmit={onSubmit(upload)}>
        <Field
          label="File"
          id="import-file"
          hint="NDJSON (.ndjson, .jsonl) or CSV (.csv), up to a million records"
        >
          <input
            id="import-file"
            type="file"
            accept=".ndjson,.jsonl,.csv,application/x-ndjson,text/csv"
            aria-describedby="import-file-hint"
            onChange={(e) => setFile(e.currentTarget.files?.[0])}
          />
        </Field>
        <Field label="When a username or e-mail is taken" id="on-conflict">
          <select
            id="on-conflict"
            value={onConflict}
            onChange={(e) => setOnConflict(e.currentTarget.value as OnConflict)}
          >
            <option value="fail">Refuse the record</option>
            <option value="skip">Skip the record</option>
            <option value="update">Update that user</option>
          </select>
        </Field>
        <div class="field check">
          <label>
            <input
              type="checkbox"
              checked={dryRun}
              onChange={(e) => setDryRun(e.currentTarget.checked)}
            />{" "}
            Dry run: check every record and count, write nothing
          </label>
        </div>
        <button type="submit" disabled={busy || !file}>
          {busy ? "Uploading…" : "Import"}
        </button>
      </form>
    </section>
  );
}

interface Recent {
  id: number;
  time: string;
  by: string | undefined;
  dryRun: boolean;
  job: Reply<ImportStatus>;
}

function RecentImports() {
  const { reply, reload } = useLoad(async (signal) => {
    const started = await send(() =>
      api.GET("/api/audit", {
        params: { query: { action: "import.started", limit: RECENT } },
        signal,
      }), signal);
    if (!started.ok) return started;
    const jobs: Recent[] = await Promise.all(
      started.data.map(async (r) => {
        const id = Number(r.details.importId);
        return {
          id,
          time: r.time,
          by: r.actor?.username,
          dryRun: r.details.dryRun === true,
          job: await send(() =>
            api.GET("/api/imports/{id}", {
              params: { path: { id } },
              signal,
            }), signal),
        };
      }),
    );
    return { ...started, data: jobs };
  }, "");
  return (
    <section aria-labelledby="recent-h">
      <h2 id="recent-h">Recent imports</h2>
      {reply && !reply.ok && <Notice failure={reply} onRetry={reload} />}
      {reply?.ok && reply.data.length === 0 && (
        <p class="muted">No imports yet.</p>
      )}
      {reply?.ok && reply.data.length > 0 && (
        <table class="list">
          <thead>
            <tr>
              <th scope="col">Import</th>
              <th scope="col">Started</th>
              <th scope="col">By</th>
              <th scope="col">Status</th>
              <th scope="col">Records</th>
            </tr>
          </thead>
          <tbody>
            {reply.data.map((r) => (
              <tr key={r.id}>
                <td data-label="Import">
                  <a href={href(`/imports/${r.id}`)}>Import {r.id}</a>
                  {r.dryRun && " (dry run)"}
                </td>
                <td data-label="Started">
                  <Time iso={r.time} />
                </td>
                <td data-label="By">
                  <Text>{r.by}</Text>
                </td>
                <td data-label="Status">
                  {r.job.ok ? r.job.data.status : r.job.error}
                </td>
                <td data-label="Records">
                  {r.job.ok && <Counts job={r.job.data} />}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <button type="button" class="secondary" onClick={reload}>
        Refresh
      </button>
    </section>
  );
}

/** A count in the reader's own digits and grouping. */
const n = (count: number) => count.toLocaleString();

function Counts({ job }: { job: ImportStatus }) {
  return (
    <>
      {n(job.total)} in the file: {n(job.created)} created, {n(job.updated)}
      {" "}
      updated, {n(job.skipped)} skipped, {n(job.failed)} refused
    </>
  );
}

export function ImportPage({ id }: { id: string }) {
  const importId = Number(id);
  const [reply, setReply] = useState<Reply<ImportStatus>>();
  const [round, setRound] = useState(0);
  const [failure, setFailure] = useState<Failure>();
  const path = { params: { path: { id: importId } } };

  // Polled while it runs; every answer is shown as it comes.
  useEffect(() => {
    const stop = new AbortController();
    let timer: number | undefined;
    const poll = async () => {
      const answer = await send(
        () => api.GET("/api/imports/{id}", { ...path, signal: stop.signal }),
        stop.signal,
      ).catch(() => undefined);
      if (!answer || stop.signal.aborted) return;
      setReply(answer);
      if (answer.ok && running(answer.data)) {
        timer = setTimeout(poll, POLL_MS);
      }
    };
    poll();
    return () => {
      stop.abort();
      clearTimeout(timer);
    };
  }, [importId, round]);

  const cancel = async () => {
    setFailure(undefined);
    const answer = await send(() => api.POST("/api/imports/{id}/cancel", path));
    if (answer.ok) setReply(answer);
    else setFailure(answer);
  };

  if (!reply) return <p role="status">Loading…</p>;
  if (!reply.ok) {
    return (
      <>
        <Title>{reply.status === 404 ? "Import not found" : "Import"}</Title>
        <Notice
          failure={reply}
          onRetry={reply.status === 404 ? undefined : () => setRound(round + 1)}
        />
        <p>
          <a href={href("/imports")}>Back to imports</a>
        </p>
      </>
    );
  }
  const job = reply.data;
  return (
    <>
      <p class="crumbs">
        <a href={href("/imports")}>Imports</a>
      </p>
      <Title>Import {job.id}</Title>
      {failure && <Notice failure={failure} />}
      <p role="status" class="import-state">
        {running(job) ? "Running" : "Ended"}: <strong>{job.status}</strong>
      </p>
      <div class="field">
        <label for="import-progress">
          {n(job.processed)} of {n(job.total)} records judged
        </label>
        <progress
          id="import-progress"
          max={Math.max(job.total, 1)}
          value={job.processed}
        />
      </div>
      <dl class="facts">
        <dt>Created</dt>
        <dd>{n(job.created)}</dd>
        <dt>Updated</dt>
        <dd>{n(job.updated)}</dd>
        <dt>Skipped</dt>
        <dd>{n(job.skipped)}</dd>
        <dt>Refused</dt>
        <dd>{n(job.failed)}</dd>
        <dt>Started</dt>
        <dd>
          <Time iso={job.startedAt} />
        </dd>
        <dt>Finished</dt>
        <dd>
          <Time iso={job.finishedAt} />
        </dd>
      </dl>
      {running(job) && (
        <p>
          <ConfirmButton
            label="Cancel import"
            question="Stop it? The users it created stay."
            onConfirm={cancel}
          />
        </p>
      )}
      <section aria-labelledby="refused-h">
        <h2 id="refused-h">Refused records</h2>
        {job.failed === 0
          ? <p class="muted">None{running(job) ? " so far" : ""}.</p>
          : <RefusedRecords id={importId} failed={job.failed} />}
      </section>
    </>
  );
}

/** The first refused records, read again whenever their count grows. */
function RefusedRecords({ id, failed }: { id: number; failed: number }) {
  const { reply, reload } = useLoad(async (signal) => {
    const answer = await send(() =>
      api.GET("/api/imports/{id}/errors", {
        params: { path: { id } },
        parseAs: "stream",
        signal,
      }), signal);
    if (!answer.ok) return answer;
    const errors = await firstElements<ImportError>(
      answer.data as unknown as ReadableStream<Uint8Array>,
      ERRORS_SHOWN,
    );
    return { ...answer, data: errors };
  }, `${id}:${Math.min(failed, ERRORS_SHOWN)}`);
  if (!reply) return <p role="status">Loading…</p>;
  if (!reply.ok) return <Notice failure={reply} onRetry={reload} />;
  return (
    <>
      {failed > reply.data.length && (
        <p>
          The first {n(reply.data.length)} of {n(failed)}.
        </p>
      )}
      <table class="list errors">
        <thead>
          <tr>
            <th scope="col">Line</th>
            <th scope="col">Error</th>
          </tr>
        </thead>
        <tbody>
          {reply.data.map((e) => (
            <tr key={e.line}>
              <td data-label="Line">{e.line}</td>
              <td data-label="Error">{e.error}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

/**
 * The first `limit` objects of a streamed JSON array of flat objects,
 * reading no further than they need (the rest of the body is cancelled).
 */
async function firstElements<T>(
  body: ReadableStream<Uint8Array>,
  limit: number,
): Promise<T[]> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const found: T[] = [];
  let element = "";
  let depth = 0;
  let inString = false;
  let escaped = false;
  try {
    while (found.length < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      for (const ch of decoder.decode(value, { stream: true })) {
        if (depth === 0) {
          if (ch === "{") {
            depth = 1;
            element = ch;
          }
          continue;
        }
        element += ch;
        if (inString) {
          if (escaped) escaped = false;
          else if (ch === "\\") escaped = true;
          else if (ch === '"') inString = false;
        } else if (ch === '"') inString = true;
        else if (ch === "{") depth++;
        else if (ch === "}" && --depth === 0) {
          found.push(JSON.parse(element));
          if (found.length === limit) break;
        }
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return found;
}
