// Embedded PostgreSQL for when DATABASE_URL is unset: PGlite (Postgres in
// WASM) persisted to a directory, exposed over the wire protocol on loopback
// so the rest of the service talks to it through postgres.js like any server.
import { PGlite } from "@electric-sql/pglite";
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";

export interface EmbeddedPostgres {
  url: string;
  close(): Promise<void>;
}

export async function startEmbeddedPostgres(
  dataDir: string,
): Promise<EmbeddedPostgres> {
  await Deno.mkdir(dataDir, { recursive: true });
  // PGlite does not guard its directory: a second process would open it and
  // corrupt it. An exclusive lock on the directory itself, held until close.
  const guard = await Deno.open(dataDir, { read: true });
  if (!await guard.tryLock(true)) {
    guard.close();
    throw new Error(
      `${dataDir} is in use by another process: the embedded database has one owner at a time`,
    );
  }
  // A plain path selects PGlite's Node filesystem backend: data is written
  // straight to dataDir (initdb runs only when the directory is empty).
  let db: PGlite;
  try {
    // pg_trgm backs the list's `q` search (migration 004), as on a server.
    db = await PGlite.create(dataDir, { extensions: { pg_trgm } });
  } catch (err) {
    guard.close();
    throw err;
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
  // getServerConn() is "127.0.0.1:<port>" once listening; PGlite accepts
  // any user/password, and its only database is "postgres".
  const url = `postgres://postgres:postgres@${server.getServerConn()}/postgres`;
  return {
    url,
    async close() {
      // Stop accepting clients first, then close PGlite, which shuts the
      // backend down cleanly so the next open sees every committed row.
      await server.stop();
      await db.close();
      guard.close();
    },
  };
}
