-- wrk script of the bench. Environment:
--   BENCH_METHOD  request method (default GET)
--   BENCH_BODY    a fixed JSON body
--   BENCH_CREATE  a prefix: each request creates a new user named from it
--   BENCH_ALTERNATE  two JSON bodies on two lines: requests alternate them
--   BENCH_TARGETS  comma-separated ids appended to the URL's path: each
--                  thread cycles through its own share of them, and with
--                  BENCH_ALTERNATE each pass over its share sends the next
--                  body (so every request changes its target)
--   BENCH_TARGET_FIRST  an id: each request appends the next id from it to
--                  the URL's path, never one twice (thread t of n takes
--                  first + t - 1, then every n-th); for DELETE
--   BENCH_IDEMPOTENT  with BENCH_CREATE: each creation carries an
--                  Idempotency-Key of its own (the new user's name)
--   BENCH_THREADS  wrk's thread count (set by wrk.ts)
-- On exit it prints one line, "BENCH {json}", that bench.ts reads.

local method = os.getenv("BENCH_METHOD") or "GET"
local body = os.getenv("BENCH_BODY")
local create = os.getenv("BENCH_CREATE")
local idempotent = os.getenv("BENCH_IDEMPOTENT")
local alternate = {}
for line in (os.getenv("BENCH_ALTERNATE") or ""):gmatch("[^\n]+") do
  alternate[#alternate + 1] = line
end

local targets = {}
for id in (os.getenv("BENCH_TARGETS") or ""):gmatch("[^,]+") do
  targets[#targets + 1] = id
end
local threads = tonumber(os.getenv("BENCH_THREADS") or "1")
local target_first = tonumber(os.getenv("BENCH_TARGET_FIRST") or "")

local next_thread = 1
function setup(thread)
  thread:set("thread_id", next_thread)
  next_thread = next_thread + 1
end

local counter = 0
function init(args)
  wrk.method = method
  wrk.headers["Content-Type"] = "application/json"
  if body then wrk.body = body end
  -- This thread's share of the targets: no two threads touch one target.
  mine = {}
  for i = thread_id, #targets, threads do mine[#mine + 1] = targets[i] end
end

function request()
  if target_first then
    counter = counter + 1
    local target = target_first + (thread_id - 1) + threads * (counter - 1)
    return wrk.format(nil, wrk.path .. target, nil, body)
  end
  if #mine > 0 then
    counter = counter + 1
    local pass = math.floor((counter - 1) / #mine)
    local target = mine[(counter - 1) % #mine + 1]
    local b = #alternate == 2 and alternate[pass % 2 + 1] or body
    return wrk.format(nil, wrk.path .. target, nil, b)
  end
  if #alternate == 2 then
    counter = counter + 1
    return wrk.format(nil, nil, nil, alternate[counter % 2 + 1])
  end
  if not create then return wrk.request() end
  counter = counter + 1
  local name = create .. "-" .. thread_id .. "-" .. counter
  local user = string.format(
    '{"username":"%s","name":"Bench %s","email":"%s@example.com","password":"bench-password","role":"viewer"}',
    name, name, name)
  if not idempotent then return wrk.format("POST", nil, nil, user) end
  local headers = {}
  for k, v in pairs(wrk.headers) do headers[k] = v end
  headers["Idempotency-Key"] = name
  return wrk.format("POST", nil, headers, user)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH {"requests":%d,"durationUs":%d,"bytes":%d,"p50Us":%d,"p99Us":%d,"maxUs":%d,' ..
    '"connectErrors":%d,"readErrors":%d,"writeErrors":%d,"timeouts":%d,"non2xx":%d}\n',
    summary.requests, summary.duration, summary.bytes,
    latency:percentile(50), latency:percentile(99), latency.max,
    e.connect, e.read, e.write, e.timeout, e.status))
end
