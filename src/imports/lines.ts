/**
 * An import body's physical lines as it streams in: memory holds the lines
 * of one chunk of the body (the server reads 64 KiB at a time) and the
 * start of at most one line, at most LINE_LIMIT_BYTES, however long a line
 * or the body is.
 */
import { MSG } from "../http/messages.ts";
import { refuse } from "../refusal.ts";

/** A line longer than this is refused alone (its record's error), never held whole. */
export const LINE_LIMIT_BYTES = 64 * 1024;

/** Why a line or record cannot be read: the contract's message of a body that is no JSON object. */
export const UNREADABLE = MSG.invalidBody;

/** The body passed its limit (IMPORT_LIMITS): thrown from the reading, which it ends. */
export const importTooLarge = () =>
  refuse("too_large", "the import's body is over its limit");

/** A physical line: its text, or null when it is not UTF-8 or too long. */
export interface Line {
  number: number;
  text: string | null;
  /** Its length in bytes before decoding (a `\r` before `\n` included). */
  bytes: number;
}

/** The longest the reading runs before other work gets the event loop (ms). */
const TURN_MS = 10;

const utf8 = new TextDecoder("utf-8", { fatal: true });
const NEWLINE = 0x0a;

/**
 * The body's lines (without `\n`, a `\r` before it dropped), counted from
 * 1, those that end in one chunk of the body together (one promise a
 * chunk, not a line); throws importTooLarge() once more than `limitBytes`
 * came.
 */
export async function* linesOf(
  body: ReadableStream<Uint8Array>,
  limitBytes: number,
): AsyncGenerator<Line[]> {
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
    parts.push(piece);
    partsLength += piece.length;
  };
  const turns = eventLoopTurns();
  for await (const chunk of body) {
    const began = performance.now();
    size += chunk.length;
    if (size > limitBytes) throw importTooLarge();
    const lines: Line[] = [];
    let from = 0;
    for (;;) {
      const at = chunk.indexOf(NEWLINE, from);
      if (at < 0) break;
      keep(chunk.subarray(from, at));
      lines.push(take());
      from = at + 1;
    }
    // A copy of what the next chunk ends: the stream may reuse this one's memory.
    if (from < chunk.length) keep(chunk.slice(from));
    if (lines.length > 0) yield lines;
    await turns.due(began);
  }
  if (partsLength > 0 || tooLong) yield [take()];
}

/**
 * A body that arrives faster than it is read (buffered) resolves each read
 * at once, without a turn of the event loop: other requests would wait for
 * the whole body. `due(began)` counts the reading's work since `began`
 * (the consumer's too, while it holds the lines) and lets the loop turn
 * once TURN_MS of it ran (by a timer: Deno polls no socket between
 * immediates). Waiting for the body is not counted: the loop turns then.
 */
function eventLoopTurns() {
  let busy = 0;
  return {
    async due(began: number) {
      busy += performance.now() - began;
      if (busy <= TURN_MS) return;
      await new Promise((resolve) => setTimeout(resolve, 0));
      busy = 0;
    },
  };
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
