import { z } from "@hono/zod-openapi";

/**
 * Whether an instant falls in the years 0001..9999 in UTC: what ISO 8601
 * writes with four digits and PostgreSQL reads as written (`+010000-...`,
 * or `9999-12-31T23:30:00-01:00` once in UTC, it refuses).
 */
export const storableInstant = (time: Date) => {
  const year = time.getUTCFullYear();
  return year >= 1 && year <= 9999;
};

/**
 * An RFC 3339 date-time with `Z` or an offset, within the years 0001..9999
 * once in UTC: every time a body takes. Each broken rule answers `message`,
 * the endpoint's bad-body message.
 */
export const isoDateTime = (message: string) =>
  z.iso.datetime({ offset: true, error: message })
    .refine((s) => storableInstant(new Date(s)), { error: message });
