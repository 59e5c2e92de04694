/**
 * What the SCIM lists remember between pages (a filter's count, where a
 * page read in sequence ended), bounded in bytes: a key is the SHA-256 of
 * what names the list (its filter included), never the filter's text, and
 * the entries together stay under a total, the oldest dropped first.
 */
import { createHash } from "node:crypto";

/** The bytes each of the list caches keeps at most. */
export const LIST_CACHE_MAX_BYTES = 4 * 1024 * 1024;

/** What an entry costs beside its key and value: the map's own slot. */
const ENTRY_OVERHEAD = 64;

/** A key of fixed size for `parts` (a connection, a filter, a sort...). */
export const listKey = (...parts: unknown[]) =>
  createHash("sha256").update(JSON.stringify(parts)).digest("base64");

export class ListCache<V> {
  #entries = new Map<string, { value: V; bytes: number }>();
  #bytes = 0;

  /** `sizeOf`: a value's bytes, near enough (a string counts two a character). */
  constructor(
    private sizeOf: (value: V) => number,
    private maxBytes = LIST_CACHE_MAX_BYTES,
  ) {}

  get(key: string): V | undefined {
    return this.#entries.get(key)?.value;
  }

  set(key: string, value: V) {
    this.#drop(key);
    const bytes = ENTRY_OVERHEAD + 2 * key.length + this.sizeOf(value);
    if (bytes > this.maxBytes) return;
    this.#entries.set(key, { value, bytes });
    this.#bytes += bytes;
    while (this.#bytes > this.maxBytes) {
      this.#drop(this.#entries.keys().next().value!);
    }
  }

  delete(key: string) {
    this.#drop(key);
  }

  /** The bytes held now, as `sizeOf` counts them. */
  get bytes() {
    return this.#bytes;
  }

  #drop(key: string) {
    const old = this.#entries.get(key);
    if (!old) return;
    this.#entries.delete(key);
    this.#bytes -= old.bytes;
  }
}
