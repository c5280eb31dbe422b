//! The server-side scripts: every change of the accounting, with the stream operation it
//! accounts for, in one script.

/// The consumer group every executor reads with.
pub const GROUP: &str = "executors";

/// Admit and enqueue one job, or reject it, atomically.
///
/// KEYS: jobs, gate, count. ARGV: u (a uniform draw in \[0, 1) from the producer), the
/// job's payload, `1` if it is a retry.
/// Returns `{code, backlog}`: 0 admitted, 1 rejected by the admission share, 2 passed the
/// share but the backlog is at its bound (the model's "dropped": the gate's coin comes
/// first, as in the simulator).
pub(super) const ENQUEUE: &str = r#"
local share = tonumber(redis.call('HGET', KEYS[2], 'admit') or '1') or 1
local bound = tonumber(redis.call('HGET', KEYS[2], 'bound') or '-1') or -1
redis.call('HINCRBY', KEYS[3], 'offered', 1)
if ARGV[3] == '1' then redis.call('HINCRBY', KEYS[3], 'offered_retries', 1) end
local len = redis.call('XLEN', KEYS[1])
if tonumber(ARGV[1]) >= share then
  redis.call('HINCRBY', KEYS[3], 'rejected_share', 1)
  return {1, len}
end
if bound >= 0 and len >= bound then
  redis.call('HINCRBY', KEYS[3], 'rejected_full', 1)
  return {2, len}
end
local t = redis.call('TIME')
local at = string.format('%.0f', tonumber(t[1]) * 1000000 + tonumber(t[2]))
redis.call('XADD', KEYS[1], '*', 'job', ARGV[2], 'at', at, 'n', '0')
redis.call('HINCRBY', KEYS[3], 'admitted', 1)
if ARGV[3] == '1' then redis.call('HINCRBY', KEYS[3], 'admitted_retries', 1) end
return {0, len + 1}
"#;

/// Acknowledge one job: count it, remove it from the stream.
///
/// KEYS: jobs, count, failed. ARGV: id, `ok` or `fail`, service time \[µs\], the group.
/// Returns 1 + the job's time in the system \[µs\] if this acknowledgement counted, 0 if the
/// job had already been acknowledged or given back (a late acknowledgement of a redelivered
/// job counts nothing).
pub(super) const ACK: &str = r#"
local e = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])
local n = redis.call('XACK', KEYS[1], ARGV[4], ARGV[1])
if n == 0 then return 0 end
redis.call('XDEL', KEYS[1], ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local at = now
local job = ''
if e[1] then
  local f = e[1][2]
  for i = 1, #f, 2 do
    if f[i] == 'at' then at = tonumber(f[i + 1]) or now end
    if f[i] == 'job' then job = f[i + 1] end
  end
end
local lat = math.max(0, now - at)
local svc = math.min(lat, tonumber(ARGV[3]) or 0)
if ARGV[2] == 'ok' then
  redis.call('HINCRBY', KEYS[2], 'completed', 1)
else
  redis.call('HINCRBY', KEYS[2], 'failed', 1)
  redis.call('RPUSH', KEYS[3], job)
end
redis.call('HINCRBY', KEYS[2], 'latency_us', lat)
redis.call('HINCRBY', KEYS[2], 'wait_us', lat - svc)
return lat + 1
"#;

/// Age of the oldest job not yet delivered \[µs\], 0 when none waits.
///
/// KEYS: jobs. ARGV: the group.
pub(super) const OLDEST: &str = r#"
local groups = redis.call('XINFO', 'GROUPS', KEYS[1])
local last = '0-0'
for _, g in ipairs(groups) do
  local name, id = nil, nil
  for i = 1, #g, 2 do
    if g[i] == 'name' then name = g[i + 1] end
    if g[i] == 'last-delivered-id' then id = g[i + 1] end
  end
  if name == ARGV[1] and id then last = id end
end
local e = redis.call('XRANGE', KEYS[1], '(' .. last, '+', 'COUNT', 1)
if not e[1] then return 0 end
local f = e[1][2]
for i = 1, #f, 2 do
  if f[i] == 'at' then
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
    return math.max(0, now - (tonumber(f[i + 1]) or now))
  end
end
return 0
"#;

/// Give every job held by a consumer whose heartbeat has expired back to the backlog.
///
/// KEYS: jobs, count. ARGV: heartbeat key prefix, the group, most entries per call.
/// Each job is re-added at the tail with its enqueue time and its delivery count plus
/// one, then acknowledged and deleted, in one step: `XLEN` does not change. Consumers with
/// nothing pending and no heartbeat are deleted. Returns the number of jobs given back.
pub(super) const REAP: &str = r#"
local consumers = redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[2])
local budget = tonumber(ARGV[3])
local moved = 0
for _, c in ipairs(consumers) do
  local name, pending = nil, 0
  for i = 1, #c, 2 do
    if c[i] == 'name' then name = c[i + 1] end
    if c[i] == 'pending' then pending = tonumber(c[i + 1]) end
  end
  if name and redis.call('EXISTS', ARGV[1] .. name) == 0 then
    if pending > 0 and budget > 0 then
      local ents = redis.call('XPENDING', KEYS[1], ARGV[2], '-', '+', budget, name)
      for _, p in ipairs(ents) do
        local id = p[1]
        local e = redis.call('XRANGE', KEYS[1], id, id)
        if e[1] then
          local f = e[1][2]
          local job, at, n = '', '0', 0
          for i = 1, #f, 2 do
            if f[i] == 'job' then job = f[i + 1] end
            if f[i] == 'at' then at = f[i + 1] end
            if f[i] == 'n' then n = tonumber(f[i + 1]) or 0 end
          end
          redis.call('XADD', KEYS[1], '*', 'job', job, 'at', at, 'n', tostring(n + 1))
          redis.call('HINCRBY', KEYS[2], 'redelivered', 1)
        end
        redis.call('XACK', KEYS[1], ARGV[2], id)
        redis.call('XDEL', KEYS[1], id)
        moved = moved + 1
        budget = budget - 1
      end
      pending = pending - #ents
    end
    if pending <= 0 then redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[2], name) end
  end
end
return moved
"#;

/// Refresh a consumer's heartbeat and, if it holds one, its slot.
///
/// KEYS: heartbeat key, slot key (or an empty string). ARGV: consumer, ttl \[ms\].
/// Returns 1 if the slot is still this consumer's (or none is held), 0 if it was lost.
pub(super) const BEAT: &str = r#"
redis.call('SET', KEYS[1], '1', 'PX', ARGV[2])
if KEYS[2] == '' then return 1 end
if redis.call('GET', KEYS[2]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  return 1
end
return 0
"#;

/// Take the lowest free executor slot below `ARGV[3]`.
///
/// KEYS: none. ARGV: slot key prefix, consumer, slots, ttl \[ms\]. Returns the slot or −1.
pub(super) const TAKE_SLOT: &str = r#"
for i = 0, tonumber(ARGV[3]) - 1 do
  if redis.call('SET', ARGV[1] .. i, ARGV[2], 'NX', 'PX', ARGV[4]) then return i end
end
return -1
"#;
