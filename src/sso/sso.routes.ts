import { z } from "@hono/zod-openapi";
import { adminRoute, stepUp } from "../auth/guards.ts";
import { idParam } from "../http/id-param.ts";
import { MSG } from "../http/messages.ts";
import {
  bodyTooLarge,
  check,
  failure,
  json,
  route,
  textHeader,
} from "../http/openapi.ts";
import { body, load, outcome, pathParam, query } from "../http/steps.ts";
import { codePoints } from "../users/account-rules.ts";
import { OkSchema } from "../users/users.schemas.ts";
import { parseUserId } from "../users/user.ts";
import { isIssuer, isReturnPath } from "./urls.ts";

const invalid = { error: MSG.invalidProvider };

const text = (max: number) =>
  z.string(invalid).refine(
    (s) =>
      codePoints(s) >= 1 && codePoints(s) <= max &&
      !/[\p{Cc}\p{Zl}\p{Zp}]/u.test(s),
    invalid,
  );

/** RFC 6749's scope-token: printable ASCII but space, `"` and `\`. */
const scope = z.string(invalid).regex(
  /^[\x21\x23-\x5B\x5D-\x7E]{1,64}$/,
  invalid,
);

/** A DNS name as an e-mail's domain holds it, in lower case. */
const domain = z.string(invalid).trim().toLowerCase().regex(
  /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/,
  invalid,
);

const fields = {
  name: text(100).openapi({
    description:
      "1..100 characters without control characters: the button on the sign-in page says `Sign in with <name>`, and records name it",
    example: "Okta",
  }),
  issuer: z.string(invalid).refine(isIssuer, invalid).openapi({
    description:
      "The provider's issuer URL, as its discovery document (`/.well-known/openid-configuration`) names it: `https`, or `http` on a loopback address for development; no query or fragment",
    example: "https://example.okta.com",
  }),
  clientId: text(256).openapi({
    description: "The client id the provider gave this service",
    example: "0oa1b2c3d4e5f6g7h8i9",
  }),
  clientSecret: text(1024).openapi({
    description:
      "The client secret the provider gave this service. Write-only: kept encrypted, never in an answer",
    example: "s3cr3t-from-the-provider",
  }),
  scopes: z.array(scope, invalid).min(1, invalid).max(20, invalid)
    .refine((s) => s.includes("openid"), invalid).openapi({
      description:
        'The scopes asked for, `openid` among them (at most 20). Default `["openid", "email", "profile"]`',
      example: ["openid", "email", "profile"],
    }),
  usernameClaim: z.enum(["preferred_username", "email"], invalid).openapi({
    description:
      "The ID token's claim that names a user made for a subject (`createUsers`). Default `preferred_username`",
    example: "preferred_username",
  }),
  allowedDomains: z.array(domain, invalid).max(100, invalid).openapi({
    description:
      "E-mail domains whose people may sign in (compared in lower case; a sign-in without an e-mail of one of them is refused). Default `[]`: any",
    example: ["example.com"],
  }),
  link: z.enum(["externalId", "email", "none"], invalid).openapi({
    description:
      "How a first sign-in finds an existing account: `externalId`: only the SCIM connection's user whose `externalId` is the subject; `email`: that, else the user whose e-mail equals a verified `email` claim; `none`: neither (only accounts it made). Default `email`",
    example: "email",
  }),
  createUsers: z.boolean(invalid).openapi({
    description:
      "Whether a subject that finds no account gets a new viewer (its username from `usernameClaim`, its e-mail and name from the token; no password), when its username and e-mail are free. Default `false`",
    example: false,
  }),
  passwordLogin: z.boolean(invalid).openapi({
    description:
      "Whether the users this provider links or made may still sign in with a password. `false`: `POST /api/auth/login` answers them 401 `Use your identity provider to sign in`. Default `true`",
    example: true,
  }),
  mfaAcr: text(256).nullable().openapi({
    description:
      "An `acr` value that counts as a second factor (besides an `amr` holding `mfa` or `hwk`), or null",
    example: "http://schemas.openid.net/pape/policies/2007/06/multi-factor",
  }),
  scimConnectionId: z.number(invalid).int(invalid).min(1, invalid).nullable()
    .openapi({
      description:
        "The provisioning connection of the same provider: its user whose `externalId` is the ID token's subject is the account a sign-in lands on. Null: none",
      example: 3,
    }),
};

