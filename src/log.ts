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
 * tokens, passwords and hashes are simply never handed to the logger.
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
        ...fields,
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
