-- Service credentials and safe retries: new tables and one nullable column,
-- so a release without them keeps working beside this one.

-- API keys. The database keeps the SHA-256 of the secret, never the secret.
-- A request finds its key by that hash (the unique index) joined with the
-- owner's row: one indexed lookup, as a session's.
create table api_keys (
  id integer generated always as identity primary key,
  user_id integer not null references users (id) on delete cascade,
  name text not null,
  -- `uak_` and the first 8 characters of the secret: recognisable in lists.
  prefix text not null,
  secret_hash bytea not null unique,
  created_at timestamptz not null default now(),
  expires_at timestamptz,
  last_used_at timestamptz,
  revoked_at timestamptz
);
-- A user's keys, newest first; also what the owner's deletion cascades by.
create index api_keys_user on api_keys (user_id, id);

-- Idempotency-Key of POST /api/users, per caller. A row is inserted when a
-- request starts (its own committed statement, so every instance sees it)
-- and holds the answer once it is 201 or 409. `expires_at` is the start
-- plus the request deadline while it runs (a crashed request's row is
-- taken over after it), and 24 hours once answered; housekeeping removes
-- expired rows.
create table idempotency_keys (
  user_id integer not null references users (id) on delete cascade,
  key text not null,
  -- SHA-256 of the request as the service reads it (src/http/idempotency.ts).
  fingerprint bytea not null,
  -- Which run owns a running row: only it may finish or release it.
  run_id text not null,
  status integer,
  body text,
  location text,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  primary key (user_id, key)
);
create index idempotency_keys_expiry on idempotency_keys (expires_at);

-- The key a record's actor used, when the request came with one. It is the
-- eleventh element of a record's canonical content, written only when set
-- (src/audit/chain.ts): every record without it hashes as before.
alter table audit_events add column actor_key_id integer;

-- audit_seal as 008 made it, storing that element too (null for every tail
-- without it, which includes every tail an older release writes).
create or replace function audit_seal(batch integer) returns integer
language plpgsql set enable_seqscan = off set jit = off as $$
declare
  head audit_chain;
  pending record;
  sealed integer := 0;
  taken tid[] := '{}';
  stamp text;
  canonical text;
  content jsonb;
  digest bytea;
begin
  perform from audit_pending limit 1;
  if not found then
    return 0;
  end if;
  select * into strict head from audit_chain where singleton for update;
  for pending in
    select ctid, time, tail from audit_pending order by seq limit batch
  loop
    head.head_id := head.head_id + 1;
    stamp := to_char(pending.time at time zone 'UTC',
      'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
    canonical := '[' || head.head_id::text || ',"' || stamp || '",'
      || pending.tail;
    digest := sha256(head.head_hash || convert_to(canonical, 'UTF8'));
    content := canonical::jsonb;
    insert into audit_events (id, time, action, actor_id, actor_username,
      target_id, target_username, details, request_id, client_address,
      actor_key_id, prev_hash, hash)
    values (head.head_id, stamp::timestamptz, content->>2,
      (content->>3)::integer, content->>4, (content->>5)::integer,
      content->>6, content->7, content->>8, content->>9,
      (content->>10)::integer, head.head_hash, digest);
    head.head_hash := digest;
    sealed := sealed + 1;
    taken[sealed] := pending.ctid;
  end loop;
  if sealed > 0 then
    delete from audit_pending where ctid = any(taken);
    update audit_chain set head_id = head.head_id, head_hash = head.head_hash
    where singleton;
  end if;
  return sealed;
end $$;
