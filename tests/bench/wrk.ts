/**
 * One wrk run with the bench's script (wrk.lua), read from the line it
 * prints at the end: what bench.ts and audit_measure.ts both measure with.
 */
export interface WrkRun {
  requests: number;
  durationUs: number;
  p50Us: number;
  p99Us: number;
  /** Non-2xx answers, connect/read/write errors and timeouts together. */
  errors: number;
}

export async function runWrk(options: {
  url: string;
  sid: string;
  connections: number;
  durationSeconds: number;
  /** wrk.lua's settings: BENCH_METHOD, BENCH_BODY, ... */
  env: Record<string, string>;
  headers?: string[];
  wrkPath?: string;
}): Promise<WrkRun> {
  const { connections } = options;
  const threads = Math.min(2, connections);
  const out = await new Deno.Command(options.wrkPath ?? "wrk", {
    args: [
      "-t",
      String(threads),
      "-c",
      String(connections),
      "-d",
      `${options.durationSeconds}s`,
      "--timeout",
      "10s",
      "-s",
      new URL("wrk.lua", import.meta.url).pathname,
      "-H",
      `Cookie: sid=${options.sid}`,
      ...(options.headers ?? []).flatMap((h) => ["-H", h]),
      options.url,
    ],
    env: { ...options.env, BENCH_THREADS: String(threads) },
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  const line = stdout.split("\n").find((l) => l.startsWith("BENCH "));
  if (out.code !== 0 || !line) {
    throw new Error(
      `wrk: ${stdout}\n${new TextDecoder().decode(out.stderr)}`,
    );
  }
  const r = JSON.parse(line.slice(6));
  return {
    requests: r.requests,
    durationUs: r.durationUs,
    p50Us: r.p50Us,
    p99Us: r.p99Us,
    errors: r.non2xx + r.connectErrors + r.readErrors + r.writeErrors +
      r.timeouts,
  };
}
