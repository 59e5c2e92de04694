/**
 * One import: its job followed until it ends (polled), stopped on request,
 * with the records it refused. Apart from the imports page (imports.tsx),
 * which uploads and lists them.
 */
import { useState } from "preact/hooks";
import type { components } from "../../../clients/mod.ts";
import { api, type Failure, send } from "../api.ts";
import { firstElements } from "../json-stream.ts";
import { href } from "../router.ts";
import { ConfirmButton, Notice, Time, Title, useLoad, useOne } from "../ui.tsx";

export type ImportStatus = components["schemas"]["ImportStatus"];
type ImportError = components["schemas"]["ImportError"];

/** How often a running job is asked for its progress. */
const POLL_MS = 500;
/** Refused records shown on the page; a file may have a million. */
const ERRORS_SHOWN = 1000;

const running = (job: ImportStatus) =>
  job.status === "queued" || job.status === "running";

/** A count in the reader's own digits and grouping. */
const n = (count: number) => count.toLocaleString();

export function Counts({ job }: { job: ImportStatus }) {
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
  const [failure, setFailure] = useState<Failure>();
  const path = { params: { path: { id: importId } } };
  // Polled while it runs; every answer is shown as it comes.
  const one = useOne(
    (signal) =>
      send(() => api.GET("/api/imports/{id}", { ...path, signal }), signal),
    id,
    {
      thing: "Import",
      back: <a href={href("/imports")}>Back to imports</a>,
      again: { ms: POLL_MS, while: running },
    },
  );

  if (!one.ok) return one.page;
  const cancel = async () => {
    setFailure(undefined);
    const answer = await send(() => api.POST("/api/imports/{id}/cancel", path));
    if (answer.ok) one.show(answer);
    else setFailure(answer);
  };
  const job = one.data;
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
