import type { LogLevel } from "./config.ts";

const RANK: Record<LogLevel, number> = {
  debug: 10,
  info: 20,
  warn: 30,
  error: 40,
  silent: 99,
};

export type LogFields = Record<string, unknown>;

/** What the access log says of a request, in this order. */
export interface RequestFields {
  requestId: string;
  method: string;
  path: string;
  status: number;
  ip: string | undefined;
  ms: number;
}

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /**
   * The access log's line of a request (`info`, msg `request`): the one
   * line written on every request, so it waits in the buffer for the next
   * write (FLUSH_MS) where every other line is written at once.
   */
  request(fields: RequestFields): void;
  /** Whether lines of this level are written: skip building them if not. */
  enabled(level: Exclude<LogLevel, "silent">): boolean;
  /** Resolves once every line logged so far is written. */
  flush(): Promise<void>;
}

/**
 * Structured JSON lines on stdout. Callers pass values, never secrets:
 * tokens, passwords and hashes are simply never handed to the logger. A
 * field's text is cut to LOGGED_TEXT_MAX characters, with its length beside.
 *
 * By default lines go to stdout through a buffer (`bufferedLines`) written
 * without blocking the event loop; a `write` of one's own gets each line at
 * once, as it is logged, and a sink of one's own (another `bufferedLines`)
 * gets them as stdout would.
 */
export function createLogger(
  level: LogLevel = "info",
  write?: ((line: string) => void) | LineSink,
): Logger {
  const out: LineSink = typeof write === "function"
    ? { line: write, flush: () => Promise.resolve() }
    : write ?? stdoutLines();
  const min = RANK[level];
  const enabled = (lvl: Exclude<LogLevel, "silent">) => RANK[lvl] >= min;
  const at = (lvl: Exclude<LogLevel, "silent">) => {
    const head = `","level":"${lvl}","msg":`;
    return (msg: string, fields: LogFields = {}) => {
      if (RANK[lvl] < min) return;
      out.line(
        flatLine(head, msg, fields) ?? JSON.stringify({
          time: isoNow(),
          level: lvl,
          msg,
          ...bounded(fields),
        }, errorReplacer),
        false,
      );
    };
  };
  const requestHead = `","level":"info","msg":"request","requestId":`;
  return {
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    request(f) {
      if (RANK.info < min) return;
      // Written out field by field: no object spread, no replacer.
      let line = `{"time":"${isoNow()}${requestHead}${
        text(f.requestId)
      },"method":${text(f.method)},"path":${text(f.path)},"status":${f.status}`;
      if (f.ip !== undefined) line += `,"ip":${text(f.ip)}`;
      line += `,"ms":${f.ms}`;
      for (const name of REQUEST_TEXTS) {
        const value = f[name];
        if (value !== undefined && value.length > LOGGED_TEXT_MAX) {
          line += `,"${name}Length":${value.length}`;
        }
      }
      out.line(line + "}", true);
    },
    enabled,
    flush: () => out.flush(),
  };
}

/**
 * The most characters a logged text value keeps: a path or header is the
 * client's to choose, and must not make a line as long as it likes.
 */
const LOGGED_TEXT_MAX = 256;

/** What JSON must escape in a string (or JSON.stringify does: lone surrogates). */
// deno-lint-ignore no-control-regex -- the control characters are what it finds
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * A text value as JSON, cut to LOGGED_TEXT_MAX characters. Most are plain
 * (an id, a path, an address) and are only quoted, which costs less than
 * JSON.stringify on every access line.
 */
const text = (value: string) => {
  const cut = value.length > LOGGED_TEXT_MAX
    ? value.slice(0, LOGGED_TEXT_MAX)
    : value;
  return NEEDS_ESCAPE.test(cut) ? JSON.stringify(cut) : `"${cut}"`;
};

const REQUEST_TEXTS = ["requestId", "method", "path", "ip"] as const;

const RESERVED = new Set(["time", "level", "msg"]);

/**
 * The line of fields that are all strings, numbers, booleans, null or
 * undefined, written out as JSON.stringify would write the object (same
 * order, each `<name>Length` last), without copying the fields or calling
 * a replacer on each; undefined when a field is anything else (an Error, an
 * object) or is named as a line's own field.
 */
function flatLine(
  head: string,
  msg: string,
  fields: LogFields,
): string | undefined {
  let line = `{"time":"${isoNow()}${head}${JSON.stringify(msg)}`;
  let lengths = "";
  for (const name in fields) {
    if (RESERVED.has(name)) return undefined;
    const value = fields[name];
    if (value === undefined) continue;
    const kind = typeof value;
    if (kind === "string") {
      const s = value as string;
      line += `,${JSON.stringify(name)}:${text(s)}`;
      if (s.length > LOGGED_TEXT_MAX) {
        lengths += `,${JSON.stringify(`${name}Length`)}:${s.length}`;
      }
    } else if (kind === "number" || kind === "boolean" || value === null) {
      line += `,${JSON.stringify(name)}:${JSON.stringify(value)}`;
    } else {
      return undefined;
    }
  }
  return line + lengths + "}";
}

/**
 * The fields with every text value cut to LOGGED_TEXT_MAX characters, its
 * full length beside it as `<name>Length`; the fields themselves when
 * nothing is that long (the common case costs no copy).
 */
function bounded(fields: LogFields): LogFields {
  let out = fields;
  for (const name in fields) {
    const value = fields[name];
    if (typeof value !== "string" || value.length <= LOGGED_TEXT_MAX) continue;
    if (out === fields) out = { ...fields };
    out[name] = value.slice(0, LOGGED_TEXT_MAX);
    out[`${name}Length`] = value.length;
  }
  return out;
}

