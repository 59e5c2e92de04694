-- Webhook endpoints and their delivery attempts (src/webhooks/).
--
-- Delivery state is one cursor per endpoint: the last audit record it has
-- passed (delivered, or skipped as not matching its actions). Records are
-- delivered in id order, so an undelivered record holds back the later
-- ones of its endpoint. An instance claims an endpoint by a lease
-- (`lease_until`, `lease_token`) taken with FOR UPDATE SKIP LOCKED: only
-- one instance delivers to an endpoint at a time, and the lease of an
-- instance that died runs out, after which any instance claims it again.
create table webhook_endpoints (
  id integer generated always as identity primary key,
  url text not null,
  -- The actions delivered; null: every action.
  actions text[],
  description text,
  -- `whsec_` + base64 of 32 random bytes: needed to sign every delivery.
  secret text not null,
  created_at timestamptz not null default now(),
  -- The last record id passed; at creation, the chain's head then.
  cursor bigint not null,
  -- Failed attempts at the record after the cursor, and when to try again.
  failures integer not null default 0,
  next_attempt_at timestamptz not null default now(),
  -- The first failure since the last success: the retry budget runs from it.
  failing_since timestamptz,
  -- Set when the retry budget ran out; `POST /api/webhooks/{id}/enable` clears it.
  disabled_at timestamptz,
  lease_until timestamptz,
  lease_token uuid
);

-- What an idle poll reads: the endpoints that may be due.
create index webhook_endpoints_due on webhook_endpoints (next_attempt_at)
  where disabled_at is null;

create table webhook_attempts (
  id bigint generated always as identity primary key,
  endpoint_id integer not null references webhook_endpoints (id)
    on delete cascade,
  record_id bigint not null,
  -- 1 for the first attempt at this record, then 2, 3, ...
  attempt integer not null,
  at timestamptz not null default now(),
  -- delivered (2xx) or failed.
  outcome text not null,
  -- The HTTP status, null when none came (refused address, timeout, ...).
  status integer,
  -- Why it failed, in a few words.
  error text,
  -- The first bytes of the response body.
  response_excerpt text,
  duration_ms integer not null
);

create index webhook_attempts_endpoint on webhook_attempts (endpoint_id, id);
create index webhook_attempts_at on webhook_attempts (at);
