/**
 * Tests that run only under some condition, each saying in its name why it
 * is ignored where it does not run (Deno.test's `ignore` prints nothing).
 */
import { ON_EMBEDDED } from "./service.ts";
import { EMBEDDED_ONLY, POSTGRES_ONLY } from "./skip-reasons.ts";

/** CI sets CI=true: there a missing tool is a failure, never a skip. */
export const IN_CI = Deno.env.get("CI") === "true";

export interface Condition {
  name: string;
  ignore: boolean;
}

/** For a test that needs the PostgreSQL server (another session, a second instance...). */
export const postgresOnly = (name: string): Condition =>
  ON_EMBEDDED
    ? { name: `${name} (${POSTGRES_ONLY})`, ignore: true }
    : { name, ignore: false };

/** For a test of the embedded database itself. */
export const embeddedOnly = (name: string): Condition =>
  ON_EMBEDDED
    ? { name, ignore: false }
    : { name: `${name} (${EMBEDDED_ONLY})`, ignore: true };

export interface Tool {
  /** What is missing, in words: "Chromium at /usr/bin/chromium". */
  what: string;
  present: boolean;
  /** How CI gets it. */
  install: string;
}

/**
 * For a test that needs an outside tool and runs once per CI run, in its
 * PostgreSQL pass (the database makes no difference to it). A missing tool
 * ignores the test, saying so, except under CI=true, where the test runs
 * and `fn` fails at once naming the tool.
 */
export function withTool(
  name: string,
  tool: Tool,
  fn: () => Promise<void>,
): Deno.TestDefinition {
  const once = postgresOnly(name);
  if (once.ignore || tool.present) return { ...once, fn };
  if (!IN_CI) {
    return {
      name: `${name} (ignored: no ${tool.what}; ${tool.install})`,
      ignore: true,
      fn,
    };
  }
  return {
    name,
    fn() {
      throw new Error(
        `no ${tool.what}, and CI=true: a required tool is missing (${tool.install})`,
      );
    },
  };
}
