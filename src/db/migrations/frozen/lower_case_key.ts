/**
 * The key migrations 002 and 004 compute, frozen here: what a migration
 * computes must not change when the service's keys do (src/users/canonical.ts).
 * NFKC, lower case, U+0307 after `i` or `j` dropped.
 */
export const lowerCaseKey = (value: string) =>
  value.normalize("NFKC").toLowerCase().replace(/([ij])\u0307/g, "$1");
