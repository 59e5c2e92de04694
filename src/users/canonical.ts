/**
 * The one canonical form of a username or e-mail, under which both are
 * unique, looked up at login and counted by the throttle: Unicode NFKC
 * (fullwidth and mathematical letters fold to plain ones), then lower case,
 * then U+0307 dropped after `i` or `j` (JavaScript lowers `İ` to `i` +
 * U+0307, PostgreSQL's lower() to `i`: without this the two would differ).
 * Computed here, never by the database's collation-dependent lower().
 */
export function canonicalKey(value: string): string {
  return value.normalize("NFKC").toLowerCase().replace(/([ij])\u0307/g, "$1");
}
