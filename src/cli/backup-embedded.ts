/**
 * A backup of the embedded database while the service runs on it:
 *
 *   deno task backup:embedded OUT
 *
 * Asks the running service (DATA_DIR as the service's, `./data` by default)
 * for a copy of its data directory, consistent as of one moment, and writes
 * it to OUT as a tar archive (written whole or not at all). Restore: unpack
 * it into an empty directory and start the service with that DATA_DIR
 * (docs/operations.md, "Backups").
 */
import { backupSocketPath } from "../db/embedded.ts";
import { runAsProcess, taskConfig, type TaskMain } from "./task.ts";

const USAGE = "usage: deno task backup:embedded OUT";

export const backupEmbedded: TaskMain = async (args, env, out) => {
  if (args.length !== 1 || args[0].startsWith("-")) {
    out.error(USAGE);
    return 1;
  }
  const config = taskConfig(env, out);
  if (!config) return 1;
  if (config.DATABASE_URL) {
    out.error(
      "DATABASE_URL is set: back up that PostgreSQL database with pg_dump (docs/operations.md, Backups).",
    );
    return 1;
  }
  const socket = backupSocketPath(config.DATA_DIR);
  let conn: Deno.UnixConn;
  try {
    conn = await Deno.connect({ transport: "unix", path: socket });
  } catch {
    out.error(
      `No service answers for DATA_DIR ${config.DATA_DIR} (${socket}): start it, or, while it is stopped, copy the directory itself.`,
    );
    return 2;
  }
  const [target] = args;
  const partial = `${target}.partial`;
  const file = await Deno.open(partial, {
    write: true,
    create: true,
    truncate: true,
  });
  let size = 0;
  const tail = new Uint8Array(1024);
  try {
    for await (const chunk of conn.readable) {
      await writeAll(file, chunk);
      size += chunk.length;
      // The last 1024 bytes: a whole tar archive ends with two zero blocks.
      const keep = Math.min(chunk.length, 1024);
      tail.copyWithin(0, keep);
      tail.set(chunk.subarray(chunk.length - keep), 1024 - keep);
    }
  } catch {
    size = 0; // cut off: judged below
  } finally {
    file.close();
  }
  if (size < 1024 || size % 512 !== 0 || tail.some((b) => b !== 0)) {
    await Deno.remove(partial).catch(() => {});
    out.error("The service cut the backup short: nothing was written.");
    return 3;
  }
  await Deno.rename(partial, target);
  out.log(
    `${target}: ${size} bytes, the embedded database of ${config.DATA_DIR}`,
  );
  return 0;
};

async function writeAll(file: Deno.FsFile, bytes: Uint8Array) {
  for (let at = 0; at < bytes.length;) {
    at += await file.write(bytes.subarray(at));
  }
}

if (import.meta.main) await runAsProcess(backupEmbedded);
