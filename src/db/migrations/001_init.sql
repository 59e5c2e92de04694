-- Users: username and e-mail are unique regardless of case, stored as given.
create table users (
  id integer generated always as identity primary key,
  username text not null,
  name text not null,
  email text not null,
  role text not null check (role in ('admin', 'viewer')),
  password_hash text not null,
  created_at timestamptz not null default clock_timestamp()
);
create unique index users_username_key on users (lower(username));
create unique index users_email_key on users (lower(email));
create index users_created_at_id on users (created_at, id);

-- Sessions: only the SHA-256 of the cookie's token is kept.
create table sessions (
  token_hash bytea primary key,
  user_id integer not null references users (id) on delete cascade,
  expires_at timestamptz not null,
  created_at timestamptz not null default now()
);
create index sessions_user_id on sessions (user_id);
create index sessions_expires_at on sessions (expires_at);

-- Failed logins per username (SHA-256 of its lower case), fixed window.
create table login_failures (
  username_hash bytea primary key,
  failures integer not null,
  window_started_at timestamptz not null
);