export const ProviderSchema = z.object({
  id: z.number().int().openapi({ example: 2 }),
  name: z.string().openapi({ example: "Okta" }),
  issuer: z.string().openapi({ example: "https://example.okta.com" }),
  clientId: z.string().openapi({ example: "0oa1b2c3d4e5f6g7h8i9" }),
  scopes: z.array(z.string()).openapi({
    example: ["openid", "email", "profile"],
  }),
  usernameClaim: z.enum(["preferred_username", "email"]),
  allowedDomains: z.array(z.string()).openapi({ example: [] }),
  link: z.enum(["externalId", "email", "none"]),
  createUsers: z.boolean(),
  passwordLogin: z.boolean(),
  mfaAcr: z.string().nullable(),
  scimConnectionId: z.number().int().nullable(),
  redirectUri: z.string().openapi({
    description:
      "The redirect URI to register at the provider: `PUBLIC_URL` + `/api/sso/{id}/callback`",
    example: "https://users.example.com/api/sso/2/callback",
  }),
  createdAt: z.string().openapi({
    format: "date-time",
    example: "2026-12-02T10:00:00.000Z",
  }),
}).openapi("IdentityProvider");

export const CreateProviderSchema = z.object({
  name: fields.name,
  issuer: fields.issuer,
  clientId: fields.clientId,
  clientSecret: fields.clientSecret,
  scopes: fields.scopes.nullish(),
  usernameClaim: fields.usernameClaim.nullish(),
  allowedDomains: fields.allowedDomains.nullish(),
  link: fields.link.nullish(),
  createUsers: fields.createUsers.nullish(),
  passwordLogin: fields.passwordLogin.nullish(),
  mfaAcr: fields.mfaAcr.optional(),
  scimConnectionId: fields.scimConnectionId.optional(),
}, invalid).openapi("CreateIdentityProvider");

export const UpdateProviderSchema = z.object({
  name: fields.name.optional(),
  issuer: fields.issuer.optional(),
  clientId: fields.clientId.optional(),
  clientSecret: fields.clientSecret.optional(),
  scopes: fields.scopes.optional(),
  usernameClaim: fields.usernameClaim.optional(),
  allowedDomains: fields.allowedDomains.optional(),
  link: fields.link.optional(),
  createUsers: fields.createUsers.optional(),
  passwordLogin: fields.passwordLogin.optional(),
  mfaAcr: fields.mfaAcr.optional(),
  scimConnectionId: fields.scimConnectionId.optional(),
}, invalid).openapi("UpdateIdentityProvider");

export const PublicProviderSchema = z.object({
  id: z.number().int().openapi({ example: 2 }),
  name: z.string().openapi({ example: "Okta" }),
}).openapi("IdentityProviderButton");

const IdParam = z.object({ id: idParam("id", 2) });

const tags = ["sso"];

const notFound = check(
  404,
  MSG.providerNotFound,
  "no identity provider has this id",
);
const badBody = check(
  400,
  MSG.invalidProvider,
  "the body breaks a rule (see the schema: `name` 1..100 characters, `issuer` https or http on loopback, `clientId` and `clientSecret` present, `scopes` with `openid`, `allowedDomains` domain names, `link` and `usernameClaim` one of theirs, `scimConnectionId` a live connection), a body that is not JSON included",
);

export const listPublic = route({
  operationId: "listSignInProviders",
  method: "get",
  path: "/api/sso/providers/public",
  tags,
  summary: "The identity providers one may sign in with (no authentication)",
  description:
    "The id and name of each identity provider, oldest first, for the sign-in page's `Sign in with <name>` buttons, which go to `GET /api/sso/{id}/start`. Nothing of their configuration.",
  security: [],
  responses: {
    200: json(z.array(PublicProviderSchema), "The providers"),
  },
  steps: [failure(MSG.providerListFailed)],
});

export const create = adminRoute({
  permission: "sso:manage",
  operationId: "createIdentityProvider",
  method: "post",
  path: "/api/sso/providers",
  tags,
  summary: "Add an identity provider (OpenID Connect)",
  description:
    "A provider people sign in with (docs/sso.md). Its client secret is kept encrypted and never answered. Recorded as `sso.provider_created`.",
  responses: { 201: json(ProviderSchema, "Created") },
  steps: [
    body(CreateProviderSchema, [bodyTooLarge, badBody]),
    stepUp(),
    outcome("invalidValue", badBody),
    failure(MSG.providerCreateFailed),
  ],
});

export const list = adminRoute({
  permission: "sso:manage",
  operationId: "listIdentityProviders",
  method: "get",
  path: "/api/sso/providers",
  tags,
  summary: "List identity providers",
  description: "Every provider, oldest first. Never a client secret.",
  responses: { 200: json(z.array(ProviderSchema), "The providers") },
  steps: [failure(MSG.providerListFailed)],
});

