import { createApp } from "./src/app.ts";
import { createPasswordHasher } from "./src/auth/passwords.ts";
import { ensureFirstAdmin, firstAdminFromEnv } from "./src/bootstrap.ts";
import { ConfigError, loadConfig } from "./src/config.ts";
import { openDatabase } from "./src/db/database.ts";
import { createStore } from "./src/db/store.ts";
import { startHousekeeping } from "./src/housekeeping.ts";
import { createLogger } from "./src/log.ts";

let config;
try {
  config = loadConfig();
  // The first admin's variables too, before anything is opened.
  firstAdminFromEnv(config);
} catch (e) {
  if (!(e instanceof ConfigError)) throw e;
  console.error(e.message);
  Deno.exit(1);
}
const log = createLogger(config.LOG_LEVEL);
const started = performance.now();

const db = await openDatabase(config);
const store = createStore(db.sql);
const passwords = createPasswordHasher(config.BCRYPT_COST);
await ensureFirstAdmin(store, passwords, config, log);
const app = createApp({ store, config, log, passwords });
const housekeeping = startHousekeeping(store, config, log);

// Stop accepting, let in-flight requests finish, then close the pool. The
// listeners come before the server, so a signal right after "listening" is
// handled too, not left to the default action (exit 143); no callback runs
// before `server` below is set, as nothing is awaited in between.
let stopping = false;
const shutdown = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  log.info("shutting down", { signal });
  await server.shutdown();
  housekeeping.stop();
  await db.close();
  log.info("stopped");
  Deno.exit(0);
};
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  Deno.addSignalListener(signal, () => shutdown(signal));
}

const server = Deno.serve({
  hostname: config.HOST,
  port: config.PORT,
  onListen: ({ hostname, port }) =>
    log.info("listening", {
      url: `http://${hostname}:${port}`,
      database: db.describe,
      startupMs: Math.round(performance.now() - started),
    }),
}, app.fetch);
