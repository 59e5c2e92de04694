/**
 * The guarantee behind every limit: while any single request is served,
 * `/health` answers within 250 ms. A probe asks it again and again beside
 * the request, from before the request is sent until it is answered.
 */
import { assert, assertEquals } from "./assert.ts";
import { sleep } from "./process.ts";
import type { TestService } from "./service.ts";

/** decisions.md: `/health` answers within 250 ms while a request is served. */
export const HEALTH_WITHIN_MS = 250;

/**
 * `request`'s result, asserting that every `/health` asked meanwhile (over
 * the port: start the service with `inProcess: false`) answered 200 in time.
 */
export async function healthBeside<T>(
  svc: TestService,
  what: string,
  request: () => Promise<T>,
): Promise<T> {
  let served = false;
  const slow: string[] = [];
  let probes = 0;
  const probing = (async () => {
    while (!served) {
      const started = performance.now();
      const res = await svc.fetch("/health");
      await res.body?.cancel();
      const ms = performance.now() - started;
      probes++;
      assertEquals(res.status, 200, `${what}: /health ${res.status}`);
      if (ms > HEALTH_WITHIN_MS) slow.push(`${Math.round(ms)} ms`);
      await sleep(10);
    }
  })();
  try {
    return await request();
  } finally {
    served = true;
    await probing;
    assert(probes > 0, `${what}: no probe ran`);
    assertEquals(slow, [], `${what}: /health answered slowly`);
  }
}
