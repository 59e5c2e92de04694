/**
 * The keys migration 011 computes, frozen here: what a migration computes
 * must not change when the service's keys do (src/users/canonical.ts), so
 * the libraries are named with their exact versions rather than through
 * the import map, whose versions may move on.
 *
 * - `foldKey`: NFKC_Casefold (NFKC, full case folding from Unicode's
 *   CaseFolding.txt, default ignorables removed, until stable), U+0307
 *   after `i` or `j` dropped.
 * - `lookalikeKey`: the UTS #39 skeleton (NFD, confusables.txt prototypes,
 *   NFD) taken regardless of case: skeleton, foldKey, skeleton.
 */
// Exact versions on purpose (see above).
// deno-lint-ignore no-import-prefix
import unhomoglyph from "npm:unhomoglyph@1.0.6";
// deno-lint-ignore no-import-prefix
import { caseFold } from "npm:unicode-case-folding@1.1.1";

const DOT_ABOVE = /([ij])\u0307/g;
const DEFAULT_IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu;

export function foldKey(value: string): string {
  let key = value.normalize("NFKC");
  for (let round = 0; round < 4; round++) {
    const next = caseFold(key).replace(DEFAULT_IGNORABLE, "")
      .replace(DOT_ABOVE, "$1").normalize("NFKC");
    if (next === key) break;
    key = next;
  }
  return key;
}

const skeleton = (value: string) =>
  unhomoglyph(value.normalize("NFD")).normalize("NFD");

export const lookalikeKey = (value: string) =>
  skeleton(foldKey(skeleton(value)));
