/**
 * Imports users from a file through the API of a running service, with a
 * progress bar for a person at a terminal (plain lines otherwise):
 *
 *   deno task import users.ndjson [--on-conflict=fail|skip|update] [--dry-run]
 *
 * NDJSON, or CSV when the file ends in `.csv` (or with `--csv`). Where and
 * as whom, from the environment: USER_ADMIN_URL (default
 * http://127.0.0.1:8000), and USER_ADMIN_API_KEY, or USER_ADMIN_USERNAME
 * and USER_ADMIN_PASSWORD of an admin, with USER_ADMIN_CODE (a TOTP or
 * recovery code) when the admin has a second factor; at a terminal the
 * code is asked for instead. docs/migrating.md shows it at work.
 *
 * Exit 0: every record imported (or skipped); 1: the import ended with
 * refused records (the first are listed) or was cancelled or failed; 2: it
 * could not be started.
 */
import { createUserAdminClient } from "@user-admin/client";
import { MSG } from "../http/messages.ts";
import { runAsProcess, type TaskMain, type TaskOutput } from "./task.ts";

const USAGE =
  "Usage: deno task import FILE [--csv] [--on-conflict=fail|skip|update] [--dry-run]";

/** How many refused records are listed at the end. */
const ERRORS_SHOWN = 20;

/**
 * A body's bytes in pieces of 65,528 bytes, each sent as one HTTP chunk of
 * exactly 64 KiB with its framing. Deno's server reads a streamed body 64
 * KiB at a time; a chunk that straddles two of its reads (fetch sends a
 * file in 64 KiB chunks plus framing) makes it buffer the body ahead of
 * the service and copy that buffer again and again: an upload of a million
 * users took twice as long and the service's memory grew with the body.
 */
export function uploadChunks(): TransformStream<Uint8Array, Uint8Array> {
  const SIZE = 65_536 - "fff8\r\n\r\n".length;
  let piece = new Uint8Array(SIZE);
  let filled = 0;
  return new TransformStream({
    transform(chunk, controller) {
      for (let at = 0; at < chunk.length;) {
        const n = Math.min(SIZE - filled, chunk.length - at);
        piece.set(chunk.subarray(at, at + n), filled);
        filled += n;
        at += n;
        if (filled === SIZE) {
          controller.enqueue(piece);
          piece = new Uint8Array(SIZE);
          filled = 0;
        }
      }
    },
    flush(controller) {
      if (filled > 0) controller.enqueue(piece.subarray(0, filled));
    },
  });
}

interface Progress {
  /** A line that replaces itself at a terminal; printed now and then otherwise. */
  update(text: string, fraction: number): void;
  done(text: string): void;
}

function progress(out: TaskOutput, tty: boolean): Progress {
  if (tty) {
    const encoder = new TextEncoder();
    const write = (s: string) => Deno.stderr.writeSync(encoder.encode(s));
    return {
      update(text, fraction) {
        const width = 30;
        const filled = Math.round(Math.min(1, Math.max(0, fraction)) * width);
        write(
          `\r[${"#".repeat(filled)}${" ".repeat(width - filled)}] ${
            Math.floor(fraction * 100)
          }% ${text}\x1b[K`,
        );
      },
      done(text) {
        write(`\r\x1b[K`);
        out.log(text);
      },
    };
  }
  let last = 0;
  return {
    update(text) {
      // A log, not an animation: one line every few seconds.
      if (performance.now() - last < 5_000) return;
      last = performance.now();
      out.log(text);
    },
    done: (text) => out.log(text),
  };
}

