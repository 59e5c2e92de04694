/**
 * An import's body read as it streams in: NDJSON (one JSON object a line)
 * or CSV (csv.ts), each record as its JSON object's text with the line it
 * starts on, or the reason it cannot be read. Memory holds one line and
 * one record (each at most 64 KiB, lines.ts) and one batch, however long
 * the body.
 */
import type { StoredRecord } from "../db/imports.ts";
import { csvRecords } from "./csv.ts";
import { importTooLarge, type Line, linesOf, UNREADABLE } from "./lines.ts";

/** The most an import's body may hold: past either, 413 `Request body too large`. */
export const IMPORT_LIMITS = {
  bytes: 1024 ** 3,
  records: 1_000_000,
};

/** Records stored per statement while the body streams in. */
const UPLOAD_BATCH = 2000;

export type ImportFormat = "ndjson" | "csv";

/** NDJSON: each non-blank line one JSON object. */
async function* ndjsonRecords(
  batches: AsyncIterable<Line[]>,
): AsyncGenerator<StoredRecord[]> {
  for await (const lines of batches) {
    yield lines.flatMap(({ number, text }): StoredRecord[] => {
      if (text === null) {
        return [{ line: number, record: null, problem: UNREADABLE }];
      }
      if (text.trim() === "") return [];
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        value = undefined;
      }
      // A raw NUL cannot be in valid JSON (and text holds none): stored as read.
      return [
        isObject(value)
          ? { line: number, record: text, problem: null }
          : { line: number, record: null, problem: UNREADABLE },
      ];
    });
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The body's records in batches, with how many came so far; throws
 * importTooLarge() past IMPORT_LIMITS (the caller discards what it stored).
 */
export async function* readImport(
  body: ReadableStream<Uint8Array>,
  format: ImportFormat,
  limits = IMPORT_LIMITS,
): AsyncGenerator<StoredRecord[]> {
  const lines = linesOf(body, limits.bytes);
  const records = format === "csv" ? csvRecords(lines) : ndjsonRecords(lines);
  let batch: StoredRecord[] = [];
  let count = 0;
  for await (const some of records) {
    for (const r of some) {
      if (++count > limits.records) throw importTooLarge();
      batch.push(r);
      if (batch.length >= UPLOAD_BATCH) {
        yield batch;
        batch = [];
      }
    }
  }
  if (batch.length > 0) yield batch;
}
