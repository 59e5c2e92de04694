import { OpenAPIHono } from "@hono/zod-openapi";
import { mountAudit } from "./audit/audit.index.ts";
import { type AuditFeed, createAuditFeed } from "./audit/feed.ts";
import { mountAuth } from "./auth/auth.index.ts";
import { createPasswordHasher, type PasswordHasher } from "./auth/passwords.ts";
import { createDevices } from "./auth/devices.ts";
import { createFactors } from "./auth/mfa/factors.ts";
import { createPasskeys } from "./auth/mfa/passkeys.ts";
import { createSessions } from "./auth/session.ts";
import { type Config, servedOn, statementTimeoutMs } from "./config.ts";
import type { Store } from "./db/store.ts";
import { mountHealth } from "./health.ts";
import { mountHome } from "./home.ts";
import { mountConsole } from "./http/console.ts";
import { CONSOLE_PATH } from "./http/console-path.ts";
import { answerFile, staticFiles } from "./http/static-files.ts";
import { REQUEST_ID_HEADER } from "./http/openapi.ts";
import { DOCS_PATH, mountDocs } from "./http/docs.ts";
import { deadline } from "./http/endpoint.ts";
import type { AppEnv } from "./http/env.ts";
import { onError, onNotFound } from "./http/errors.ts";
import { requestScope } from "./http/request.ts";
import { FixedPathRouter } from "./http/router.ts";
import { createLogger, type Logger } from "./log.ts";
import type { Metrics } from "./metrics.ts";
import { mountKeys } from "./api-keys/api-keys.index.ts";
import { mountRoles } from "./roles/roles.index.ts";
import { mountGroups } from "./groups/groups.index.ts";
import { answersInScimForm, exceptBulk, mountScim } from "./scim/scim.index.ts";
import { mountMfa } from "./mfa/mfa.index.ts";
import { mountOverview } from "./overview/overview.index.ts";
import { createOidc } from "./sso/oidc.ts";
import { mountSso, withSignInDeadline } from "./sso/sso.index.ts";
import { mountUsers } from "./users/users.index.ts";
import { exceptImportUploads, mountImports } from "./imports/imports.index.ts";
import { mountWebhooks } from "./webhooks/webhooks.index.ts";

export interface AppDeps {
  store: Store;
  /** PUBLIC_URL unset: `servedOn` its PORT (server.ts gives the port it listens on). */
  config: Config;
  log?: Logger;
  /** Defaults to bcrypt at config.BCRYPT_COST. */
  passwords?: PasswordHasher;
  /** Counts and times every request when given (METRICS_PORT). */
  metrics?: Metrics;
  /** The change feed's reader (server.ts closes it at shutdown); one of the app's own by default. */
  feed?: AuditFeed;
  /** Tells the import worker (server.ts) a job is queued. */
  importQueued?: () => void;
}

export const OPENAPI_PATH = "/openapi.json";

type OpenAPIObjectConfig = Parameters<OpenAPIHono["getOpenAPI31Document"]>[0];

export const OPENAPI_INFO: OpenAPIObjectConfig = {
  openapi: "3.1.0",
  info: {
    title: "User administration API",
    version: "1.0.0",
    description:
      "List, create, update and delete user accounts. Only an authenticated `admin` may call `/api/users`; " +
      "log in with `POST /api/auth/login`, which sets the `sid` session cookie, or send an API key (`POST /api/users/{id}/keys`) as `Authorization: Bearer uak_...`. " +
      "Every error answers `{error}` with the message listed for its status. " +
      "Bodies are read as JSON whatever the Content-Type says, up to 64 KiB (413 `Request body too large`). " +
      "Unknown paths answer 404 `Not found`; a known path with another method answers 405 `Method not allowed` with `Allow`. " +
      "A POST, PATCH or DELETE whose Origin names a foreign origin answers 403 `Forbidden`.",
    license: { name: "MIT", url: "https://spdx.org/licenses/MIT.html" },
    contact: { name: "The user administration service authors" },
  },
  // Absolute, so that a generated client has a base URL; Swagger UI at
  // /docs replaces it with the address that serves the page.
  servers: [{
    url: "http://127.0.0.1:8000",
    description:
      "`deno task start` with its defaults; a client of another instance passes that instance's base URL",
  }],
  tags: [
    { name: "auth", description: "Log in and out; who am I" },
    {
      name: "mfa",
      description:
        "Second factors: TOTP, passkeys, recovery codes; the login's second step and step-up",
    },
    { name: "users", description: "User accounts (admins only)" },
    {
      name: "keys",
      description:
        "API keys of users, for other services (admins only): `Authorization: Bearer uak_...`",
    },
    {
      name: "roles",
      description:
        "Delegated administration: roles (named sets of permissions) and their assignments to users and groups",
    },
    {
      name: "groups",
      description:
        "Delegated administration: groups of users (the same groups SCIM pushes), which roles may be given to",
    },
    { name: "audit", description: "The audit trail (admins only)" },
    {
      name: "webhooks",
      description: "Signed deliveries of the audit trail (admins only)",
    },
    {
      name: "SCIM",
      description:
        "Provisioning from identity providers (SCIM 2.0, RFC 7643/7644): `/scim/v2` with a connection's token (`Authorization: Bearer usc_...`), errors in SCIM's error schema; the connections under `/api/scim/connections` (admins only)",
    },
    {
      name: "sso",
      description:
        "Signing in with an identity provider (OpenID Connect): the sign-in page's providers, the sign-in's redirects, and the providers (admins only)",
    },
    {
      name: "overview",
      description:
        "What the console's landing page shows: counts of users, sign-ins per day, webhook health",
    },
    { name: "service", description: "Health" },
  ],
};

