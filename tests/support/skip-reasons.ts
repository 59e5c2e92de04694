// Imports nothing: tools/test.ts reads it without loading the service.

/** Why a test is skipped on the embedded database, as its name says. */
export const POSTGRES_ONLY = "PostgreSQL only: DATABASE_URL is unset";
/** Why a test is skipped on PostgreSQL, as its name says. */
export const EMBEDDED_ONLY = "embedded only: DATABASE_URL is set";

/**
 * How to run what a reason skipped: the summary of `deno task test`
 * (tools/test.ts) says it beside the count.
 */
export const HOW_TO_RUN: Record<string, string> = {
  [POSTGRES_ONLY]:
    "run them with DATABASE_URL=postgres://USER@HOST:5432/DATABASE deno task test",
  [EMBEDDED_ONLY]: "run them with DATABASE_URL unset",
};
