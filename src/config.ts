import { z } from "zod";

const flag = z.enum(["true", "false"]).transform((v) => v === "true");
const int = (min: number, max: number) =>
  z.coerce.number().int().min(min).max(max);
const optionalText = z.string().trim().min(1).optional().catch(undefined);

const ConfigSchema = z.object({
  HOST: z.string().min(1).default("0.0.0.0"),
  PORT: int(0, 65535).default(8000),
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }).optional(),
  DATA_DIR: z.string().min(1).default("./data"),
  DATABASE_POOL_MAX: int(1, 1000).default(10),
  /** Off for PgBouncer in transaction pooling mode, which cannot keep prepared statements. */
  DATABASE_PREPARE: flag.default(true),
  SESSION_TTL_SECONDS: int(60, 31_536_000).default(43_200),
  LOGIN_MAX_FAILURES: int(1, 1_000_000).default(10),
  LOGIN_WINDOW_SECONDS: int(1, 86_400 * 30).default(900),
  BCRYPT_COST: int(10, 16).default(10),
  /** Days the audit trail keeps records; 0 keeps them all. */
  AUDIT_RETENTION_DAYS: int(0, 36_500).default(365),
  /**
   * How often the housekeeping sweep runs (expired sessions, login windows,
   * Idempotency-Key answers, disables whose end passed, audit retention,
   * delivery attempts): ten minutes; the tests run it every few hundred ms.
   */
  HOUSEKEEPING_INTERVAL_MS: int(10, 86_400_000).default(600_000),
  /** The change feed's comment line interval (GET /api/audit/stream). */
  AUDIT_STREAM_HEARTBEAT_MS: int(10, 3_600_000).default(15_000),
  COOKIE_SECURE: flag.default(false),
  TRUST_PROXY: flag.default(false),
  ALLOWED_ORIGINS: z.string().default("").transform((list, ctx) => {
    const origins = list.split(",").map((s) => s.trim()).filter(Boolean);
    for (const origin of origins) {
      if (!URL.canParse(origin) || new URL(origin).origin !== origin) {
        ctx.addIssue({ code: "custom", message: `not an origin: ${origin}` });
      }
    }
    return origins;
  }),
  REQUEST_TIMEOUT_MS: int(100, 600_000).default(4_500),
  /** Prometheus metrics on a port of their own; unset: no metrics endpoint at all. */
  METRICS_PORT: int(0, 65535).optional(),
  /** Loopback by default: metrics name routes and load, not for the world. */
  METRICS_HOST: z.string().min(1).default("127.0.0.1"),
  LOG_LEVEL: z.enum(["debug", "info", "warn", "error", "silent"]).default(
    "info",
  ),
  /** Webhooks may target loopback, private, link-local and metadata addresses. */
  WEBHOOK_ALLOW_PRIVATE: flag.default(false),
  /** Delays between delivery attempts (ms, comma-separated); the last repeats. */
  WEBHOOK_RETRY_SCHEDULE: z.string().default(
    "5000,60000,300000,1800000,7200000,21600000",
  ).transform((list, ctx) => {
    const delays = list.split(",").map((s) => Number(s.trim()));
    if (
      !delays.every((d) => Number.isInteger(d) && d >= 0 && d <= 86_400_000)
    ) {
      ctx.addIssue({ code: "custom", message: "not a list of milliseconds" });
    }
    return delays;
  }),
  /** How long an endpoint keeps failing before it is disabled (3 days). */
  WEBHOOK_RETRY_BUDGET_MS: int(0, 31_536_000_000).default(259_200_000),
  /** A delivery's time to connect, send and receive the status (10 s). */
  WEBHOOK_TIMEOUT_MS: int(100, 60_000).default(10_000),
  /** How often an idle delivery worker looks for due work. */
  WEBHOOK_POLL_MS: int(10, 60_000).default(500),
  /** Endpoints one instance delivers to at once: its outbound connections. */
  WEBHOOK_ENDPOINTS_AT_ONCE: int(1, 1000).default(100),
  /** Days delivery attempts are kept for `GET /api/webhooks/{id}/deliveries`. */
  WEBHOOK_ATTEMPT_RETENTION_DAYS: int(1, 36_500).default(30),
  /** How long an import worker's lease on a job lasts without a batch: a dead worker's job resumes after it. */
  IMPORT_LEASE_SECONDS: int(1, 3600).default(60),
  /** How often an idle import worker looks for queued jobs. */
  IMPORT_POLL_MS: int(10, 60_000).default(1_000),
  /** Admins without a second factor may only enrol one (and see `me`, log out). */
  /** How long a sign-in waits for an identity provider's answer (docs/sso.md). */
  SSO_TIMEOUT_MS: int(100, 60_000).default(10_000),
  MFA_REQUIRED_FOR_ADMINS: flag.default(false),
  /** How recent a session's second factor must be for the actions that step up. */
  MFA_STEP_UP_SECONDS: int(1, 86_400).default(900),
  /**
   * Where users reach the service: the WebAuthn relying party (its host
   * name is the RP id, its origin the one a passkey's assertion must name)
   * and the TOTP issuer. Unset: where this machine reaches it
   * (`servedOn`).
   */
  PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional()
    .transform((url, ctx) => {
      if (url === undefined) return undefined;
      const parsed = new URL(url);
      if (parsed.pathname !== "/" || parsed.search || parsed.hash) {
        ctx.addIssue({ code: "custom", message: "an origin, without a path" });
      }
      return parsed.origin;
    }),
  ADMIN_USERNAME: optionalText,
  ADMIN_PASSWORD: z.string().min(1).optional(),
  ADMIN_EMAIL: optionalText,
  ADMIN_NAME: optionalText,
});

