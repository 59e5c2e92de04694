/**
 * Loads measured in turns, what bench.ts and audit_measure.ts read a ratio
 * from: after a warm-up, each load runs once a round, the order reversed
 * every other round, so a drift of the shared machine weighs on all alike.
 * Returns each load's results, one per round, in round order.
 */
export async function inTurns<K extends string, T>(
  loads: Record<K, () => Promise<T>>,
  rounds: number,
  // By default each load once, its result dropped.
  warmUp: () => Promise<unknown> = async () => {
    for (const name of Object.keys(loads) as K[]) await loads[name]();
  },
): Promise<Record<K, T[]>> {
  const names = Object.keys(loads) as K[];
  const results = Object.fromEntries(
    names.map((n) => [n, [] as T[]]),
  ) as Record<K, T[]>;
  await warmUp();
  for (let round = 0; round < rounds; round++) {
    for (const name of round % 2 ? [...names].reverse() : names) {
      results[name].push(await loads[name]());
    }
  }
  return results;
}
