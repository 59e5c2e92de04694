/**
 * An import's CSV (RFC 4180 with a header row; a quoted field may span
 * lines), each record as its JSON object's text with the line it starts
 * on, or the reason it cannot be read. A record is at most
 * RECORD_LIMIT_BYTES, as a line is, its lines and their newlines counted:
 * past that it is refused at its first line and read on to its end without
 * being held (a quote left open makes the rest of the body that one
 * record). Fields are cut from each line by searching for the next quote
 * or comma, never built a character at a time, so memory holds at most
 * one record beside the lines being read, however the body runs.
 */
import type { StoredRecord } from "../db/imports.ts";
import { type Line, LINE_LIMIT_BYTES, UNREADABLE } from "./lines.ts";

/** The most a CSV record may take, quoted newlines included: a line's limit. */
export const RECORD_LIMIT_BYTES = LINE_LIMIT_BYTES;

const QUOTE = 0x22;

/**
 * The header row names the columns (the record's fields, as NDJSON names
 * them; unknown ones are ignored); an empty field is an absent one. A
 * record is refused at its first line when its field count differs from
 * the header's, a quote stands inside an unquoted field, a quote never
 * closes, one of its lines cannot be read, or it is over its limit; a
 * header that cannot be read is refused at its line, and then so is every
 * record (there are no columns to match).
 */
export async function* csvRecords(
  batches: AsyncIterable<Line[]>,
): AsyncGenerator<StoredRecord[]> {
  let header: string[] | undefined;
  /** The record's fields so far, and the pieces of the field under way. */
  let fields: string[] = [];
  let pieces: string[] = [];
  /** No character yet in the field under way: a quote here opens it. */
  let fieldEmpty = true;
  let quoted = false;
  let start = 0;
  let size = 0;
  /** The record is within its limit, so its text is kept. */
  let held = true;
  let broken = false;

  const add = (text: string, from: number, to: number) => {
    if (to <= from) return;
    fieldEmpty = false;
    if (held) pieces.push(text.slice(from, to));
  };
  const endField = () => {
    if (held) fields.push(pieces.join(""));
    pieces = [];
    fieldEmpty = true;
  };
  /** Reads one line of the record on from where the quote state stands. */
  const scan = (text: string) => {
    let i = 0;
    for (;;) {
      if (quoted) {
        const q = text.indexOf('"', i);
        if (q < 0) return add(text, i, text.length);
        add(text, i, q);
        if (text.charCodeAt(q + 1) === QUOTE) {
          add('"', 0, 1);
          i = q + 2;
        } else {
          quoted = false;
          i = q + 1;
        }
        continue;
      }
      if (fieldEmpty && text.charCodeAt(i) === QUOTE) {
        quoted = true;
        i++;
        continue;
      }
      const comma = text.indexOf(",", i);
      const end = comma < 0 ? text.length : comma;
      const quote = text.indexOf('"', i);
      // A quote inside an unquoted field, or after a quoted one closed.
      if (quote >= 0 && quote < end) broken = true;
      add(text, i, end);
      if (comma < 0) return;
      endField();
      i = comma + 1;
    }
  };
  /** The record that ended: its verdict, or undefined for a header or a blank line. */
  const record = (): StoredRecord | undefined => {
    endField();
    const got = held ? fields : undefined;
    const refused = broken || !held;
    fields = [];
    broken = false;
    const unreadable = { line: start, record: null, problem: UNREADABLE };
    if (!header) {
      header = refused ? [] : got!.map((h) => h.trim());
      return refused ? unreadable : undefined;
    }
    if (refused) return unreadable;
    if (got!.length === 1 && got![0] === "") return undefined;
    if (got!.length !== header.length) return unreadable;
    const value: Record<string, string> = {};
    header.forEach((name, i) => {
      if (got![i] !== "" && name !== "") value[name] = got![i];
    });
    return { line: start, record: JSON.stringify(value), problem: null };
  };

  for await (const lines of batches) {
    const out: StoredRecord[] = [];
    for (const { number, text, bytes } of lines) {
      if (quoted) {
        // The newline is the field's.
        size += 1 + bytes;
        if (held) pieces.push("\n");
      } else {
        start = number;
        size = bytes;
        held = true;
      }
      if (held && size > RECORD_LIMIT_BYTES) {
        // Read on to the record's end, holding none of it.
        held = false;
        fields = [];
        pieces = [];
      }
      if (text === null) broken = true;
      else scan(text);
      if (quoted) continue;
      const r = record();
      if (r) out.push(r);
    }
    yield out;
  }
  if (quoted) yield [{ line: start, record: null, problem: UNREADABLE }];
}
