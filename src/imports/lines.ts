/**
 * An import body's physical lines as it streams in: memory holds one line,
 * at most LINE_LIMIT_BYTES, however long a line or the body is.
 */
import { MSG } from "../http/messages.ts";

/** A line longer than this is refused alone (its record's error), never held whole. */
export const LINE_LIMIT_BYTES = 64 * 1024;

/** Why a line or record cannot be read: the contract's message of a body that is no JSON object. */
export const UNREADABLE = MSG.invalidBody;

/** The body passed its limit (IMPORT_LIMITS). */
export class ImportTooLarge extends Error {
  constructor() {
    super("the import's body is over its limit");
  }
}

/** A physical line: its text, or null when it is not UTF-8 or too long. */
export interface Line {
  number: number;
  text: string | null;
  /** Its length in bytes before decoding (a `\r` before `\n` included). */
  bytes: number;
}

/** The longest the reading runs before other work gets the event loop. */
const TURN_MS = 10;

const utf8 = new TextDecoder("utf-8", { fatal: true });
const NEWLINE = 0x0a;

/**
 * The body's lines (without `\n`, a `\r` before it dropped), counted from
 * 1; throws ImportTooLarge once more than `limitBytes` came.
 */
export async function* linesOf(
  body: ReadableStream<Uint8Array>,
  limitBytes: number,
): AsyncGenerator<Line> {
  let number = 0;
  let size = 0;
  let parts: Uint8Array[] = [];
  let partsLength = 0;
  let bytes = 0;
  let tooLong = false;
  const take = (): Line => {
    number++;
    const line = { number, bytes };
    bytes = 0;
    if (tooLong) {
      parts = [];
      partsLength = 0;
      tooLong = false;
      return { ...line, text: null };
    }
    const held = parts.length === 1 ? parts[0] : concat(parts, partsLength);
    parts = [];
    partsLength = 0;
    let end = held.length;
    if (end > 0 && held[end - 1] === 0x0d) end--;
    try {
      return { ...line, text: utf8.decode(held.subarray(0, end)) };
    } catch {
      return { ...line, text: null };
    }
  };
  const keep = (piece: Uint8Array) => {
    bytes += piece.length;
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
  let turn = performance.now();
  for await (const chunk of body) {
    // A body that arrives faster than it is read resolves each read at
    // once: the other requests get their turn between chunks.
    if (performance.now() - turn > TURN_MS) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      turn = performance.now();
    }
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
