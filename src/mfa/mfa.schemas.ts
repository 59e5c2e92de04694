import { z } from "@hono/zod-openapi";

const isoTime = (description: string) =>
  z.string().openapi({
    format: "date-time",
    description: `${description} (ISO 8601 in UTC with milliseconds)`,
    example: "2026-11-25T21:07:00.123Z",
  });

export const PasskeySchema = z.object({
  id: z.number().int().openapi({ example: 1 }),
  name: z.string().openapi({ example: "Laptop" }),
  createdAt: isoTime("When it was registered"),
  lastUsedAt: isoTime("When it last signed in or stepped up").nullable(),
}).openapi("Passkey");

/** A user's factors: never a secret, a public key or a code. */
export const MfaSummarySchema = z.object({
  totp: z.object({ enrolledAt: isoTime("When the enrolment was confirmed") })
    .nullable().openapi({ description: "Null without a confirmed TOTP" }),
  passkeys: z.array(PasskeySchema).openapi({ description: "Oldest first" }),
  recoveryCodesLeft: z.number().int().openapi({
    description: "Unused recovery codes (0..10)",
    example: 10,
  }),
}).openapi("MfaSummary");
