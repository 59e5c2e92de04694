-- Sessions are bound to the password they were opened with: a password
-- change bumps the user's version, and a session of another version no
-- longer resolves (so a login that raced a reset cannot outlive it).
alter table users add column password_version integer not null default 1;
alter table sessions add column password_version integer not null default 1;

-- Failed logins per (username, client address) and, under client '', per
-- username over all addresses (the ceiling). The username is the SHA-256 of
-- its canonical key (src/users/canonical.ts) as UTF-8: the same bytes as
-- sha256(convert_to(users.username_key, 'UTF8')). Counters are transient;
-- the old ones, keyed by JavaScript's lower case, are dropped.
drop table login_failures;
create table login_failures (
  username_hash bytea not null,
  client text not null,
  failures integer not null,
  window_started_at timestamptz not null,
  primary key (username_hash, client)
);
create index login_failures_window on login_failures (window_started_at);
