/**
 * Prometheus metrics (prom-client), served by a Deno.serve of their own on
 * METRICS_HOST:METRICS_PORT, never on the API's port. Every series and what
 * it means is listed in docs/operations.md, "Metrics".
 */
import type { MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import client from "prom-client";
import type { PasswordHasher } from "./auth/passwords.ts";
import type { InFlight } from "./db/in-flight.ts";

/** How long a scrape waits for the webhook queue's figures before reporting NaN. */
const QUEUE_READ_TIMEOUT_MS = 1_000;

/** The route label of a request that matched no route: never its raw path. */
export const UNMATCHED_ROUTE = "unmatched";

const METHODS = new Set([
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "PATCH",
  "DELETE",
  "OPTIONS",
]);

const LOGIN_ROUTE = "/api/auth/login";
/** The login answers that are an outcome of checking credentials. */
const LOGIN_OUTCOMES: Record<number, "success" | "failure" | "throttled"> = {
  200: "success",
  401: "failure",
  429: "throttled",
};

export interface Metrics {
  registry: client.Registry;
  /** Counts and times every request of the app it is used on. */
  middleware: MiddlewareHandler;
  /** Store calls holding or waiting for a pool connection. */
  dbInFlight: InFlight;
  /** Change feed streams open now (GET /api/audit/stream). */
  auditStreams: InFlight;
  /** The hasher, with each hash or verify counted while it runs. */
  countBcrypt(hasher: PasswordHasher): PasswordHasher;
  /** Counts one webhook delivery attempt by outcome. */
  webhookAttempt(outcome: "delivered" | "failed"): void;
  /** Reads the webhook queue's backlog at each scrape. */
  watchWebhookQueue(
    read: () => Promise<{ records: number; oldestSeconds: number }>,
  ): void;
  /** GET /metrics: the Prometheus text exposition, for a listener of its own. */
  serve(req: Request): Promise<Response>;
}

export function createMetrics(options: { poolMax: number }): Metrics {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });

  const labelNames = ["method", "route", "status"] as const;
  const requests = new client.Counter({
    name: "useradmin_http_requests_total",
    help: "HTTP requests answered, by method, route template and status.",
    labelNames,
    registers: [registry],
  });
  const duration = new client.Histogram({
    name: "useradmin_http_request_duration_seconds",
    help:
      "Time from receiving a request to its response head (a streamed list's body may flow longer), by method, route template and status.",
    labelNames,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  /** A counter by outcome, every outcome's series there (at 0) from the start. */
  const outcomeCounter = (
    name: string,
    help: string,
    outcomes: readonly string[],
  ) => {
    const counter = new client.Counter({
      name,
      help,
      labelNames: ["outcome"] as const,
      registers: [registry],
    });
    for (const outcome of outcomes) counter.inc({ outcome }, 0);
    return counter;
  };
  const logins = outcomeCounter(
    "useradmin_logins_total",
    "Login attempts by outcome: success (200), failure (401: unknown user or wrong password), throttled (429).",
    Object.values(LOGIN_OUTCOMES),
  );
  const db = new client.Gauge({
    name: "useradmin_db_operations_in_flight",
    help:
      "Database operations of requests running now; each holds one pool connection, or waits for one when all are busy. Background work (webhooks, imports, housekeeping) is not counted.",
    registers: [registry],
  });
  new client.Gauge({
    name: "useradmin_db_pool_max",
    help: "Pool connections this instance may open (DATABASE_POOL_MAX).",
    registers: [registry],
  }).set(options.poolMax);
  const bcrypt = new client.Gauge({
    name: "useradmin_bcrypt_jobs_in_flight",
    help:
      "bcrypt hashes and verifications running or queued off the main thread now.",
    registers: [registry],
  });

  const auditStreams = new client.Gauge({
    name: "useradmin_audit_streams_open",
    help: "Change feed streams (GET /api/audit/stream) open now.",
    registers: [registry],
  });
  const webhookAttempts = outcomeCounter(
    "useradmin_webhook_deliveries_total",
    "Webhook delivery attempts by outcome: delivered (2xx within the timeout) or failed.",
    ["delivered", "failed"],
  );
  let readQueue:
    | (() => Promise<{ records: number; oldestSeconds: number }>)
    | undefined;
  // Both gauges from one query per scrape (the first collect reads it).
  let queueRead:
    | Promise<{ records: number; oldestSeconds: number }>
    | undefined;
  const queue = () => {
    if (queueRead) return queueRead;
    // A scrape answers even while the database is slow or its one
    // connection (the embedded database) is held: then the gauges are NaN.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error("webhook queue read timed out")),
        QUEUE_READ_TIMEOUT_MS,
      );
    });
    queueRead = Promise.race([
      readQueue?.() ?? Promise.resolve(undefined),
      late,
    ])
      .then((q) => q ?? { records: 0, oldestSeconds: 0 })
      .catch(() => ({ records: Number.NaN, oldestSeconds: Number.NaN }))
      .finally(() => {
        clearTimeout(timer);
        setTimeout(() => queueRead = undefined, 0);
      });
    return queueRead;
  };
  new client.Gauge({
    name: "useradmin_webhook_queue_records",
    help:
      "Audit records after the cursors of the enabled webhook endpoints, summed over them: not yet delivered (or not yet passed over, for endpoints filtered by action).",
    registers: [registry],
    async collect() {
      this.set((await queue()).records);
    },
  });
  new client.Gauge({
    name: "useradmin_webhook_oldest_undelivered_seconds",
    help:
      "Age of the oldest audit record that an enabled webhook endpoint has not yet passed; 0 when none waits.",
    registers: [registry],
    async collect() {
      this.set((await queue()).oldestSeconds);
    },
  });

  const middleware: MiddlewareHandler = async (c, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      const seconds = (performance.now() - started) / 1000;
      const method = METHODS.has(c.req.method) ? c.req.method : "other";
      const route = routeTemplate(c);
      // Before next() resolves on a thrown error the error handler has set
      // the answer; an error escaping it would be Deno's 500.
      const status = String(c.res?.status ?? 500);
      requests.inc({ method, route, status });
      duration.observe({ method, route, status }, seconds);
      const outcome = LOGIN_OUTCOMES[c.res?.status];
      if (route === LOGIN_ROUTE && method === "POST" && outcome) {
        logins.inc({ outcome });
      }
    }
  };

  return {
    registry,
    serve: (req) => exposition(registry, req),
    middleware,
    dbInFlight: db,
    auditStreams,
    webhookAttempt: (outcome) => webhookAttempts.inc({ outcome }),
    watchWebhookQueue(read) {
      readQueue = read;
    },
    countBcrypt(hasher) {
      const counted = <T>(job: Promise<T>) => {
        bcrypt.inc();
        return job.finally(() => bcrypt.dec());
      };
      return {
        hash: (password) => counted(hasher.hash(password)),
        verify: (password, hash) => counted(hasher.verify(password, hash)),
      };
    },
  };
}

/**
 * The template of the route that answered (`/api/users/:id`), from Hono's
 * matched routes: the last one bound to a method is the handler; the rest
 * are middleware bound to all methods.
 */
function routeTemplate(c: Parameters<MiddlewareHandler>[0]): string {
  const handler = matchedRoutes(c).findLast((r) => r.method !== "ALL");
  return handler?.path ?? UNMATCHED_ROUTE;
}

async function exposition(
  registry: client.Registry,
  req: Request,
): Promise<Response> {
  if (new URL(req.url).pathname !== "/metrics") {
    return new Response("Not found\n", { status: 404 });
  }
  if (req.method !== "GET" && req.method !== "HEAD") {
    return new Response("Method not allowed\n", {
      status: 405,
      headers: { Allow: "GET, HEAD" },
    });
  }
  return new Response(await registry.metrics(), {
    headers: { "content-type": registry.contentType },
  });
}
