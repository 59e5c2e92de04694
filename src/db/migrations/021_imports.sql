-- Imports of users (docs/migrating.md, "Importing"). Expand-only:
-- new tables and one nullable column, so a release without them keeps
-- working beside this one.
--
-- An import's body is streamed into import_records as it arrives, one row
-- per record, before the job is queued; any instance's worker then leases
-- the job (FOR UPDATE SKIP LOCKED, then a lease that outlives the lock, as
-- webhook endpoints are leased) and works through its records in line
-- order, a batch per transaction: the users, their `user.created` records,
-- the batch's errors, the counts and the cursor (`done_line`) commit
-- together, and the batch's records are deleted in the same transaction.
-- A worker killed mid-batch leaves the batch as it was; whoever leases the
-- job next starts again after `done_line`, so every user is created once.

-- The external system's id of a user (an import's `externalId`), as given;
-- and the import that created the user, which tells a name given twice in
-- one file (refused) from one that was there before (the conflict policy).
alter table users
  add column if not exists external_id text,
  add column if not exists import_id integer;

create table import_jobs (
  id integer generated always as identity primary key,
  -- `receiving` while the body streams in (never shown: its id is not given
  -- out until it is queued), then queued, running, and one of the ends.
  status text not null check (status in ('receiving', 'queued', 'running',
    'finished', 'failed', 'cancelled')),
  on_conflict text not null check (on_conflict in ('fail', 'skip', 'update')),
  dry_run boolean not null,
  -- Who asked for it and from where: the actor and context of its records.
  actor_id integer not null,
  actor_username text not null,
  actor_key_id integer,
  request_id text,
  client_address text,
  total integer not null default 0,
  processed integer not null default 0,
  created integer not null default 0,
  updated integer not null default 0,
  skipped integer not null default 0,
  failed integer not null default 0,
  -- Records up to this line are done (their users written or refused).
  done_line integer not null default 0,
  created_at timestamptz not null default now(),
  started_at timestamptz,
  finished_at timestamptz,
  lease_until timestamptz,
  lease_token uuid,
  -- Batches that failed unforeseen; the job fails after a few.
  attempts integer not null default 0
);
-- The jobs a worker may lease.
create index import_jobs_open on import_jobs (id)
  where status in ('receiving', 'queued', 'running');

create table import_records (
  job_id integer not null references import_jobs (id) on delete cascade,
  -- Counted from 1 in the file; a CSV header is line 1, and a CSV record
  -- that spans lines is numbered by its first.
  line integer not null,
  -- The record as a JSON object's text; null when the line could not be
  -- read (`problem` says why).
  record text,
  problem text,
  primary key (job_id, line)
);

create table import_errors (
  job_id integer not null references import_jobs (id) on delete cascade,
  line integer not null,
  error text not null,
  primary key (job_id, line)
);
