/**
 * A real webhook receiver for the tests: Deno.serve on 127.0.0.1, port 0.
 * It keeps every request as it came and verifies each one with the
 * `standardwebhooks` library once the test knows the endpoint's secret.
 */
import { Webhook } from "standardwebhooks";
import { assert } from "./support/assert.ts";

export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  /** performance.now() when it arrived. */
  at: number;
}

export interface Message {
  webhookId: string;
  type: string;
  timestamp: string;
  data: { id: number; action: string; [key: string]: unknown };
}

/** How the receiver answers a request: a status, or a Response of its own. */
export type Answer = (r: Received, n: number) =>
  | number
  | Response
  | Promise<number | Response>;

export interface Receiver extends AsyncDisposable {
  url: (path: string) => string;
  received: Received[];
  /** What a path is answered with (200 by default). */
  answer(path: string, answer: Answer): void;
  /** The requests of a path, each verified with the secret: throws if one is not genuine. */
  verified(path: string, secret: string): Message[];
}

export function startReceiver(): Receiver {
  const received: Received[] = [];
  const answers = new Map<string, Answer>();
  const counts = new Map<string, number>();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req) => {
      const path = new URL(req.url).pathname;
      const r: Received = {
        path,
        headers: Object.fromEntries(req.headers),
        body: await req.text(),
        at: performance.now(),
      };
      received.push(r);
      const n = (counts.get(path) ?? 0) + 1;
      counts.set(path, n);
      const answer = await (answers.get(path)?.(r, n) ?? 200);
      if (typeof answer !== "number") return answer;
      const empty = answer === 204 || answer === 304;
      return new Response(empty ? null : `answered ${answer}`, {
        status: answer,
      });
    },
  );
  return {
    url: (path) => `http://127.0.0.1:${server.addr.port}${path}`,
    received,
    answer: (path, answer) => void answers.set(path, answer),
    verified(path, secret) {
      const wh = new Webhook(secret);
      return received.filter((r) => r.path === path).map((r) => {
        const payload = wh.verify(r.body, r.headers) as Omit<
          Message,
          "webhookId"
        >;
        return { webhookId: r.headers["webhook-id"], ...payload };
      });
    },
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}

/** Polls `check` until it holds, or fails naming `what` after `ms`. */
export async function eventually<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  ms = 20_000,
): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    assert(Date.now() < until, `not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
