-- A second factor (docs/security.md, "Second factors").
-- Expand-only: new tables, and columns with defaults that a release without
-- them neither reads nor needs to write.

-- Whether the user has a confirmed factor (a TOTP or a passkey): read with
-- every session lookup, so the policy and the step-up rule cost no second
-- lookup. Written in the transaction that adds or removes a factor, which
-- so also changes the user's version (the detail shows the factors).
alter table users add column mfa_enabled boolean not null default false;

-- When the session last passed a second factor (its login's, a step-up, or
-- the enrolment it confirmed); null: never.
alter table sessions add column second_factor_at timestamptz;

-- One TOTP per user: its base32 secret, unconfirmed until a code from it is
-- shown (`confirmed_at`), and the last time step a code was accepted for,
-- so that a code is accepted once.
create table mfa_totp (
  user_id integer primary key references users (id) on delete cascade,
  secret text not null,
  created_at timestamptz not null default now(),
  confirmed_at timestamptz,
  last_step bigint not null default 0
);

-- Passkeys (WebAuthn credentials): the public key and the signature counter.
create table mfa_passkeys (
  id integer generated always as identity primary key,
  user_id integer not null references users (id) on delete cascade,
  credential_id text not null unique,
  public_key bytea not null,
  counter bigint not null default 0,
  transports text[] not null default '{}',
  name text not null,
  created_at timestamptz not null default now(),
  last_used_at timestamptz
);
create index mfa_passkeys_user on mfa_passkeys (user_id, id);

-- Recovery codes, as their SHA-256 (each holds 50 random bits); a used code
-- is deleted.
create table mfa_recovery_codes (
  user_id integer not null references users (id) on delete cascade,
  code_hash bytea not null,
  primary key (user_id, code_hash)
);

-- WebAuthn challenges: single use, bound to a user and a purpose
-- (`register`, `login`, `step_up`), short-lived.
create table mfa_challenges (
  challenge text primary key,
  user_id integer not null references users (id) on delete cascade,
  purpose text not null,
  expires_at timestamptz not null
);
create index mfa_challenges_user on mfa_challenges (user_id);

-- Pending logins: a right password waiting for its second factor. The
-- cookie's SHA-256, bound to the password version it was checked against.
create table mfa_pending (
  token_hash bytea primary key,
  user_id integer not null references users (id) on delete cascade,
  password_version integer not null,
  expires_at timestamptz not null
);
create index mfa_pending_user on mfa_pending (user_id);

-- Wrong second-factor codes per user in a fixed window from the first.
create table mfa_failures (
  user_id integer primary key references users (id) on delete cascade,
  window_started_at timestamptz not null,
  failures integer not null
);
