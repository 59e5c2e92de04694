/**
 * What an import body cannot do to the service: a CSV quote left open is
 * one refused record however much follows it, read in memory bounded by
 * the record's limit, while /health answers.
 */
import { assertEquals } from "../support/assert.ts";
import { probeHealthWithin } from "../support/health.ts";
import { finished, importErrors } from "../support/imports.ts";
import {
  collectGarbage,
  loginCookie,
  sharedService,
} from "../support/service.ts";

// Over the port: the probe and the upload meet in the server as clients' would.
const service = sharedService({}, { inProcess: false, bcryptCost: 4 });

const MiB = 1024 * 1024;

/**
 * POSTs a CSV body from a process of its own, as a client would (a sender
 * in this process would share the event loop it is meant to leave free):
 * the header, `first`, then about `bytes` of plain rows, streamed. The rows
 * repeat: a quote left open swallows them anyway. Answers the status and
 * the JSON body.
 */
async function uploadCsv(
  url: string,
  cookie: string,
  first: string,
  bytes: number,
) {
  const sender = `
    const encoder = new TextEncoder();
    const rows = Array.from({ length: 1500 },
      (_, n) => "row" + n + ",Person " + n + ",row" + n + "@example.com,viewer\\n").join("");
    const chunk = encoder.encode(rows);
    let sent = -1;
    const body = new ReadableStream({
      pull(controller) {
        if (sent < 0) {
          sent = 0;
          return controller.enqueue(encoder.encode("username,name,email,role\\n" + Deno.env.get("FIRST") + "\\n"));
        }
        if (sent >= Number(Deno.env.get("BYTES"))) return controller.close();
        sent += chunk.length;
        controller.enqueue(chunk);
      },
    });
    const res = await fetch(Deno.env.get("URL"), {
      method: "POST",
      headers: { "content-type": "text/csv", cookie: Deno.env.get("COOKIE") },
      body,
    });
    console.log(JSON.stringify({ status: res.status, body: await res.json() }));
  `;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", sender],
    env: { URL: url, COOKIE: cookie, FIRST: first, BYTES: String(bytes) },
    stderr: "inherit",
  }).output();
  assertEquals(out.code, 0, "the sender ran");
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

const rssMiB = () => Math.round(Deno.memoryUsage().rss / MiB);

Deno.test("a CSV quote left open before 48 MB of lines is one refused record, read in bounded memory while /health answers", async () => {
  const svc = await service();
  const cookie = await loginCookie(svc);
  collectGarbage();
  const before = rssMiB();
  let peak = before;
  const sampler = setInterval(() => peak = Math.max(peak, rssMiB()), 50);
  const what = "a 48 MB CSV with a quote left open";
  const probed = await probeHealthWithin(svc.baseUrl, what, () =>
    uploadCsv(
      `${svc.baseUrl}/api/imports`,
      cookie,
      'stray,"Stray Quote,stray@example.com,viewer',
      48 * MiB,
    ));
  clearInterval(sampler);
  console.log(
    `rss before ${before} MiB, peak ${peak} MiB during the upload; ` +
      `/health slowest ${Math.round(probed.slowestMs)} ms of ${probed.probes}`,
  );
  assertEquals(probed.result.status, 202, JSON.stringify(probed.result.body));
  const done = await finished(svc, probed.result.body.id);
  assertEquals(
    { status: done.status, total: done.total, created: done.created },
    { status: "finished", total: 1, created: 0 },
  );
  assertEquals(await importErrors(svc, probed.result.body.id), [
    { line: 2, error: "Invalid request body" },
  ]);
});
