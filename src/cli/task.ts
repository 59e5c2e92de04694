/**
 * The shape of a CLI task (`deno task create-admin`, `audit:verify`): a
 * main that takes its arguments, environment and output and answers its
 * exit code, so the tests can run it in their own isolate as well as a
 * process.
 */

import { type Config, ConfigError, loadConfig } from "../config.ts";
import { type Database, openDatabase } from "../db/database.ts";

/** Where a task writes: the console when it runs as a process. */
export interface TaskOutput {
  log(line: string): void;
  error(line: string): void;
}

export type TaskMain = (
  args: string[],
  env: Record<string, string | undefined>,
  out: TaskOutput,
) => Promise<number>;

/** Runs a task as this process: its output on the console, its code the exit code. */
export async function runAsProcess(main: TaskMain): Promise<never> {
  Deno.exit(await main(Deno.args, Deno.env.toObject(), console));
}

/** The service's configuration from `env`, or undefined once `out` says what is wrong. */
export function taskConfig(
  env: Record<string, string | undefined>,
  out: TaskOutput,
): Config | undefined {
  try {
    return loadConfig(env);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    out.error(e.message);
  }
}

/** The service's database, or undefined once `out` says why it cannot be opened. */
export async function openTaskDatabase(
  config: Config,
  out: TaskOutput,
): Promise<Database | undefined> {
  try {
    return await openDatabase(config);
  } catch (e) {
    out.error(`Cannot open the database: ${(e as Error).message}`);
  }
}

/**
 * Runs `work` on the service's database, configured from `env`, and closes
 * it after; answers `unavailable` once `out` says why the configuration or
 * the database failed.
 */
export async function withTaskDatabase(
  env: Record<string, string | undefined>,
  out: TaskOutput,
  unavailable: number,
  work: (db: Database) => Promise<number>,
): Promise<number> {
  const config = taskConfig(env, out);
  const db = config && await openTaskDatabase(config, out);
  if (!db) return unavailable;
  try {
    return await work(db);
  } finally {
    await db.close();
  }
}
