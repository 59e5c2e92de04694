import { loadConfig, StartupError } from "./src/config.ts";
import { createLogger, type Logger } from "./src/log.ts";
import { type Service, startService } from "./src/server.ts";

// Lines are buffered (src/log.ts): every way out writes them first.
let log: Logger | undefined;
try {
  const config = loadConfig();
  const logger = log = createLogger(config.LOG_LEVEL);
  const starting = startService(config, { log: logger });

  // Stop accepting, let in-flight requests finish, then close the pool. The
  // listeners come first, so a signal during the start is handled too (the
  // start completes, then everything closes), not left to the default
  // action (exit 143).
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    let service: Service;
    try {
      service = await starting;
    } catch {
      return; // the start failed: the catch below reports it and exits
    }
    logger.info("shutting down", { signal });
    await service.close();
    logger.info("stopped");
    await logger.flush();
    Deno.exit(0);
  };
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    Deno.addSignalListener(signal, () => shutdown(signal));
  }
  await starting;
} catch (e) {
  // What an operator can fix is one line, no stack trace; anything else is a
  // bug and keeps its stack.
  await log?.flush();
  if (!(e instanceof StartupError)) throw e;
  console.error(e.message);
  Deno.exit(1);
}