function errorReplacer(_key: string, value: unknown) {
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return {
      name: value.name,
      message: value.message,
      code,
      stack: value.stack,
    };
  }
  return value;
}

/**
 * The time as toISOString writes it; the minute's part is made once a
 * minute (a Date and its ISO text on every line are much of a line's cost).
 */
let minute = -1;
let minuteText = "";
function isoNow(): string {
  const now = Date.now();
  const m = Math.floor(now / 60_000);
  if (m !== minute) {
    minute = m;
    minuteText = new Date(m * 60_000).toISOString().slice(0, 17);
  }
  const ms = now - m * 60_000;
  const s = Math.floor(ms / 1000);
  const frac = ms - s * 1000;
  return `${minuteText}${s < 10 ? "0" : ""}${s}.${
    frac < 10 ? "00" : frac < 100 ? "0" : ""
  }${frac}Z`;
}

/** Where a logger's lines go. */
export interface LineSink {
  /** One line, without its newline; `later`: it may wait for the next write. */
  line(text: string, later: boolean): void;
  /** Resolves once every line so far is written. */
  flush(): Promise<void>;
}

/** The most a line that may wait does wait: a 500's cause is out by then. */
export const FLUSH_MS = 50;
/** Bytes that, buffered, are written at once. */
export const FLUSH_BYTES = 64 * 1024;
/**
 * Bytes buffered beyond which new lines are dropped (and counted in a
 * line written once the output catches up): an output that stopped reading
 * must not grow the process's memory without end.
 */
export const PENDING_MAX = 16 * 1024 * 1024;

/** What bufferedLines writes to: stdout, or a test's. */
export interface Output {
  write(bytes: Uint8Array): Promise<number>;
  writeSync(bytes: Uint8Array): number;
}

/**
 * Lines buffered and written in order, one write at a time, never
 * blocking the event loop: a line that may wait (`later`) is written
 * within FLUSH_MS or once FLUSH_BYTES are buffered, any other at once (with
 * everything before it). A write still under way takes whatever came
 * meanwhile next. `flush` is the graceful end; `flushSync` the last resort
 * of an exit nobody awaited (it writes what is buffered, though a write
 * under way may then land after it).
 */
export function bufferedLines(
  out: Output,
  { flushMs = FLUSH_MS, flushBytes = FLUSH_BYTES, pendingMax = PENDING_MAX } =
    {},
): LineSink & { flushSync(): void } {
  // Lines are encoded into bytes as they come, not kept as strings: a
  // string that waits out a young-generation collection is copied by it.
  const encoder = new TextEncoder();
  const size = 2 * flushBytes;
  let buffer: Uint8Array = new Uint8Array(size);
  let used = 0;
  // The buffer of the last write, reused once that write is done.
  let spare: Uint8Array | undefined;
  let urgent = false;
  let dropped = 0;
  let writing: Promise<void> | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;

  /** Adds a line; false when it would pass pendingMax (unless `always`). */
  const append = (text: string, always = false) => {
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    const most = used + 3 * text.length + 1;
    if (most > buffer.length) {
      if (most > pendingMax && !always) return false;
      const bigger = new Uint8Array(Math.max(2 * buffer.length, most));
      bigger.set(buffer.subarray(0, used));
      buffer = bigger;
    }
    used += encoder.encodeInto(text, buffer.subarray(used)).written;
    buffer[used++] = 10;
    return true;
  };
  /** What is buffered, the buffer then started anew. */
  const take = () => {
    if (dropped > 0) {
      const count = dropped;
      dropped = 0;
      append(
        `{"time":"${isoNow()}","level":"warn","msg":"log lines dropped: the output did not keep up","dropped":${count}}`,
        true,
      );
    }
    const chunk = buffer.subarray(0, used);
    buffer = spare ?? new Uint8Array(size);
    spare = undefined;
    used = 0;
    urgent = false;
    return chunk;
  };
  const writeOut = async () => {
    try {
      // Whatever came during a write is written next if it may not wait.
      do {
        const chunk = take();
        for (let done = 0; done < chunk.length;) {
          done += await out.write(chunk.subarray(done));
        }
        if (chunk.buffer.byteLength === size) {
          spare = new Uint8Array(chunk.buffer);
        }
      } while (urgent || used >= flushBytes);
    } catch {
      // Nowhere to write (stdout closed): what was pending is lost either way.
      used = 0;
    } finally {
      writing = undefined;
      if (used > 0) schedule();
    }
  };
  const start = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    writing ??= writeOut();
  };
  const schedule = () => {
    if (timer !== undefined || writing) return;
    const t = setTimeout(start, flushMs);
    // A pending timer does not keep the process alive: its exit writes the rest.
    Deno.unrefTimer(t);
    timer = t;
  };
  return {
    line(text, later) {
      if (!append(text)) {
        dropped++;
        return;
      }
      if (!later) urgent = true;
      if (writing) return;
      if (urgent || used >= flushBytes) start();
      else schedule();
    },
    async flush() {
      while (writing || used > 0 || dropped > 0) {
        if (!writing) start();
        await writing;
      }
    },
    flushSync() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      if (used === 0 && dropped === 0) return;
      try {
        const chunk = take();
        for (let done = 0; done < chunk.length;) {
          done += out.writeSync(chunk.subarray(done));
        }
      } catch {
        // Nowhere to write.
      }
    },
  };
}

/**
 * The process's one buffer on stdout (every logger of the process shares
 * it, so their lines keep their order), written out at its exit.
 */
let stdout: (LineSink & { flushSync(): void }) | undefined;
function stdoutLines(): LineSink {
  if (!stdout) {
    const sink = stdout = bufferedLines(Deno.stdout);
    globalThis.addEventListener("unload", () => sink.flushSync());
  }
  return stdout;
}
