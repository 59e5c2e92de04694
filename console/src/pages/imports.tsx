/**
 * Imports: a file of users (NDJSON or CSV) uploaded to `POST /api/imports`,
 * and the recent jobs, which come from the audit trail (`import.started`),
 * as the API keeps no list of them. One job, followed until it ends, is
 * import.tsx.
 */
import { useState } from "preact/hooks";
import { api, type Failure, type Reply, send } from "../api.ts";
import { href, navigate } from "../router.ts";
import { Field, Notice, onSubmit, Text, Time, Title, useLoad } from "../ui.tsx";
import { Counts, type ImportStatus } from "./import.tsx";

type OnConflict = "fail" | "skip" | "update";

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
