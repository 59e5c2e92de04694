/**
 * The service started from its configuration: what main.ts runs and what
 * tests start in-process. The ports are bound before anything is written,
 * so a port in use ends the start with nothing done (no first admin made,
 * no password printed); every failure an operator can fix is a
 * StartupError whose message is one line.
 */
import type { Sql } from "postgres";
import { type App, createApp } from "./app.ts";
import { createAuditFeed } from "./audit/feed.ts";
import { createPasswordHasher } from "./auth/passwords.ts";
import {
  ensureFirstAdmin,
  firstAdminFromEnv,
  printFirstAdmin,
} from "./bootstrap.ts";
import { type Config, servedOn, StartupError } from "./config.ts";
import { openDatabase } from "./db/database.ts";
import { countInFlight } from "./db/in-flight.ts";
import { createStore, type Store } from "./db/store.ts";
import { rekeyUsers, startHousekeeping } from "./housekeeping.ts";
import type { Logger } from "./log.ts";
import { startWebhookWorker } from "./webhooks/worker.ts";
import { startImportWorker } from "./imports/worker.ts";

export interface StartOptions {
  log: Logger;
  /** Where a generated first admin's password is shown (stderr by default). */
  print?: (text: string) => void;
}

export interface Service {
  /** Where the API answers, e.g. http://localhost:8000. */
  url: string;
  /** Where /metrics answers, when METRICS_PORT is set. */
  metricsUrl?: string;
  app: App;
  store: Store;
  sql: Sql;
  /** Stops accepting, finishes in-flight requests, closes the database. */
  close(): Promise<void>;
}

type Handler = (
  req: Request,
  info: Deno.ServeHandlerInfo,
) => Response | Promise<Response>;

