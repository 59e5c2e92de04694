/**
 * The request deadline's own bookkeeping, in-process: requests wait in
 * arrival order and each leaves as it ends, in any order; whatever is still
 * pending at its deadline answers 500 then (never before), also after others
 * left around it and after the service sat idle. A request that never
 * answers is what a stalled database makes; here a handler that never
 * resolves stands in for it.
 */
import { Hono } from "hono";
import { deadline } from "../src/http/endpoint.ts";
import type { AppEnv } from "../src/http/env.ts";
import { onError } from "../src/http/errors.ts";
import { assert, assertEquals } from "./support/assert.ts";
import { sleep } from "./support/process.ts";

const MS = 500;

function app() {
  const app = new Hono<AppEnv>();
  const within = deadline(MS, 0);
  app.get("/wait/:ms", (c) =>
    within(c, async () => {
      await sleep(Number(c.req.param("ms")));
      return c.json({ ok: true });
    }));
  app.get("/hang", (c) => within(c, () => new Promise<Response>(() => {})));
  app.onError(onError);
  return app;
}

/**
 * Status, milliseconds to the answer and when it came (`performance.now()`);
 * fails instead of hanging (after 20 deadlines: a loaded machine is slow,
 * this only stops a test that would never end).
 */
async function timed(a: Hono<AppEnv>, path: string) {
  const started = performance.now();
  let timeout: ReturnType<typeof setTimeout> | undefined;
  const res = await Promise.race([
    a.request(path),
    new Promise<never>((_, reject) => {
      timeout = setTimeout(
        () => reject(new Error(`${path}: no answer within ${20 * MS} ms`)),
        20 * MS,
      );
    }),
  ]).finally(() => clearTimeout(timeout));
  await res.body?.cancel();
  const at = performance.now();
  return { status: res.status, ms: at - started, at };
}

// The deadline keeps its one timer until it finds nothing due: by design,
// not a leak.
const options = { sanitizeOps: false, sanitizeResources: false };

Deno.test(
  "requests that leave in any order: those still pending answer 500 at their deadline, the rest as they finish",
  options,
  async () => {
    const a = app();
    // Hanging first, in the middle and last; finishing ones between them.
    const paths = [
      "/hang",
      "/wait/20",
      "/hang",
      "/wait/40",
      "/wait/5",
      "/hang",
    ];
    const answers = await Promise.all(paths.map((p) => timed(a, p)));
    // Measured against the deadline itself, the first 500, not the clock:
    // a parallel suite may delay every answer, never reorder these.
    const expired = Math.min(
      ...answers.filter((_, i) => paths[i] === "/hang").map((x) => x.at),
    );
    answers.forEach(({ status, ms, at }, i) => {
      if (paths[i] === "/hang") {
        assertEquals(status, 500, paths[i]);
        assert(ms >= MS - 1, `${paths[i]} #${i} answered early: ${ms} ms`);
      } else {
        assertEquals(status, 200, paths[i]);
        assert(
          at < expired,
          `${paths[i]} #${i} waited for the deadline: answered ${
            Math.round(at - expired)
          } ms after the first 500`,
        );
      }
    });
  },
);

Deno.test(
  "after the service sat idle, a new pending request still expires at its deadline",
  options,
  async () => {
    const a = app();
    const expiresWithQuick = async () => {
      const [hang, quick] = await Promise.all([
        timed(a, "/hang"),
        timed(a, "/wait/1"),
      ]);
      assertEquals([hang.status, quick.status], [500, 200]);
      assert(hang.ms >= MS - 1, `answered early: ${hang.ms} ms`);
    };
    // The timer stops when it expires the last pending request...
    assertEquals((await timed(a, "/hang")).status, 500);
    await expiresWithQuick();
    // ...and when it fires after every request has left: idle past the
    // deadline of one that left at once, measured from its own start.
    const left = await timed(a, "/wait/1");
    assertEquals(left.status, 200);
    await sleep(left.at - left.ms + MS + 20 - performance.now());
    await expiresWithQuick();
  },
);

Deno.test(
  "among 300 requests leaving at random, every pending one expires and none finished one does",
  options,
  async () => {
    const a = app();
    // Seeded, so a failure can be repeated: a small linear congruential generator.
    const seed = Number(Deno.env.get("DEADLINE_SEED") ?? Date.now() % 1e6);
    console.log(`seed ${seed} (DEADLINE_SEED=${seed} repeats it)`);
    let state = seed;
    const random = () =>
      (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const paths = Array.from(
      { length: 300 },
      () => random() < 0.1 ? "/hang" : `/wait/${Math.floor(random() * 60)}`,
    );
    const answers = await Promise.all(paths.map((p) => timed(a, p)));
    const wrong = answers.flatMap(({ status }, i) =>
      status === (paths[i] === "/hang" ? 500 : 200)
        ? []
        : [`${paths[i]}: ${status}`]
    );
    assertEquals(wrong, [], `seed ${seed}`);
  },
);
