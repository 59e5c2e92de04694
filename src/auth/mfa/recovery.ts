/**
 * Recovery codes: ten per set, each 10 characters of a 32-letter alphabet
 * (50 random bits), shown as `xxxxx-xxxxx`, kept as SHA-256. Their entropy
 * and the wrong-code throttle make a slow hash unnecessary.
 */
import { sha256 } from "../tokens.ts";

export const RECOVERY_CODES = 10;

/** Crockford's base32 alphabet: no I, L, O or U to misread. */
const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";

const FORM = /^[0-9a-hjkmnp-tv-z]{10}$/;

/** A submitted code as it is hashed: lower case, without spaces and dashes; null when it cannot be one. */
function normalise(code: string): string | null {
  const plain = code.toLowerCase().replace(/[\s-]/g, "");
  return FORM.test(plain) ? plain : null;
}

/** A new set: the codes to show once, and the hashes to keep. */
export function newRecoveryCodes() {
  const codes = Array.from({ length: RECOVERY_CODES }, () => {
    const bytes = crypto.getRandomValues(new Uint8Array(10));
    const plain = [...bytes].map((b) => ALPHABET[b & 31]).join("");
    return `${plain.slice(0, 5)}-${plain.slice(5)}`;
  });
  return { codes, hashes: codes.map((c) => sha256(normalise(c)!)) };
}

/** The hash a submitted recovery code is looked up by; null when it has no code's form. */
export function recoveryCodeHash(code: string): Uint8Array | null {
  const plain = normalise(code);
  return plain === null ? null : sha256(plain);
}