/** The whole service as a Hono app; it touches the database only when serving. */
export function createApp(deps: AppDeps) {
  const { store } = deps;
  const config = servedOn(deps.config, deps.config.PORT);
  const log = deps.log ?? createLogger(config.LOG_LEVEL);
  const passwords = deps.passwords ?? createPasswordHasher(config.BCRYPT_COST);
  const sessions = createSessions(store, config);

  const app = new OpenAPIHono<AppEnv>({
    strict: true,
    router: new FixedPathRouter(),
  });

  if (deps.metrics) app.use(deps.metrics.middleware);
  const scope = requestScope({
    log,
    sessions,
    trustProxy: config.TRUST_PROXY,
    deadline: withSignInDeadline(
      exceptBulk(exceptImportUploads(
        deadline(config.REQUEST_TIMEOUT_MS, statementTimeoutMs(config)),
      )),
      // Discovery, then the code's exchange and the issuer's keys.
      deadline(
        config.REQUEST_TIMEOUT_MS + 3 * config.SSO_TIMEOUT_MS,
        statementTimeoutMs(config),
      ),
    ),
  });

  app.openAPIRegistry.registerComponent(
    "headers",
    "RequestId",
    REQUEST_ID_HEADER,
  );
  app.openAPIRegistry.registerComponent("securitySchemes", "cookieAuth", {
    type: "apiKey",
    in: "cookie",
    name: "sid",
    description:
      "Session cookie set by `POST /api/auth/login` (HttpOnly, SameSite=Strict). " +
      "In a browser (Swagger UI included) log in with that call: the browser then sends the cookie by itself, no Authorize step is needed.",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    bearerFormat: "uak_ API key",
    description:
      "An API key (`uak_` and 43 base64url characters) from `POST /api/users/{id}/keys`, sent as `Authorization: Bearer uak_...`. " +
      "It acts as its owner with the owner's current role. When the header is present it decides alone (the cookie is not looked at): " +
      "an unknown, revoked, expired or malformed key answers 401. In Swagger UI: Authorize, paste the key.",
  });
  const devices = createDevices(store, config);
  // What every route enters and its steps may look up.
  const steps = { scope, store, config };
  const passkeys = createPasskeys(config);
  const factors = createFactors(store, passkeys, config);
  mountAuth(
    app,
    { store, passwords, sessions, devices, factors, config },
    steps,
  );
  // Before /api/users/{id}, which would take `export` for an id.
  mountImports(app, { store, config, queued: deps.importQueued }, steps);
  mountMfa(
    app,
    { store, sessions, devices, factors, passkeys, config },
    steps,
  );
  mountUsers(app, { store, passwords, config }, steps);
  mountKeys(app, { store, config }, steps);
  mountRoles(app, { store, config }, steps);
  mountGroups(app, { store, config }, steps);
  const feed = deps.feed ?? createAuditFeed({
    source: store.audit,
    listen: config.DATABASE_URL !== undefined,
    log,
    gauge: deps.metrics?.auditStreams,
  });
  mountAudit(app, {
    store,
    feed,
    heartbeatMs: config.AUDIT_STREAM_HEARTBEAT_MS,
  }, steps);
  mountWebhooks(app, { store, config }, steps);
  mountOverview(app, { store }, steps);
  mountScim(app, { store, passwords, config }, steps);
  mountSso(
    app,
    { store, sessions, oidc: createOidc(config.SSO_TIMEOUT_MS), config },
    steps,
  );
  mountHealth(app, store, statementTimeoutMs(config), steps);
  mountHome(
    app,
    { console: CONSOLE_PATH, docs: DOCS_PATH, openapi: OPENAPI_PATH },
    steps,
  );
  const documentFile = staticFiles();
  app.get(
    OPENAPI_PATH,
    // Made once, on first use: the routes are all declared by then.
    scope.handler(async (c) =>
      answerFile(
        c,
        await documentFile(
          OPENAPI_PATH,
          () => new TextEncoder().encode(JSON.stringify(openApiDocument(app))),
        ),
        { "content-type": "application/json" },
      )
    ),
  );
  mountDocs(app, OPENAPI_PATH, scope);
  mountConsole(app, scope);

  // Only for what escapes the request scope (metrics' own middleware).
  app.onError(onError);
  const notFound = onNotFound(() => app.routes);
  app.notFound(scope.handler((c) => {
    answersInScimForm(c);
    return notFound(c);
  }));
  scope.assertCovers(app.routes);
  return app;
}

export type App = ReturnType<typeof createApp>;

/** The OpenAPI document the routes generate (what /openapi.json serves). */
export const openApiDocument = (app: App) =>
  app.getOpenAPI31Document(OPENAPI_INFO);
