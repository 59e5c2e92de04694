import { createHash } from "node:crypto";
import type { AuditAction } from "./actions.ts";

/** A person as the trail names them: id and username at that time. */
export interface AuditParty {
  id: number;
  username: string;
  /** The API key the actor's request came with (actors only). */
  keyId?: number;
}

/**
 * The door a record came through: the HTTP API (the console, sessions and
 * keys), a SCIM connection's write, an import job's writes; a record
 * without one (null) is the service's own doing.
 */
export const VIAS = ["api", "scim", "import"] as const;
export type Via = typeof VIAS[number];

/** What a record says, apart from its place in the chain. */
export interface AuditContent {
  id: number;
  /** ISO 8601 in UTC with milliseconds. */
  time: string;
  action: AuditAction;
  actor: AuditParty | null;
  target: AuditParty | null;
  details: Record<string, unknown>;
  requestId: string | null;
  clientAddress: string | null;
  via: Via | null;
}

/** The previous hash of the very first record. */
export const GENESIS_HASH = new Uint8Array(32);

/**
 * JSON with object keys sorted at every level: the same value always gives
 * the same text, whatever order its keys were written or stored in (jsonb
 * keeps its own order).
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${
      entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`)
        .join(",")
    }}`;
  }
  return JSON.stringify(value);
}

/**
 * The canonical serialisation of a record's content: a JSON array in a fixed
 * field order. Changing it breaks every existing chain, so it never changes.
 * Written as its id, its time and `canonicalTail`, because the seal
 * (audit_seal, its live body in migration 027) learns the id only in the database and puts
 * it and the time in front of the tail the same way.
 */
export function canonicalContent(r: AuditContent): string {
  return `[${canonicalJson(r.id)},${canonicalJson(r.time)},${canonicalTail(r)}`;
}

/**
 * The canonical content after the id and the time (the rest of the array,
 * closing bracket included): what a writer knows and adds to the trail.
 * The actor's key id, when there is one, is an eleventh element, and the
 * door (`via`), when there is one, a twelfth (the key id then null when
 * there is none): a record without them (every record before keys or doors
 * existed, and every record of the service itself) serialises as it always
 * has.
 */
export function canonicalTail(r: Omit<AuditContent, "id" | "time">): string {
  const keyId = r.actor?.keyId;
  const via = r.via ?? null;
  return `${
    [
      r.action,
      r.actor?.id ?? null,
      r.actor?.username ?? null,
      r.target?.id ?? null,
      r.target?.username ?? null,
      r.details,
      r.requestId,
      r.clientAddress,
      ...(via !== null
        ? [keyId ?? null, via]
        : keyId === undefined
        ? []
        : [keyId]),
    ].map(canonicalJson).join(",")
  }]`;
}

/**
 * SHA-256 over the previous record's hash and this record's canonical
 * content: what the seal computes in SQL and verification here, compared
 * by tests/audit_chain_test.ts.
 */
export function chainHash(prevHash: Uint8Array, content: AuditContent) {
  return new Uint8Array(
    createHash("sha256").update(prevHash).update(canonicalContent(content))
      .digest(),
  );
}

export const sameBytes = (a: Uint8Array, b: Uint8Array) =>
  a.length === b.length && a.every((byte, i) => byte === b[i]);

export const hex = (bytes: Uint8Array) =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
