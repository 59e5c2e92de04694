/**
 * TOTP (RFC 6238) as the service uses it: SHA-1, 6 digits, 30-second
 * steps, a code accepted for its own step and one either side, each step
 * once per user (the store keeps the last step used).
 */
import { Secret, TOTP } from "otpauth";
import { renderSVG } from "uqr";

const PERIOD = 30;
const DIGITS = 6;
/** Steps either side of now whose code is accepted (clock drift, typing time). */
const WINDOW = 1;

const totp = (secret: string, issuer = "", label = "") =>
  new TOTP({
    issuer,
    label,
    algorithm: "SHA1",
    digits: DIGITS,
    period: PERIOD,
    secret: Secret.fromBase32(secret),
  });

/** A new secret of 160 bits (RFC 4226's recommendation), as base32. */
export const newTotpSecret = () => new Secret({ size: 20 }).base32;

/** The enrolment's `otpauth://` URL and its QR code as SVG, for an authenticator app. */
export function totpEnrolment(secret: string, issuer: string, label: string) {
  const url = totp(secret, issuer, label).toString();
  return { otpauthUrl: url, qrCodeSvg: renderSVG(url) };
}

const SIX_DIGITS = /^\d{6}$/;

/** Whether a submitted code has a TOTP code's form (six digits), spaces aside. */
export const isTotpCode = (code: string) => SIX_DIGITS.test(normalise(code));

const normalise = (code: string) => code.replace(/\s/g, "");

/**
 * The time step the code belongs to (now's, or one either side), or null
 * when it is no code of this secret then.
 */
export function totpStep(
  secret: string,
  code: string,
  now = Date.now(),
): number | null {
  const token = normalise(code);
  if (!SIX_DIGITS.test(token)) return null;
  const delta = totp(secret).validate({
    token,
    timestamp: now,
    window: WINDOW,
  });
  return delta === null ? null : Math.floor(now / 1000 / PERIOD) + delta;
}