export const get = adminRoute({
  permission: "sso:manage",
  operationId: "getIdentityProvider",
  method: "get",
  path: "/api/sso/providers/{id}",
  tags,
  summary: "Get an identity provider",
  description: "One provider. Never its client secret.",
  request: { params: IdParam },
  responses: { 200: json(ProviderSchema, "The provider") },
  steps: [
    pathParam("id", parseUserId, notFound),
    outcome("not_found", notFound),
    failure(MSG.providerGetFailed),
  ],
});

export const update = adminRoute({
  permission: "sso:manage",
  operationId: "updateIdentityProvider",
  method: "patch",
  path: "/api/sso/providers/{id}",
  tags,
  summary: "Change an identity provider",
  description:
    "The fields given change; the others stay (a `clientSecret` given replaces the kept one). Recorded as `sso.provider_updated`.",
  request: { params: IdParam },
  responses: { 200: json(ProviderSchema, "The provider after the change") },
  steps: [
    pathParam("id", parseUserId, notFound),
    body(UpdateProviderSchema, [bodyTooLarge, badBody]),
    stepUp(),
    outcome("not_found", notFound),
    outcome("invalidValue", badBody),
    failure(MSG.providerUpdateFailed),
  ],
});

export const remove = adminRoute({
  permission: "sso:manage",
  operationId: "deleteIdentityProvider",
  method: "delete",
  path: "/api/sso/providers/{id}",
  tags,
  summary: "Delete an identity provider",
  description:
    "Its sign-ins stop at once, those under way included. The accounts it linked or made stay (and may sign in with a password again, once they have one). Recorded as `sso.provider_deleted`.",
  request: { params: IdParam },
  responses: { 200: json(OkSchema, "Deleted") },
  steps: [
    pathParam("id", parseUserId, notFound),
    stepUp(),
    outcome("not_found", notFound),
    failure(MSG.providerDeleteFailed),
  ],
});

/** The provider of a sign-in, its client secret opened. */
const signInProvider = load(
  "provider",
  notFound,
  (store, got) => store.sso.providers.forSignIn(got.id as number),
);

const redirect = (description: string) => ({
  description,
  headers: { Location: textHeader("Where the browser goes next") },
});

export const start = route({
  operationId: "startSignIn",
  method: "get",
  path: "/api/sso/{id}/start",
  tags,
  summary: "Sign in with an identity provider: go to the provider",
  description:
    "For a browser: redirects to the provider's authorization endpoint (authorization code with PKCE S256, a fresh `state` and `nonce`), and the provider back to `GET /api/sso/{id}/callback`. The sign-in must come back within 10 minutes. A provider that cannot be reached within `SSO_TIMEOUT_MS` (10 s) redirects to the console's sign-in page with `?error=Identity provider unavailable`.",
  security: [],
  request: { params: IdParam },
  responses: {
    302: redirect(
      "To the provider, or to the console's sign-in page with `?error=`",
    ),
  },
  steps: [
    pathParam("id", parseUserId, notFound),
    signInProvider,
    query(z.object({
      returnTo: z.string().refine(isReturnPath).optional().openapi({
        description:
          "Where to go once signed in: a path of this service (starting with one `/`); default `/admin`",
        example: "/admin",
      }),
    })),
    failure(MSG.ssoFailed),
  ],
});

export const callback = route({
  operationId: "finishSignIn",
  method: "get",
  path: "/api/sso/{id}/callback",
  tags,
  summary: "Sign in with an identity provider: back from the provider",
  description:
    "Where the provider sends the browser back (the redirect URI to register: `PUBLIC_URL` + this path). Ends in the session cookie `sid` (as `POST /api/auth/login` sets it) and a redirect to the sign-in's `returnTo`; or, without a session, in a redirect to the console's sign-in page (`/admin?error=`) with one of: `Sign-in was cancelled`, `Sign-in expired, please try again`, `Identity provider refused the sign-in`, `No account for this identity`, `Account disabled`, `E-mail domain not allowed`, `Identity provider unavailable`, `Too many login attempts`. Each is recorded (`login.failed {reason, provider}`, `login.refused`); a success as `login.succeeded {methods: [\"oidc\"], provider}`.",
  security: [],
  request: {
    params: IdParam,
    query: z.object({
      code: z.string().optional(),
      state: z.string().optional(),
      iss: z.string().optional(),
      error: z.string().optional(),
      error_description: z.string().optional(),
    }),
  },
  responses: {
    302: redirect(
      "To `returnTo` with the session cookie set, or to the console's sign-in page with `?error=`",
    ),
  },
  steps: [
    pathParam("id", parseUserId, notFound),
    signInProvider,
    failure(MSG.ssoFailed),
  ],
});
