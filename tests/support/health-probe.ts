/**
 * The guarantee that `/health` answers within 250 ms while any single
 * request is served: a probe asks it over the port, one request after
 * another, for as long as the work beside it runs.
 */
import { assert } from "./assert.ts";

/** decisions.md: `/health` answers within this while a request is served. */
export const HEALTH_WITHIN_MS = 250;

/**
 * Runs `work` with /health probed beside it; answers the work's result and
 * the slowest probe (ms). A probe that fails or answers other than 200 or
 * 503 fails the test.
 */
export async function besideHealthProbe<T>(
  baseUrl: string,
  work: () => Promise<T>,
): Promise<{ result: T; slowestMs: number; probes: number }> {
  let done = false;
  let slowestMs = 0;
  let probes = 0;
  const probe = (async () => {
    while (!done) {
      const started = performance.now();
      const res = await fetch(`${baseUrl}/health`, {
        signal: AbortSignal.timeout(30_000),
      });
      await res.body?.cancel();
      assert([200, 503].includes(res.status), `/health ${res.status}`);
      slowestMs = Math.max(slowestMs, performance.now() - started);
      probes++;
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  let result: T;
  try {
    result = await work();
  } finally {
    // The probe under way is counted too.
    done = true;
    await probe;
  }
  return { result, slowestMs, probes };
}

/** Asserts the probe's slowest answer came within HEALTH_WITHIN_MS. */
export function assertHealthAnswered(
  probed: { slowestMs: number; probes: number },
) {
  assert(probed.probes > 0, "/health was probed at least once");
  assert(
    probed.slowestMs < HEALTH_WITHIN_MS,
    `/health took ${
      Math.round(probed.slowestMs)
    } ms while the request was served`,
  );
}
