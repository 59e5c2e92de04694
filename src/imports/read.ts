/**
 * An import's body read as it streams in: NDJSON (one JSON object a line)
 * or CSV (RFC 4180 with a header row; a quoted field may span lines), each
 * record as its JSON object's text with the line it starts on, or the
 * reason its line cannot be read. Memory holds one line (at most
 * LINE_LIMIT_BYTES) and one batch, however long the body.
 */
import { MSG } from "../http/messages.ts";
import type { StoredRecord } from "../db/imports.ts";

/** The most an import's body may hold: past either, 413 `Request body too large`. */
export const IMPORT_LIMITS = {
  bytes: 1024 ** 3,
  records: 1_000_000,
};

/** A line longer than this is refused alone (its record's error), never held whole. */
export const LINE_LIMIT_BYTES = 64 * 1024;

/** Records stored per statement while the body streams in. */
const UPLOAD_BATCH = 2000;

export type ImportFormat = "ndjson" | "csv";

/** The body passed IMPORT_LIMITS. */
export class ImportTooLarge extends Error {
  constructor() {
    super("the import's body is over its limit");
  }
}

/** Why a line cannot be read: the contract's message of a body that is no JSON object. */
const UNREADABLE = MSG.invalidBody;

const utf8 = new TextDecoder("utf-8", { fatal: true });
const NEWLINE = 0x0a;

/** A physical line: its text, or null when it is not UTF-8 or too long. */
interface Line {
  number: number;
  text: string | null;
}

/** The body's lines (without `\n`, a `\r` before it dropped), counted from 1. */
async function* linesOf(
  body: ReadableStream<Uint8Array>,
  limitBytes: number,
): AsyncGenerator<Line> {
  let number = 0;
  let size = 0;
  let parts: Uint8Array[] = [];
  let partsLength = 0;
  let tooLong = false;
  const take = (): Line => {
    number++;
    if (tooLong) {
      parts = [];
      partsLength = 0;
      tooLong = false;
      return { number, text: null };
    }
    const bytes = parts.length === 1 ? parts[0] : concat(parts, partsLength);
    parts = [];
    partsLength = 0;
    let end = bytes.length;
    if (end > 0 && bytes[end - 1] === 0x0d) end--;
    try {
      return { number, text: utf8.decode(bytes.subarray(0, end)) };
    } catch {
      return { number, text: null };
    }
  };
  const keep = (piece: Uint8Array) => {
    if (tooLong) return;
    if (partsLength + piece.length > LINE_LIMIT_BYTES) {
      tooLong = true;
      parts = [];
      partsLength = 0;
      return;
    }
    // A copy: the stream may reuse its chunk's memory.
    parts.push(piece.slice());
    partsLength += piece.length;
  };
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limitBytes) throw new ImportTooLarge();
    let from = 0;
    for (;;) {
      const at = chunk.indexOf(NEWLINE, from);
      if (at < 0) break;
      keep(chunk.subarray(from, at));
      yield take();
      from = at + 1;
    }
    if (from < chunk.length) keep(chunk.subarray(from));
  }
  if (partsLength > 0 || tooLong) yield take();
}

function concat(parts: Uint8Array[], length: number) {
  const out = new Uint8Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** NDJSON: each non-blank line one JSON object. */
async function* ndjsonRecords(lines: AsyncIterable<Line>) {
  for await (const { number, text } of lines) {
    if (text === null) {
      yield { line: number, record: null, problem: UNREADABLE };
      continue;
    }
    if (text.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    // A raw NUL cannot be in valid JSON (and text holds none): stored as read.
    yield isObject(value)
      ? { line: number, record: text, problem: null }
      : { line: number, record: null, problem: UNREADABLE };
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * CSV: the header row names the columns (the record's fields, as NDJSON
 * names them; unknown ones are ignored); an empty field is an absent one.
 * A record whose field count differs from the header's, or whose quote
 * never closes, is refused at its first line.
 */
async function* csvRecords(lines: AsyncIterable<Line>) {
  let header: string[] | undefined;
  let fields: string[] = [];
  let field = "";
  let quoted = false;
  let start = 0;
  let broken = false;
  const record = (line: number): StoredRecord | undefined => {
    fields.push(field);
    const got = fields;
    fields = [];
    field = "";
    if (!header) {
      header = got.map((h) => h.trim());
      return undefined;
    }
    if (got.length === 1 && got[0] === "") return undefined;
    if (broken || got.length !== header.length) {
      broken = false;
      return { line, record: null, problem: UNREADABLE };
    }
    const value: Record<string, string> = {};
    header.forEach((name, i) => {
      if (got[i] !== "" && name !== "") value[name] = got[i];
    });
    return { line, record: JSON.stringify(value), problem: null };
  };
  for await (const { number, text } of lines) {
    if (!quoted) start = number;
    if (text === null) {
      // Unreadable: the record it belongs to is refused.
      broken = true;
      if (!quoted) {
        const r = record(start);
        if (r) yield r;
      }
      continue;
    }
    for (let i = 0; i < text.length; i++) {
      const ch = text[i];
      if (quoted) {
        if (ch === '"') {
          if (text[i + 1] === '"') {
            field += '"';
            i++;
          } else quoted = false;
        } else field += ch;
      } else if (ch === '"' && field === "") {
        quoted = true;
      } else if (ch === ",") {
        fields.push(field);
        field = "";
      } else {
        if (ch === '"') broken = true;
        field += ch;
      }
    }
    if (quoted) {
      field += "\n";
      continue;
    }
    const r = record(start);
    if (r) yield r;
  }
  if (quoted) {
    yield { line: start, record: null, problem: UNREADABLE };
  }
}

/**
 * The body's records in batches, with how many came so far; throws
 * ImportTooLarge past IMPORT_LIMITS (the caller discards what it stored).
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
  for await (const r of records) {
    if (++count > limits.records) throw new ImportTooLarge();
    batch.push(r);
    if (batch.length >= UPLOAD_BATCH) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}