/** Where the service is and the headers that authenticate as the admin. */
async function authenticate(
  env: Record<string, string | undefined>,
  baseUrl: string,
): Promise<Record<string, string> | string> {
  if (env.USER_ADMIN_API_KEY) {
    return { authorization: `Bearer ${env.USER_ADMIN_API_KEY}` };
  }
  const username = env.USER_ADMIN_USERNAME;
  const password = env.USER_ADMIN_PASSWORD;
  if (!username || !password) {
    return "Set USER_ADMIN_API_KEY, or USER_ADMIN_USERNAME and USER_ADMIN_PASSWORD of an admin";
  }
  const login = async (code?: string) => {
    const res = await fetch(`${baseUrl}/api/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(
        code ? { username, password, code } : {
          username,
          password,
        },
      ),
    });
    const body = await res.json().catch(() => ({}));
    const sid = res.headers.getSetCookie().find((c) => c.startsWith("sid="));
    return { status: res.status, error: body.error as string | undefined, sid };
  };
  let answer = await login(env.USER_ADMIN_CODE);
  if (answer.error === MSG.secondFactorRequired && !env.USER_ADMIN_CODE) {
    // A person at a terminal types the code; a script is told what to set.
    const code = Deno.stdin.isTerminal()
      ? prompt(`Second factor code for ${username}:`)
      : null;
    if (!code) {
      return `Login as ${username} needs a second factor: set USER_ADMIN_CODE to a current TOTP or recovery code, or use USER_ADMIN_API_KEY`;
    }
    answer = await login(code.trim());
  }
  if (answer.status !== 200 || !answer.sid) {
    return `Login as ${username} failed: ${answer.error ?? answer.status}`;
  }
  return { cookie: answer.sid.split(";")[0] };
}

export const importUsers: TaskMain = async (args, env, out) => {
  const file = args.find((a) => !a.startsWith("--"));
  const flags = new Set(args.filter((a) => a.startsWith("--")));
  const onConflict = [...flags].find((f) => f.startsWith("--on-conflict="))
    ?.slice("--on-conflict=".length);
  if (
    !file || (onConflict && !["fail", "skip", "update"].includes(onConflict))
  ) {
    out.error(USAGE);
    return 2;
  }
  const csv = flags.has("--csv") || file.toLowerCase().endsWith(".csv");
  const baseUrl = (env.USER_ADMIN_URL ?? "http://127.0.0.1:8000").replace(
    /\/$/,
    "",
  );
  let size: number;
  let handle: Deno.FsFile;
  try {
    size = (await Deno.stat(file)).size;
    handle = await Deno.open(file);
  } catch (e) {
    out.error(`Cannot read ${file}: ${(e as Error).message}`);
    return 2;
  }
  let headers;
  try {
    headers = await authenticate(env, baseUrl);
  } catch (e) {
    handle.close();
    out.error(`Cannot reach ${baseUrl}: ${(e as Error).message}`);
    return 2;
  }
  if (typeof headers === "string") {
    handle.close();
    out.error(headers);
    return 2;
  }
  const bar = progress(
    out,
    Deno.stderr.isTerminal() && env.TERM !== "dumb",
  );
  let sent = 0;
  const counted = handle.readable.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        sent += chunk.length;
        bar.update(
          `uploading ${mib(sent)} of ${mib(size)}`,
          size ? sent / size : 1,
        );
        controller.enqueue(chunk);
      },
    }),
  ).pipeThrough(uploadChunks());
  const query = new URLSearchParams();
  if (onConflict) query.set("onConflict", onConflict);
  if (flags.has("--dry-run")) query.set("dryRun", "true");
  let res: Response;
  try {
    res = await fetch(`${baseUrl}/api/imports?${query}`, {
      method: "POST",
      headers: {
        ...headers,
        "content-type": csv ? "text/csv" : "application/x-ndjson",
      },
      body: counted,
    });
  } catch (e) {
    out.error(`Upload failed: ${(e as Error).message}`);
    return 2;
  }
  const accepted = await res.json().catch(() => ({}));
  if (res.status !== 202) {
    bar.done("");
    out.error(`Import refused: ${res.status} ${accepted.error ?? ""}`.trim());
    return 2;
  }
  const id = accepted.id as number;
  const client = createUserAdminClient({ baseUrl, headers });
  for (;;) {
    const { data, error } = await client.GET("/api/imports/{id}", {
      params: { path: { id } },
    });
    if (!data) {
      bar.done("");
      out.error(`Cannot follow import ${id}: ${error?.error}`);
      return 2;
    }
    const counts =
      `${data.processed}/${data.total} records: ${data.created} created, ${data.updated} updated, ${data.skipped} skipped, ${data.failed} refused`;
    if (data.status === "queued" || data.status === "running") {
      bar.update(counts, data.total ? data.processed / data.total : 0);
      await new Promise((r) => setTimeout(r, 250));
      continue;
    }
    bar.done(`Import ${id} ${data.status}: ${counts}`);
    if (data.failed > 0) {
      const refused = await client.GET("/api/imports/{id}/errors", {
        params: { path: { id } },
      });
      for (const e of (refused.data ?? []).slice(0, ERRORS_SHOWN)) {
        out.error(`line ${e.line}: ${e.error}`);
      }
      if (data.failed > ERRORS_SHOWN) {
        out.error(
          `... and ${
            data.failed - ERRORS_SHOWN
          } more: GET ${baseUrl}/api/imports/${id}/errors`,
        );
      }
    }
    return data.status === "finished" && data.failed === 0 ? 0 : 1;
  }
};

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

if (import.meta.main) await runAsProcess(importUsers);
