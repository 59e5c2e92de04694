import type { ChainEnds, ChainRecord } from "../db/audit-trail.ts";
import { chainHash, hex, sameBytes } from "./chain.ts";

export type Tampering = "altered" | "removed" | "inserted";

export type Verification =
  | {
    ok: true;
    count: number;
    headId: number;
    headHash: string;
    /** Records committed but not yet sealed: not in the chain, not checked. */
    pending: number;
  }
  | {
    ok: false;
    /** The first record found altered, removed or inserted. */
    id: number;
    problem: Tampering;
    message: string;
    /** Records that verified before it. */
    count: number;
  };

/**
 * Walks the chain oldest first. The oldest kept record must follow the
 * sweep's anchor (the last record removed by retention, or the genesis),
 * each record must follow the one before it by id and by hash and hash to
 * what it stores, and the newest must be the head the seals left. So a
 * record altered, removed (first, last or between) or inserted anywhere is
 * named; only records replaced together with every hash after them and the
 * head itself go unseen, which is why the head's hash is worth keeping
 * elsewhere.
 */
export async function verifyChain(
  ends: ChainEnds,
  batches: AsyncIterable<ChainRecord[]>,
): Promise<Verification> {
  let prev = { id: ends.anchorId, hash: ends.anchorHash };
  let count = 0;
  const broken = (id: number, problem: Tampering, message: string) => ({
    ok: false as const,
    id,
    problem,
    message,
    count,
  });
  for await (const batch of batches) {
    for (const r of batch) {
      if (r.id > ends.headId) {
        return broken(
          r.id,
          "inserted",
          `record #${r.id} was inserted: the chain's head is #${ends.headId}`,
        );
      }
      if (r.id <= prev.id) {
        return broken(
          r.id,
          "inserted",
          `record #${r.id} was inserted: the chain starts after #${ends.anchorId}`,
        );
      }
      if (r.id > prev.id + 1) {
        const first = prev.id + 1;
        const last = r.id - 1;
        return broken(
          first,
          "removed",
          first === last
            ? `record #${first} was removed`
            : `records #${first} to #${last} were removed`,
        );
      }
      if (!sameBytes(chainHash(r.prevHash, r), r.hash)) {
        return broken(r.id, "altered", `record #${r.id} was altered`);
      }
      if (!sameBytes(r.prevHash, prev.hash)) {
        return prev.id === ends.anchorId
          ? broken(
            r.id,
            "altered",
            `record #${r.id} was altered: it does not follow the chain's anchor #${ends.anchorId}`,
          )
          : broken(
            prev.id,
            "altered",
            `record #${prev.id} was altered: record #${r.id} does not follow it`,
          );
      }
      prev = r;
      count++;
    }
  }
  if (prev.id < ends.headId) {
    const first = prev.id + 1;
    return broken(
      first,
      "removed",
      first === ends.headId
        ? `record #${first} was removed`
        : `records #${first} to #${ends.headId} were removed`,
    );
  }
  if (!sameBytes(prev.hash, ends.headHash)) {
    return broken(
      prev.id,
      "altered",
      `record #${prev.id} was altered: it is not the chain's head`,
    );
  }
  return {
    ok: true,
    count,
    headId: ends.headId,
    headHash: hex(ends.headHash),
    pending: ends.pending,
  };
}
