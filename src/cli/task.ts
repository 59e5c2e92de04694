/**
 * The shape of a CLI task (`deno task create-admin`, `audit:verify`): a
 * main that takes its arguments, environment and output and answers its
 * exit code, so the tests can run it in their own isolate as well as a
 * process.
 */

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
