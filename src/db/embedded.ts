// Embedded PostgreSQL for when DATABASE_URL is unset: PGlite (Postgres in
// WASM) persisted to a directory, exposed over the wire protocol on loopback
// so the rest of the service talks to it through postgres.js like any server.
import { PGlite } from "@electric-sql/pglite";
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";
import { StartupError } from "../config.ts";
import { relativeTarEntries } from "./tar-entries.ts";

export interface EmbeddedPostgres {
  url: string;
  close(): Promise<void>;
}

/**
 * Where a running embedded database hands out backups: a Unix socket beside
 * DATA_DIR (inside it, PGlite's dump would try to archive the socket). Each
 * connection receives one tar archive of the data directory, then EOF.
 */
export const backupSocketPath = (dataDir: string) =>
  `${dataDir.replace(/\/+$/, "")}.backup.sock`;

export async function startEmbeddedPostgres(
  dataDir: string,
): Promise<EmbeddedPostgres> {
  try {
    await Deno.mkdir(dataDir, { recursive: true });
  } catch (e) {
    if (e instanceof Deno.errors.AlreadyExists) {
      throw new StartupError(
        `DATA_DIR: ${dataDir} exists and is not a directory: set DATA_DIR to a directory (it is created when missing).`,
      );
    }
    throw new StartupError(
      `DATA_DIR: cannot use ${dataDir} as the embedded database's directory (${
        firstLine(e)
      }): set DATA_DIR to a directory this user may create or write.`,
    );
  }
  // PGlite does not guard its directory: a second process would open it and
  // corrupt it. An exclusive lock on the directory itself, held until close.
  const guard = await Deno.open(dataDir, { read: true });
  if (!await guard.tryLock(true)) {
    guard.close();
    throw new StartupError(
      `DATA_DIR: ${dataDir} is in use by another process (the embedded database has one owner at a time): stop that process (a running service, or a task) and run this again. Another DATA_DIR would be another database, without these users.`,
    );
  }
  // A plain path selects PGlite's Node filesystem backend: data is written
  // straight to dataDir (initdb runs only when the directory is empty).
  let db: PGlite;
  try {
    // pg_trgm backs the list's `q` search (migration 004), as on a server.
    db = await PGlite.create(dataDir, { extensions: { pg_trgm } });
  } catch (e) {
    guard.close();
    throw new StartupError(
      `DATA_DIR: the embedded database in ${dataDir} cannot be opened (${
        firstLine(e)
      }): check that the directory holds a database of this service, or set another DATA_DIR.`,
    );
  }
  const server = new PGLiteSocketServer({
    db,
    host: "127.0.0.1",
    port: 0, // let the OS pick a free port
    // PGlite is a single backend session. The server can multiplex several
    // sockets onto it, but it interleaves their extended-protocol messages
    // (Parse/Bind/Execute) and concurrent clients then get wrong or empty
    // results. So allow one socket only; use postgres.js with `max: 1`.
    maxConnections: 1,
  });
  try {
    await server.start();
  } catch (err) {
    await db.close();
    guard.close();
    throw err;
  }
  const backups = await serveBackups(db, backupSocketPath(dataDir));
  // getServerConn() is "127.0.0.1:<port>" once listening; PGlite accepts
  // any user/password, and its only database is "postgres".
  const url = `postgres://postgres:postgres@${server.getServerConn()}/postgres`;
  return {
    url,
    async close() {
      // Stop accepting clients first, then close PGlite, which shuts the
      // backend down cleanly so the next open sees every committed row.
      await backups?.close();
      await server.stop();
      await db.close();
      guard.close();
    },
  };
}

const firstLine = (e: unknown) =>
  String(e instanceof Error ? e.message : e).split("\n")[0];

/**
 * Serves backups of the running database (`deno task backup:embedded`):
 * PGlite's dump of its data directory (entries named relative to it),
 * taken between two statements (it waits for the one running), so the copy
 * is what a crash at that moment would leave: every committed transaction, which PostgreSQL's recovery
 * replays from the WAL when the copy is opened. Without a socket (a path
 * too long for one, a directory that refuses it) the service runs all the
 * same; the task then says that no backup was offered.
 */
async function serveBackups(db: PGlite, path: string) {
  // The directory lock is ours: a socket left there is a dead process's.
  await Deno.remove(path).catch(() => {});
  let listener: Deno.UnixListener;
  try {
    listener = Deno.listen({ transport: "unix", path });
  } catch {
    return undefined;
  }
  const serving = (async () => {
    for await (const conn of listener) {
      try {
        const dump = await db.dumpDataDir("none");
        await dump.stream().pipeThrough(relativeTarEntries()).pipeTo(
          conn.writable,
        );
      } catch {
        conn.close(); // the task sees a cut archive and says so
      }
    }
  })();
  return {
    async close() {
      listener.close();
      await serving.catch(() => {});
      await Deno.remove(path).catch(() => {});
    },
  };
}
