/**
 * What an import body cannot do to the service: a CSV quote left open is
 * one refused record however much follows it, read in memory bounded by
 * the record's limit, while /health answers.
 */
import { assertEquals } from "./support/assert.ts";
import {
  assertHealthAnswered,
  besideHealthProbe,
} from "./support/health-probe.ts";
import { finished, importErrors } from "./support/imports.ts";
import {
  collectGarbage,
  loginCookie,
  sharedService,
} from "./support/service.ts";

// Over the port: the probe and the upload meet in the server as clients' would.
const service = sharedService({}, { inProcess: false, bcryptCost: 4 });

const MiB = 1024 * 1024;

/** A CSV body: the header, `first`, then plain rows up to about `bytes`, streamed. */
function csvStream(first: string, bytes: number) {
  const encoder = new TextEncoder();
  let sent = 0;
  let n = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= bytes) return controller.close();
      let text = sent === 0 ? `username,name,email,role\n${first}\n` : "";
      while (text.length < 64 * 1024) {
        n++;
        text += `row${n},Person ${n},row${n}@example.com,viewer\n`;
      }
      const chunk = encoder.encode(text);
      sent += chunk.length;
      controller.enqueue(chunk);
    },
  });
}

const rssMiB = () => Math.round(Deno.memoryUsage().rss / MiB);

Deno.test("a CSV quote left open before 48 MB of lines is one refused record, read in bounded memory while /health answers", async () => {
  const svc = await service();
  const cookie = await loginCookie(svc);
  collectGarbage();
  const before = rssMiB();
  let peak = before;
  const sampler = setInterval(() => peak = Math.max(peak, rssMiB()), 50);
  const probed = await besideHealthProbe(svc.baseUrl, async () => {
    const res = await fetch(`${svc.baseUrl}/api/imports`, {
      method: "POST",
      headers: { "content-type": "text/csv", cookie },
      body: csvStream('stray,"Stray Quote,stray@example.com,viewer', 48 * MiB),
    });
    return { status: res.status, body: await res.json() };
  });
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
  assertHealthAnswered(probed);
});
