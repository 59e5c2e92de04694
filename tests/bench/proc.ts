/**
 * CPU time of processes from /proc, what bench.ts and audit_measure.ts
 * both read: user + system time of all a process's threads, in clock ticks
 * of USER_HZ (100 a second on Linux).
 */

/** User and system CPU seconds the processes used so far (gone ones count 0). */
export async function cpuSeconds(pids: number[]): Promise<number> {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
      // The fields after the command name, which is in parentheses.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // Ended meanwhile.
    }
  }
  return ticks / 100;
}
