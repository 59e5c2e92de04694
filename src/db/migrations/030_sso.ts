import type { TransactionSql } from "postgres";
import { newDeviceKey } from "../../auth/tokens.ts";

/**
 * Signing in with an identity provider (docs/sso.md). Expand-only: new
 * tables, so a release without them keeps working beside this one.
 *
 * - `secret_key`: one row, the AES-256-GCM key that seals secrets kept at
 *   rest (src/auth/secret-box.ts), made here at the first start that
 *   migrates, so every instance opens what any instance sealed. A dump of
 *   the providers alone reveals no client secret.
 * - `sso_providers`: the OpenID Connect providers admins configure; the
 *   client secret sealed (12-byte IV, ciphertext and tag), never in clear.
 * - `sso_links`: which account a provider's subject signs in to, once
 *   found (`created`: the provider made the account). One account per
 *   subject and one subject per account and provider.
 * - `sso_pending`: sign-ins sent to the provider and not yet back: the
 *   SHA-256 of their `state`, their nonce and PKCE verifier, where to go
 *   after; in the database, so any instance finishes what another began.
 *   Housekeeping deletes the expired ones.
 */
export default async function (tx: TransactionSql) {
  await tx`
    create table secret_key (
      singleton boolean primary key default true check (singleton),
      key bytea not null check (length(key) = 32),
      created_at timestamptz not null default now()
    )`;
  await tx`insert into secret_key (key) values (${newDeviceKey()})`;
  await tx`
    create table sso_providers (
      id integer generated always as identity primary key,
      name text not null,
      issuer text not null,
      client_id text not null,
      client_secret bytea not null,
      scopes text[] not null,
      username_claim text not null,
      allowed_domains text[] not null default '{}',
      link text not null check (link in ('externalId', 'email', 'none')),
      create_users boolean not null default false,
      password_login boolean not null default true,
      mfa_acr text,
      scim_connection_id integer references scim_connections (id),
      created_at timestamptz not null default clock_timestamp()
    )`;
  await tx`
    create table sso_links (
      provider_id integer not null
        references sso_providers (id) on delete cascade,
      subject text not null,
      user_id integer not null references users (id) on delete cascade,
      created boolean not null default false,
      linked_at timestamptz not null default clock_timestamp(),
      primary key (provider_id, subject),
      unique (provider_id, user_id)
    )`;
  await tx`create index sso_links_user on sso_links (user_id)`;
  await tx`
    create table sso_pending (
      state_hash bytea primary key,
      provider_id integer not null
        references sso_providers (id) on delete cascade,
      nonce text not null,
      code_verifier text not null,
      return_to text not null,
      expires_at timestamptz not null
    )`;
  await tx`create index sso_pending_expires on sso_pending (expires_at)`;
}
