/**
 * The forms of a username or e-mail that say whether two are one, computed
 * here, never by the database's collation-dependent lower():
 *
 * - `canonicalKey`: under which both are unique, looked up at login and
 *   counted by the throttle. NFKC_Casefold (Unicode NFKC with full case
 *   folding: `STRASSE` and `straße`, `ΣΟΦΟΣ` and `σοφος` are one name).
 * - `lookalikeKey`: their UTS #39 confusable skeleton, also unique, so
 *   all-Cyrillic `ѕсоре` cannot stand beside Latin `scope`.
 * - `lowerCaseKey`: NFKC, then lower case; the key of the `*_key` columns,
 *   which the text search uses and which stay unique for instances that
 *   know no other key while a release rolls out.
 *
 * JavaScript has no full case folding built in (toLowerCase keeps `ß` and
 * final sigma), so it comes from unicode-case-folding (Unicode's
 * CaseFolding.txt, status C and F); the confusables from unhomoglyph
 * (Unicode's confusables.txt).
 */
import unhomoglyph from "unhomoglyph";
import { caseFold } from "unicode-case-folding";

/**
 * U+0307 (combining dot above) after `i` or `j`: JavaScript lowers `İ` to
 * `i` + U+0307 and case folding does the same, PostgreSQL's lower() gives
 * `i`; dropped, so `admİn` is `admin`.
 */
const DOT_ABOVE = /([ij])\u0307/g;

const DEFAULT_IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu;

/**
 * NFKC_Casefold (Unicode's toNFKC_Casefold: NFKC, full case folding,
 * default ignorable code points removed, repeated until nothing changes,
 * which takes one or two rounds), with U+0307 after `i` or `j` dropped.
 */
export function canonicalKey(value: string): string {
  let key = value.normalize("NFKC");
  for (let round = 0; round < 4; round++) {
    const next = caseFold(key).replace(DEFAULT_IGNORABLE, "")
      .replace(DOT_ABOVE, "$1").normalize("NFKC");
    if (next === key) break;
    key = next;
  }
  return key;
}

/** UTS #39 skeleton: NFD, each character mapped to its confusables.txt prototype, NFD again. */
export const skeleton = (value: string) =>
  unhomoglyph(value.normalize("NFD")).normalize("NFD");

/**
 * The skeleton taken regardless of case: skeleton, canonical key, skeleton
 * again. Two values with one skeleton have one look-alike key, and so do
 * `AIice` (capital I) and `alice`, whose skeletons differ only in case.
 */
export const lookalikeKey = (value: string) =>
  skeleton(canonicalKey(skeleton(value)));

/** NFKC, lower case, U+0307 after `i` or `j` dropped. */
export const lowerCaseKey = (value: string) =>
  value.normalize("NFKC").toLowerCase().replace(DOT_ABOVE, "$1");