export type Config = z.infer<typeof ConfigSchema>;

/** The configuration of a service that listens: its PUBLIC_URL known. */
export type ServedConfig = Config & { PUBLIC_URL: string };

/**
 * The configuration of a service listening on `port`: PUBLIC_URL, when
 * unset, is the address this machine reaches it at, with `localhost` for
 * every interface or a loopback address, since a passkey needs a host
 * name (WebAuthn refuses an IP address as its relying party) and browsers
 * count http://localhost, unlike http://127.0.0.1, as their own.
 */
export const servedOn = (config: Config, port: number): ServedConfig => ({
  ...config,
  PUBLIC_URL: config.PUBLIC_URL ?? localOrigin(config.HOST, port),
});

/** `http://` and the address this machine reaches `host`:`port` at. */
export function localOrigin(host: string, port: number): string {
  const name = LOCAL_HOSTS.has(host) ? "localhost" : host;
  return `http://${name.includes(":") ? `[${name}]` : name}:${port}`;
}

/** Every interface, or this machine's own: reached as `localhost`. */
const LOCAL_HOSTS = new Set(["0.0.0.0", "::", "127.0.0.1", "::1"]);

/**
 * The longest one SQL statement may run (PostgreSQL's statement_timeout): a
 * third of a request's time. A statement stuck behind a lock is then cancelled
 * by the database well before the request's deadline answers 500, instead of
 * being applied after the client was told it failed.
 */
export const statementTimeoutMs = (
  config: Pick<Config, "REQUEST_TIMEOUT_MS">,
) => Math.ceil(config.REQUEST_TIMEOUT_MS / 3);
export type LogLevel = Config["LOG_LEVEL"];

/**
 * The service cannot start for a reason an operator can fix: the message is
 * one line naming the variable or resource and what to do, printed as it is.
 */
export class StartupError extends Error {}

/** A configuration value is malformed (one line per value in the message). */
export class ConfigError extends StartupError {}

/** Reads the configuration once from an environment (Deno.env by default). */
export function loadConfig(
  env: Record<string, string | undefined> = Deno.env.toObject(),
): Config {
  // An empty variable means unset, as in most shells' `VAR= cmd`.
  const present = Object.fromEntries(
    Object.entries(env).filter(([, v]) => v !== undefined && v !== ""),
  );
  const parsed = ConfigSchema.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) =>
      `  ${i.path.join(".")}: ${i.message}`
    );
    throw new ConfigError(`Invalid configuration:\n${lines.join("\n")}`);
  }
  return parsed.data;
}