export async function startService(
  config: Config,
  options: StartOptions,
): Promise<Service> {
  const { log } = options;
  const started = performance.now();
  // The first admin's variables pass the account rules before anything opens.
  firstAdminFromEnv(config);
  // prom-client is loaded only when metrics are on, as PGlite only for the
  // embedded database: it is most of what a start would load for nothing.
  const metrics = config.METRICS_PORT === undefined
    ? undefined
    : (await import("./metrics.ts")).createMetrics({
      poolMax: config.DATABASE_URL ? config.DATABASE_POOL_MAX : 1,
    });
  let passwords = createPasswordHasher(config.BCRYPT_COST);
  if (metrics) passwords = metrics.countBcrypt(passwords);

  // Requests that arrive while the database opens wait for the app (a
  // failed start answers them 503, then exits); once it is ready they go
  // straight to it, as awaiting `ready` costs every request an async call
  // and two promises.
  let setReady!: (handler: Handler) => void;
  let failReady!: (e: unknown) => void;
  const ready = new Promise<Handler>((resolve, reject) => {
    setReady = resolve;
    failReady = reject;
  });

  let handle: Handler = async (req, info) => {
    const app = await ready.catch(() => undefined);
    return app ? app(req, info) : new Response(null, { status: 503 });
  };
  ready.then((app) => handle = app, () => {});
  const server = listen(
    "HOST",
    "PORT",
    config.HOST,
    config.PORT,
    (req, info) => handle(req, info),
  );
  const servers = [server];
  const stopServers = () => Promise.all(servers.map((s) => s.shutdown()));
  try {
    if (metrics) {
      servers.push(listen(
        "METRICS_HOST",
        "METRICS_PORT",
        config.METRICS_HOST,
        config.METRICS_PORT!,
        metrics.serve,
      ));
    }
  } catch (e) {
    failReady(e);
    await stopServers();
    throw e;
  }

  let db;
  try {
    db = await openDatabase(config);
  } catch (e) {
    failReady(e);
    await stopServers();
    throw e;
  }
  try {
    let store = createStore(db.sql, {
      sealFailed: (cause) =>
        log.error("audit records left to the next seal", { cause }),
    });
    // Background work (webhooks, imports, housekeeping) is no request's: uncounted.
    const background = store;
    if (metrics) store = countInFlight(store, metrics.dbInFlight);
    // Rows an older release wrote meanwhile; not a reason to stay down.
    await rekeyUsers(store, log).catch((cause) =>
      log.warn("keying users an older release wrote failed", { cause })
    );
    const generated = await ensureFirstAdmin(store, passwords, config, log);
    const served = servedOn(config, server.addr.port);
    // Listening needs a connection of its own: not on the embedded database.
    const feed = createAuditFeed({
      source: store.audit,
      listen: config.DATABASE_URL !== undefined,
      log,
      gauge: metrics?.auditStreams,
    });
    const imports = startImportWorker(background, passwords, log, {
      pollMs: config.IMPORT_POLL_MS,
      leaseMs: config.IMPORT_LEASE_SECONDS * 1000,
    });
    const app = createApp({
      store,
      config: served,
      log,
      passwords,
      metrics,
      feed,
      importQueued: imports.wake,
    });
    setReady(app.fetch);
    const housekeeping = startHousekeeping(background, config, log);
    const webhooks = startWebhookWorker(background, config, log, {
      counted: metrics?.webhookAttempt,
      listen: config.DATABASE_URL !== undefined,
    });
    metrics?.watchWebhookQueue(() => background.webhookQueue.backlog());
    const url = publicUrl(config.HOST, server.addr.port);
    const metricsUrl = metrics
      ? `${publicUrl(config.METRICS_HOST, servers[1].addr.port)}/metrics`
      : undefined;
    log.info("listening", {
      url: `http://${server.addr.hostname}:${server.addr.port}`,
      ...(metricsUrl ? { metrics: metricsUrl } : {}),
      database: db.describe,
      startupMs: Math.round(performance.now() - started),
    });
    if (generated) {
      // The block closes the first start: after "listening", whose line
      // the log writes without blocking (the block goes to stderr).
      await log.flush();
      printFirstAdmin(generated, served.PUBLIC_URL, options.print);
    }
    const openDb = db;
    return {
      url,
      metricsUrl,
      app,
      store,
      sql: db.sql,
      async close() {
        // Open streams never finish by themselves: ended as the servers
        // stop accepting, so that the shutdown completes.
        const stopping = stopServers();
        await feed.close();
        // A client that stopped reading holds its connection, and with it
        // the servers' shutdown, as long as it likes: waited for as long as
        // a request may take, no longer.
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([
          stopping,
          new Promise((r) => timer = setTimeout(r, config.REQUEST_TIMEOUT_MS)),
        ]);
        clearTimeout(timer);
        // Deliveries under way are abandoned and sent again later.
        await webhooks.stop();
        // The batch under way commits; the rest waits for the next lease.
        await imports.stop();
        await housekeeping.stop();
        await store.stop();
        await openDb.close();
      },
    };
  } catch (e) {
    failReady(e);
    await stopServers();
    await db.close();
    throw e;
  }
}

/**
 * Deno.serve, with a bind failure said in one line. Deno.serve binds at
 * once and throws, so a port in use stops the start before anything else.
 */
function listen(
  hostVar: string,
  portVar: string,
  hostname: string,
  port: number,
  handler: Handler,
): Deno.HttpServer<Deno.NetAddr> {
  try {
    return Deno.serve({ hostname, port, onListen: () => {} }, handler);
  } catch (e) {
    const where = `${hostname}:${port}`;
    if (e instanceof Deno.errors.AddrInUse) {
      throw new StartupError(
        `${portVar}: ${where} is already in use: stop the process listening there or set ${portVar} to a free port.`,
      );
    }
    if (e instanceof Deno.errors.PermissionDenied) {
      throw new StartupError(
        `${portVar}: not allowed to listen on ${where} (ports below 1024 need privileges): set ${portVar} to 1024 or above.`,
      );
    }
    if (e instanceof Deno.errors.AddrNotAvailable) {
      throw new StartupError(
        `${hostVar}: ${hostname} is not an address of this machine: set ${hostVar} to one of its addresses (0.0.0.0 for all).`,
      );
    }
    throw new StartupError(
      `${hostVar}/${portVar}: cannot listen on ${where} (${
        (e as Error).message
      }): set ${hostVar} to an address of this machine and ${portVar} to a free port.`,
    );
  }
}

/** The URL to show a person: a wildcard address is reached as localhost. */
function publicUrl(host: string, port: number): string {
  const name = host === "0.0.0.0" || host === "::" ? "localhost" : host;
  return `http://${name.includes(":") ? `[${name}]` : name}:${port}`;
}
