/**
 * The bodies the second-factor routes read and answer: codes, WebAuthn
 * JSON, recovery codes. Apart from the routes (mfa.routes.ts) so that they
 * read as the list of endpoints; the factors as a user's detail also shows
 * them are in mfa.schemas.ts.
 */
import { z } from "@hono/zod-openapi";
import { MSG } from "../http/messages.ts";
import { PasskeySchema } from "./mfa.schemas.ts";

export const RecoveryCodesSchema = z.object({
  recoveryCodes: z.array(z.string()).openapi({
    description:
      "Ten single-use codes, shown this once (the service keeps their hashes): each stands in for a TOTP code or a passkey once. Dashes, spaces and case do not matter when one is entered.",
    example: ["7k2mq-x9d4p", "..."],
  }),
}).openapi("RecoveryCodes");

export const TotpEnrolmentSchema = z.object({
  secret: z.string().openapi({
    description: "The shared secret as base32, for typing into an app",
    example: "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP",
  }),
  otpauthUrl: z.string().openapi({
    description:
      "`otpauth://totp/...` (SHA-1, 6 digits, 30 seconds), what the QR code holds",
  }),
  qrCodeSvg: z.string().openapi({
    description: "The QR code of `otpauthUrl` as an SVG document",
  }),
}).openapi("TotpEnrolment");

const CODE_DOC =
  "A 6-digit TOTP code (of the current 30-second step or one either side, each step accepted once), or one of the recovery codes";

export const CodeSchema = z.string({ error: MSG.invalidBody }).max(
  64,
  MSG.invalidBody,
);

/** The WebAuthn JSON a browser's `PublicKeyCredential.toJSON()` gives. */
export const WebAuthnJson = (description: string) =>
  z.record(z.string(), z.unknown(), { error: MSG.invalidBody }).openapi({
    description,
    type: "object",
  });

/** `{code}` or `{passkey}`: one of them. */
export const SecondFactorSchema = z.object({
  code: CodeSchema.optional().openapi({ description: CODE_DOC }),
  passkey: WebAuthnJson(
    "A passkey's assertion (`PublicKeyCredential.toJSON()` of `navigator.credentials.get` with the options this operation's `/options` answered)",
  ).optional(),
}, { error: MSG.invalidBody }).refine(
  (b) => (b.code === undefined) !== (b.passkey === undefined),
  MSG.invalidBody,
).openapi("SecondFactor");

export const OptionsSchema = z.record(z.string(), z.unknown()).openapi(
  "WebAuthnOptions",
  {
    description:
      "WebAuthn options as JSON (`PublicKeyCredentialCreationOptionsJSON` or `...RequestOptionsJSON`): give them to `PublicKeyCredential.parseCreationOptionsFromJSON` / `parseRequestOptionsFromJSON`. Their challenge is single use, bound to the user, and expires in 5 minutes.",
    type: "object",
  },
);

export const NewPasskeySchema = z.object({
  ...PasskeySchema.shape,
  recoveryCodes: RecoveryCodesSchema.shape.recoveryCodes.nullable().openapi({
    description:
      "Ten recovery codes, shown this once, when this passkey is the caller's first factor; null otherwise (the codes the caller has stay)",
  }),
}).openapi("NewPasskey");
