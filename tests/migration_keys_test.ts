/**
 * Migrations 002 and 004 compute canonical keys with a frozen copy
 * (src/db/migrations/frozen/), so a later change to the service's key cannot
 * change what they write. These are the keys 002 computed when it was
 * released, written out.
 */
import { lowerCaseKey } from "../src/db/migrations/frozen/lower_case_key.ts";
import { assertEquals } from "./support/assert.ts";

Deno.test("the frozen key of migrations 002 and 004 gives the keys 002 gave", () => {
  const pairs: [string, string][] = [
    ["Alice", "alice"],
    // Fullwidth and mathematical letters fold to plain ones (NFKC).
    ["\uff21\uff2c\uff29\uff23\uff25", "alice"],
    ["\u{1d401}\u{1d428}\u{1d41b}", "bob"],
    ["\ufb01le@Example.COM", "file@example.com"],
    // İ lowers to i + U+0307 in JavaScript; the dot is dropped after i, j.
    ["\u0130STANBUL", "istanbul"],
    ["J\u0307ohn", "john"],
    ["x\u0130j\u0307", "xij"],
    // Neither case folding (ß stays) nor accent stripping.
    ["Stra\u00dfe", "stra\u00dfe"],
    [
      "\u03a3\u038a\u03a3\u03a5\u03a6\u039f\u03a3",
      "\u03c3\u03af\u03c3\u03c5\u03c6\u03bf\u03c2",
    ],
    ["\u01c4emal", "d\u017eemal"],
  ];
  for (const [input, key] of pairs) {
    assertEquals(lowerCaseKey(input), key, JSON.stringify(input));
  }
});
