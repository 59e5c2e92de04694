import type { LogLevel } from "./config.ts";

const RANK: Record<LogLevel, number> = {
  debug: 10,
  info: 20,
  warn: 30,
  error: 40,
  silent: 99,
};

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** Whether lines of this level are written: skip building them if not. */
  enabled(level: Exclude<LogLevel, "silent">): boolean;
}

/**
 * Structured JSON lines on stdout. Callers pass values, never secrets:
 * tokens, passwords and hashes are simply never handed to the logger. A
 * field's text is cut to LOGGED_TEXT_MAX characters, with its length beside.
 */
export function createLogger(
  level: LogLevel = "info",
  write: (line: string) => void = (line) => console.log(line),
): Logger {
  const enabled = (lvl: Exclude<LogLevel, "silent">) =>
    RANK[lvl] >= RANK[level];
  const at =
    (lvl: Exclude<LogLevel, "silent">) =>
    (msg: string, fields: LogFields = {}) => {
      if (!enabled(lvl)) return;
      write(JSON.stringify({
        time: new Date().toISOString(),
        level: lvl,
        msg,
        ...bounded(fields),
      }, errorReplacer));
    };
  return {
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    enabled,
  };
}

/**
 * The most characters a logged text value keeps: a path or header is the
 * client's to choose, and must not make a line as long as it likes.
 */
const LOGGED_TEXT_MAX = 256;

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
