/**
 * The identity providers admins configure (docs/sso.md), each client
 * secret sealed to its row (auth/secret-box.ts) and opened only for a
 * sign-in.
 */
import type { Sql, TransactionSql } from "postgres";
import { auditEvents, type ProviderRef } from "../audit/events.ts";
import { open, seal } from "../auth/secret-box.ts";
import { recordAudit } from "./audit.ts";
import { iso } from "./time.ts";
import type { CallerRefusal, CallerWrite, Writer } from "./write.ts";
import { type Refusal, refuse } from "../refusal.ts";

export type ProviderLink = "externalId" | "email" | "none";

/** A provider as the API shows it: never its client secret. */
export interface SsoProvider {
  id: number;
  name: string;
  issuer: string;
  clientId: string;
  scopes: string[];
  usernameClaim: "preferred_username" | "email";
  allowedDomains: string[];
  link: ProviderLink;
  createUsers: boolean;
  passwordLogin: boolean;
  mfaAcr: string | null;
  scimConnectionId: number | null;
  createdAt: string;
}

/** What a provider is made of, its secret in clear (sealed before it is kept). */
export type ProviderFields = Omit<SsoProvider, "id" | "createdAt"> & {
  clientSecret: string;
};

/** The secret is bound to its row: a sealed value copied to another row does not open. */
const boundTo = (id: number) => `sso_provider:${id}`;

export function createSsoProviders(sql: Sql, { asCaller }: Writer) {
  const shown = sql`p.id, p.name, p.issuer, p.client_id as "clientId",
    p.scopes, p.username_claim as "usernameClaim",
    p.allowed_domains as "allowedDomains", p.link,
    p.create_users as "createUsers", p.password_login as "passwordLogin",
    p.mfa_acr as "mfaAcr", p.scim_connection_id as "scimConnectionId",
    ${iso(sql, "p.created_at")} as "createdAt"`;

  let key: Uint8Array | undefined;
  /** The sealing key: one row, made by migration 030, read once. */
  const secretKey = async () => {
    if (key) return key;
    const [row] = await sql<{ key: Uint8Array }[]>`
      select key from secret_key where singleton`;
    return key = new Uint8Array(row.key);
  };

  /** Whether a live SCIM connection has this id. */
  const connectionLive = async (tx: TransactionSql, id: number | null) => {
    if (id === null) return true;
    const [row] = await tx`
      select 1 from scim_connections where id = ${id} and revoked_at is null
      for share`;
    return row !== undefined;
  };

  return {
    async create(
      p: ProviderFields,
      write: CallerWrite,
    ): Promise<SsoProvider | Refusal<"invalidValue"> | CallerRefusal> {
      const k = await secretKey();
      return await asCaller(write, "share", async (tx, actor) => {
        if (!await connectionLive(tx, p.scimConnectionId)) {
          return refuse("invalidValue", "scimConnectionId");
        }
        const [{ id }] = await tx<{ id: number }[]>`
          insert into sso_providers (name, issuer, client_id, client_secret,
            scopes, username_claim, allowed_domains, link, create_users,
            password_login, mfa_acr, scim_connection_id)
          values (${p.name}, ${p.issuer}, ${p.clientId}, ${new Uint8Array()},
            ${p.scopes}::text[], ${p.usernameClaim},
            ${p.allowedDomains}::text[], ${p.link}, ${p.createUsers},
            ${p.passwordLogin}, ${p.mfaAcr}, ${p.scimConnectionId})
          returning id`;
        const sealed = await seal(k, p.clientSecret, boundTo(id));
        const [row] = await tx<SsoProvider[]>`
          update sso_providers p set client_secret = ${sealed}
          where p.id = ${id} returning ${shown}`;
        await recordAudit(
          tx,
          auditEvents.ssoProvider(
            "sso.provider_created",
            actor,
            row,
            write.context,
          ),
        );
        return row;
      });
    },

    async list(): Promise<SsoProvider[]> {
      return await sql<SsoProvider[]>`
        select ${shown} from sso_providers p order by p.id`;
    },

    /** What the sign-in page shows of each provider: no configuration. */
    async listPublic(): Promise<{ id: number; name: string }[]> {
      return await sql<{ id: number; name: string }[]>`
        select id, name from sso_providers order by id`;
    },

    async get(id: number): Promise<SsoProvider | undefined> {
      const [row] = await sql<SsoProvider[]>`
        select ${shown} from sso_providers p where p.id = ${id}`;
      return row;
    },

    /** The provider with its secret opened, for a sign-in. */
    async forSignIn(
      id: number,
    ): Promise<(SsoProvider & { clientSecret: string }) | undefined> {
      const [row] = await sql<
        (SsoProvider & { sealed: Uint8Array })[]
      >`
        select ${shown}, p.client_secret as sealed
        from sso_providers p where p.id = ${id}`;
      if (!row) return undefined;
      const { sealed, ...provider } = row;
      const clientSecret = await open(
        await secretKey(),
        new Uint8Array(sealed),
        boundTo(id),
      );
      return { ...provider, clientSecret };
    },

    async update(
      id: number,
      change: Partial<ProviderFields>,
      write: CallerWrite,
    ): Promise<
      | SsoProvider
      | Refusal<"not_found" | "invalidValue">
      | CallerRefusal
    > {
      const k = await secretKey();
      const sealed = change.clientSecret === undefined
        ? null
        : await seal(k, change.clientSecret, boundTo(id));
      return await asCaller(write, "share", async (tx, actor) => {
        if (
          change.scimConnectionId !== undefined &&
          !await connectionLive(tx, change.scimConnectionId)
        ) {
          return refuse("invalidValue", "scimConnectionId");
        }
        const set = <T>(v: T | undefined, column: string) =>
          v === undefined ? sql`` : sql`, ${sql(column)} = ${v as string}`;
        // Set first to a column no change names, so each field given is
        // assigned once after it.
        const [row] = await tx<SsoProvider[]>`
          update sso_providers p set created_at = p.created_at
            ${set(change.name, "name")}
            ${set(change.issuer, "issuer")}
            ${set(change.clientId, "client_id")}
            ${
          change.scopes === undefined
            ? sql``
            : sql`, scopes = ${change.scopes}::text[]`
        }
            ${set(change.usernameClaim, "username_claim")}
            ${
          change.allowedDomains === undefined
            ? sql``
            : sql`, allowed_domains = ${change.allowedDomains}::text[]`
        }
            ${set(change.link, "link")}
            ${set(change.createUsers, "create_users")}
            ${set(change.passwordLogin, "password_login")}
            ${set(change.mfaAcr, "mfa_acr")}
            ${set(change.scimConnectionId, "scim_connection_id")}
            ${sealed ? sql`, client_secret = ${sealed}` : sql``}
          where p.id = ${id} returning ${shown}`;
        if (!row) return refuse("not_found");
        await recordAudit(
          tx,
          auditEvents.ssoProvider(
            "sso.provider_updated",
            actor,
            row,
            write.context,
          ),
        );
        return row;
      });
    },

    /** Deletes the provider, its links and its pending sign-ins. */
    async remove(
      id: number,
      write: CallerWrite,
    ): Promise<"deleted" | Refusal<"not_found"> | CallerRefusal> {
      return await asCaller(write, "share", async (tx, actor) => {
        const [row] = await tx<ProviderRef[]>`
          delete from sso_providers where id = ${id} returning id, name`;
        if (!row) return refuse("not_found");
        await recordAudit(
          tx,
          auditEvents.ssoProvider(
            "sso.provider_deleted",
            actor,
            row,
            write.context,
          ),
        );
        return "deleted";
      });
    },
  };
}
