#!lua name=safegate_queue

-- safegate-queue's server side: every change of a queue's books happens in one of these
-- functions, together with the stream operation it accounts for, so that
--   admitted = completed + failed + dead + waiting   (waiting = XLEN jobs + ZCARD delayed)
-- holds at every instant, whatever crashes between two calls.
--
-- A queue NAME has its keys under the hash tag {NAME} (one Redis Cluster slot):
--   sg:{NAME}:jobs     stream, group `workers`: admitted jobs until acknowledged; fields job
--                      (payload), at (entered the stream, µs), first (first enqueued, µs;
--                      absent on a first attempt), n (attempts made)
--   sg:{NAME}:gate     hash: the controller's grant (share, conc, bound, expires, shed, ...)
--   sg:{NAME}:config   hash: cap, fallback, max_attempts, backoff_us, backoff_max_us, dead_max
--   sg:{NAME}:count    hash: the books
--   sg:{NAME}:delayed  sorted set: failed attempts waiting for their retry (score: due, µs)
--   sg:{NAME}:dead     list: dead letters (JSON), newest first, at most dead_max kept
--   sg:{NAME}:leader   string with an expiry: the leading controller's id
--   sg:{NAME}:hb:W     string with an expiry: worker W's heartbeat, `lanes:N` (its lanes
--                      consume as W/0 … W/N-1; a lane W/i with i >= N is an orphan)
--   sg:{NAME}:slot:I   string with an expiry: the consumer holding worker slot I
-- The wire format is documented in the crate's README (Any language: the wire format).

local WIRE = 1
-- This library's revision: a component never replaces a newer one it finds loaded.
local REVISION = 5

local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- A number, or `d` when absent, not a number, or NaN.
local function num(v, d)
  local x = tonumber(v)
  if x == nil or x ~= x then return d end
  return x
end

-- Calls that record an outcome or keep a lease may run over `maxmemory` (allow-oom): they
-- free memory or hold it steady, and refusing them would make handlers run again.

-- The fields of a stream entry as a table.
local function fields(e)
  local r = {}
  local f = e[2]
  for i = 1, #f, 2 do r[f[i]] = f[i + 1] end
  return r
end

-- Whether the grant in `gate` (a key, or nil) sheds retries now: `shed` = 1 and its lease runs.
local function shedding(gate, now)
  if not gate then return false end
  local g = redis.call('HMGET', gate, 'shed', 'expires')
  return g[1] == '1' and now < num(g[2], 0)
end

-- Book a job out for good: counted `failed` (kind 'failed') or `dead` (kinds 'dead' and
-- 'shed'), and its letter kept in the dead list.
local function dead_letter(count, dead, config, record)
  redis.call('HINCRBY', count, record.kind == 'failed' and 'failed' or 'dead', 1)
  redis.call('LPUSH', dead, cjson.encode(record))
  local keep = math.min(num(redis.call('HGET', config, 'dead_max'), 10000), 1000000000)
  if keep >= 1 then redis.call('LTRIM', dead, 0, keep - 1) else redis.call('DEL', dead) end
end

-- What the gate applies now: the grant while its lease runs (frozen when its controller
-- is gone), after it the fallback bound with no share (the decision core's GrantKeeper for
-- one gate: the bound never rises without a fresh grant), before any grant the fallback.
local function grant(gate, config, now)
  local g = redis.call('HMGET', gate, 'share', 'bound', 'expires', 'retry_us', 'job_us')
  local c = redis.call('HMGET', config, 'cap', 'fallback')
  local cap = num(c[1], 10000)
  local fallback = math.min(num(c[2], cap), cap)
  local expires = tonumber(g[3])
  local share, bound, mode
  if expires == nil then
    share, bound, mode = 1, fallback, 'bootstrap'
  elseif now < expires then
    share, bound, mode = num(g[1], 1), math.min(num(g[2], fallback), cap), 'granted'
  else
    share, bound, mode = 1, math.min(num(g[2], fallback), fallback), 'fallback'
  end
  return share, bound, mode, num(g[4], 1000000), num(g[5], 1000)
end

-- FCALL sg_enqueue 5 jobs gate config count delayed payload [u]
-- Returns {code, id, retry_after_us, mode}: code 0 admitted (id: the stream id), 1 turned
-- away by the controller's admission share, 2 the backlog is at its bound.
-- The share passes offers by error diffusion (exactly `share` of them, evenly spread); with
-- `u`, a uniform draw in [0, 1) made by the producer, by a coin instead: admitted iff
-- u < share (the seed's model of the gate; u = 0 always passes the share, never the bound).
local function enqueue(keys, args)
  local jobs, gate, config, count, delayed = keys[1], keys[2], keys[3], keys[4], keys[5]
  local payload = args[1]
  if payload == nil then return redis.error_reply('sg_enqueue: missing the payload (ARGV[1])') end
  local u = nil
  if args[2] ~= nil then
    u = tonumber(args[2])
    if u == nil or u ~= u or u < 0 or u >= 1 then
      return redis.error_reply('sg_enqueue: the draw u (ARGV[2]) must be a number in [0, 1), got ' .. string.sub(args[2], 1, 40))
    end
  end
  local now = now_us()
  local share, bound, mode, retry_us, job_us = grant(gate, config, now)
  redis.call('HINCRBY', count, 'offered', 1)
  if u ~= nil then
    if u >= share then
      redis.call('HINCRBY', count, 'rejected_share', 1)
      return {1, '', retry_us, mode}
    end
  elseif share < 1 then
    -- Error diffusion, not a coin: exactly `share` of the offers pass, evenly spread.
    local credit = num(redis.call('HGET', gate, 'credit'), 0) + math.max(share, 0)
    if credit < 1 then
      redis.call('HSET', gate, 'credit', credit)
      redis.call('HINCRBY', count, 'rejected_share', 1)
      return {1, '', retry_us, mode}
    end
    redis.call('HSET', gate, 'credit', credit - 1)
  end
  local len = redis.call('XLEN', jobs) + redis.call('ZCARD', delayed)
  if len >= bound then
    redis.call('HINCRBY', count, 'rejected_full', 1)
    local wait = (len - bound + 1) * job_us
    return {2, '', math.min(math.max(wait, 1000), 60000000), mode}
  end
  local id = redis.call('XADD', jobs, '*', 'job', payload, 'at', string.format('%.0f', now), 'n', '0')
  redis.call('HINCRBY', count, 'admitted', 1)
  return {0, id, 0, mode}
end

-- FCALL sg_ack 2 jobs count id group service_us [at_us]
-- Count one job done and remove it. Returns 1 + its time in the system [µs] if this
-- acknowledgement counted, 0 if the job had already been acknowledged or given back.
-- `at_us`, the entry's `at` field as the worker read it, saves reading the entry again
-- (a seek through the stream's node); without it, or if it is not a time in (0, now], the
-- entry is read here.
local function ack(keys, args)
  local jobs, count = keys[1], keys[2]
  local now = now_us()
  local at = tonumber(args[4])
  local e = nil
  -- Only a time the entry could have: after the epoch, not after now.
  if at == nil or not (at > 0 and at <= now) then e = redis.call('XRANGE', jobs, args[1], args[1]) end
  if redis.call('XACK', jobs, args[2], args[1]) == 0 then return 0 end
  redis.call('XDEL', jobs, args[1])
  if e ~= nil then
    at = now
    if e[1] then at = num(fields(e[1])['at'], now) end
  end
  local lat = math.max(0, now - at)
  local svc = math.min(lat, math.max(0, num(args[3], 0)))
  redis.call('HINCRBY', count, 'completed', 1)
  redis.call('HINCRBY', count, 'latency_us', lat)
  redis.call('HINCRBY', count, 'service_us', svc)
  return lat + 1
end

-- FCALL sg_fail 6 jobs count delayed dead config gate id group error fatal service_us u
-- (or 5 keys, without the gate: then no shedding)
-- One attempt failed. `fatal` = 1: the job is failed for good (counted `failed`, kept in the
-- dead list). Otherwise it is retried after an exponential backoff with jitter
-- (backoff_us·2^(attempt−1), capped at backoff_max_us, times 0.5 + u/2) until its attempts
-- reach max_attempts, then dead-lettered (counted `dead`). While the grant in force (its
-- lease running) says `shed` = 1, the safety filter's backup shedding retries, a failed
-- attempt is dead-lettered at once instead (kind 'shed', counted `dead`): its retry would
-- re-enter a backlog that has no room for it. Returns 0 (not counted: already acknowledged
-- or given back), 1 retried, 2 dead-lettered (or shed), 3 failed.
local function fail(keys, args)
  local jobs, count, delayed, dead, config = keys[1], keys[2], keys[3], keys[4], keys[5]
  local id, group, err = args[1], args[2], args[3] or ''
  local e = redis.call('XRANGE', jobs, id, id)
  if redis.call('XACK', jobs, group, id) == 0 then return 0 end
  redis.call('XDEL', jobs, id)
  local f = {}
  if e[1] then f = fields(e[1]) end
  local job, at = f['job'] or '', f['at'] or '0'
  local first = f['first'] or at
  local attempts = num(f['n'], 0) + 1
  local now = now_us()
  local lat = math.max(0, now - num(at, now))
  redis.call('HINCRBY', count, 'latency_us', lat)
  redis.call('HINCRBY', count, 'service_us', math.min(lat, math.max(0, num(args[5], 0))))
  local c = redis.call('HMGET', config, 'max_attempts', 'backoff_us', 'backoff_max_us')
  local max_attempts = num(c[1], 5)
  if args[4] == '1' then
    dead_letter(count, dead, config, {id = id, payload = job, attempts = attempts, error = err, kind = 'failed', at = now})
    return 3
  end
  if attempts >= max_attempts then
    dead_letter(count, dead, config, {id = id, payload = job, attempts = attempts, error = err, kind = 'dead', at = now})
    return 2
  end
  if shedding(keys[6], now) then
    dead_letter(count, dead, config, {id = id, payload = job, attempts = attempts, error = err, kind = 'shed', at = now})
    return 2
  end
  local base, cap = math.max(num(c[2], 100000), 0), math.max(num(c[3], 60000000), 0)
  local delay = math.min(base * 2 ^ math.min(attempts - 1, 60), cap) * (0.5 + math.min(math.max(num(args[6], 0.5), 0), 1) / 2)
  local member = cjson.encode({job = job, first = first, n = attempts, id = id})
  redis.call('ZADD', delayed, string.format('%.0f', now + delay), member)
  redis.call('HINCRBY', count, 'retried', 1)
  return 1
end

-- FCALL sg_promote 3 delayed jobs count max   (or 6: delayed jobs count dead config gate max)
-- Move up to `max` retries that are due into the stream. Returns how many moved. Given the
-- dead list, the settings and the gate, while the grant sheds retries the due ones are
-- dead-lettered instead (kind 'shed', counted `dead`): they would re-enter a backlog that
-- has no room for them.
local function promote(keys, args)
  local delayed, jobs, count = keys[1], keys[2], keys[3]
  local now = now_us()
  local shed = shedding(keys[6], now)
  local due = redis.call('ZRANGEBYSCORE', delayed, '-inf', string.format('%.0f', now), 'LIMIT', 0, num(args[1], 100))
  for _, m in ipairs(due) do
    local ok, r = pcall(cjson.decode, m)
    if not (ok and type(r) == 'table') then r = {} end
    if shed then
      dead_letter(count, keys[4], keys[5], {id = tostring(r.id or ''), payload = tostring(r.job or ''), attempts = num(r.n, 0),
        error = 'its retry was shed (the grant sheds retries)', kind = 'shed', at = now})
    elseif ok then
      -- `at` is when it entered the stream this time (the controller's wait and latency
      -- leave the backoff out); `first` the first enqueue.
      redis.call('XADD', jobs, '*', 'job', tostring(r.job or ''), 'at', string.format('%.0f', now),
        'first', tostring(r.first or r.at or '0'), 'n', tostring(r.n or 0))
    else
      redis.call('XADD', jobs, '*', 'job', '', 'at', '0', 'n', '0')
    end
    redis.call('ZREM', delayed, m)
  end
  return #due
end

-- FCALL sg_reap 4 jobs count dead config hb_prefix group budget
-- Give every job held by a consumer whose worker's heartbeat has expired back to the stream (its
-- delivery count plus one), or dead-letter it when that reaches max_attempts (a job that
-- kills its workers). Consumers with nothing pending and no heartbeat are deleted.
-- Returns the number of jobs given back or dead-lettered.
local function reap(keys, args)
  local jobs, count, dead, config = keys[1], keys[2], keys[3], keys[4]
  local prefix, group = args[1], args[2]
  local budget = num(args[3], 100)
  local max_attempts = num(redis.call('HGET', config, 'max_attempts'), 5)
  local ok, consumers = pcall(redis.call, 'XINFO', 'CONSUMERS', jobs, group)
  if not ok then return 0 end
  local moved = 0
  for _, c in ipairs(consumers) do
    local name, pending = nil, 0
    for i = 1, #c, 2 do
      if c[i] == 'name' then name = c[i + 1] end
      if c[i] == 'pending' then pending = tonumber(c[i + 1]) end
    end
    -- A consumer `W/i` is lane i of worker W, whose heartbeat is `prefix .. W`: it is
    -- reaped when that heartbeat has expired, or says W now runs fewer than i + 1 lanes (a
    -- restart under the same name with fewer lanes).
    local worker, lane = nil, nil
    if name then
      worker, lane = string.match(name, '^(.*)/(%d+)$')
      if not worker then worker = name end
    end
    local hb = name and redis.call('GET', prefix .. worker)
    local lanes = hb and tonumber(string.match(hb, '^lanes:(%d+)$'))
    local orphan = name and (not hb or (lanes ~= nil and lane ~= nil and tonumber(lane) >= lanes))
    if orphan then
      if pending > 0 and budget > 0 then
        local ents = redis.call('XPENDING', jobs, group, '-', '+', budget, name)
        for _, p in ipairs(ents) do
          local id = p[1]
          local e = redis.call('XRANGE', jobs, id, id)
          if e[1] then
            local f = fields(e[1])
            local n = num(f['n'], 0) + 1
            if n >= max_attempts then
              dead_letter(count, dead, config, {id = id, payload = f['job'] or '', attempts = n,
                error = 'its worker stopped beating ' .. n .. ' times', kind = 'dead', at = now_us()})
            else
              redis.call('XADD', jobs, '*', 'job', f['job'] or '', 'at', string.format('%.0f', now_us()),
                'first', f['first'] or f['at'] or '0', 'n', tostring(n))
              redis.call('HINCRBY', count, 'redelivered', 1)
            end
          end
          redis.call('XACK', jobs, group, id)
          redis.call('XDEL', jobs, id)
          moved = moved + 1
          budget = budget - 1
        end
        pending = pending - #ents
      end
      if pending <= 0 then redis.call('XGROUP', 'DELCONSUMER', jobs, group, name) end
    end
  end
  return moved
end

-- FCALL sg_beat 2 hb_key slot_key consumer ttl_ms [lanes]   (or 1 hb_key when no slot is held)
-- Refresh a consumer's heartbeat (`lanes:N` when the worker's lane count is given, else 1)
-- and its slot. Returns 1, or 0 if the slot was lost.
local function beat(keys, args)
  local value = '1'
  if args[3] and tonumber(args[3]) then value = 'lanes:' .. tonumber(args[3]) end
  redis.call('SET', keys[1], value, 'PX', args[2])
  if keys[2] == nil or keys[2] == '' then return 1 end
  if redis.call('GET', keys[2]) == args[1] then
    redis.call('PEXPIRE', keys[2], args[2])
    return 1
  end
  return 0
end

-- FCALL sg_slot 1 jobs slot_prefix consumer slots ttl_ms
-- Take the lowest free worker slot below `slots`. Returns it, or -1.
local function slot(keys, args)
  for i = 0, num(args[3], 0) - 1 do
    if redis.call('SET', args[1] .. i, args[2], 'NX', 'PX', args[4]) then return i end
  end
  return -1
end

-- FCALL sg_lead 2 leader gate id ttl_ms
-- Take or renew the controllers' lease. Returns {1, epoch} when `id` leads (the epoch
-- grows on every new leader), {0, holder} when another does.
local function lead(keys, args)
  local cur = redis.call('GET', keys[1])
  if cur == args[1] then
    redis.call('PEXPIRE', keys[1], args[2])
    return {1, num(redis.call('HGET', keys[2], 'epoch'), 0)}
  end
  if not cur then
    redis.call('SET', keys[1], args[1], 'PX', args[2])
    return {1, redis.call('HINCRBY', keys[2], 'epoch', 1)}
  end
  return {0, cur}
end

-- FCALL sg_publish 2 leader gate id share conc bound lease_us retry_us job_us [shed]
-- Publish a grant, only if `id` holds the lease (a deposed leader's late grant is refused).
-- `shed` = 1: failed attempts are dead-lettered, not retried, while this grant is in force.
-- Returns 1 when published, 0 when refused.
local function publish(keys, args)
  if redis.call('GET', keys[1]) ~= args[1] then return 0 end
  local now = now_us()
  redis.call('HSET', keys[2], 'share', args[2], 'conc', args[3], 'bound', args[4],
    'expires', string.format('%.0f', now + num(args[5], 0)), 'retry_us', args[6], 'job_us', args[7],
    'leader', args[1], 'published', string.format('%.0f', now), 'shed', args[8] == '1' and '1' or '0')
  return 1
end

-- FCALL sg_resign 1 leader id: give the lease up (a clean exit). Returns 1 if it was held.
local function resign(keys, args)
  if redis.call('GET', keys[1]) == args[1] then
    redis.call('DEL', keys[1])
    return 1
  end
  return 0
end

-- FCALL sg_oldest 1 jobs group: the age of the oldest job not yet delivered [µs].
local function oldest(keys, args)
  local ok, groups = pcall(redis.call, 'XINFO', 'GROUPS', keys[1])
  if not ok then return 0 end
  local last = '0-0'
  for _, g in ipairs(groups) do
    local name, id = nil, nil
    for i = 1, #g, 2 do
      if g[i] == 'name' then name = g[i + 1] end
      if g[i] == 'last-delivered-id' then id = g[i + 1] end
    end
    if name == args[1] and id then last = id end
  end
  local e = redis.call('XRANGE', keys[1], '(' .. last, '+', 'COUNT', 1)
  if not e[1] then return 0 end
  local now = now_us()
  return math.max(0, now - num(fields(e[1])['at'], now))
end

redis.register_function('sg_enqueue', enqueue)
redis.register_function{function_name = 'sg_ack', callback = ack, flags = {'allow-oom'}}
redis.register_function{function_name = 'sg_fail', callback = fail, flags = {'allow-oom'}}
redis.register_function{function_name = 'sg_promote', callback = promote, flags = {'allow-oom'}}
redis.register_function{function_name = 'sg_reap', callback = reap, flags = {'allow-oom'}}
redis.register_function{function_name = 'sg_beat', callback = beat, flags = {'allow-oom'}}
redis.register_function{function_name = 'sg_slot', callback = slot, flags = {'allow-oom'}}
redis.register_function{function_name = 'sg_lead', callback = lead, flags = {'allow-oom'}}
redis.register_function{function_name = 'sg_publish', callback = publish, flags = {'allow-oom'}}
redis.register_function{function_name = 'sg_resign', callback = resign, flags = {'allow-oom'}}
-- FCALL sg_stats 3 jobs count delayed group: the books and the state in one read:
-- {count (HGETALL), XLEN jobs, jobs pending (in service), ZCARD delayed}.
local function stats(keys, args)
  local pending = 0
  local ok, p = pcall(redis.call, 'XPENDING', keys[1], args[1])
  if ok and type(p) == 'table' and p[1] then pending = p[1] end
  return {redis.call('HGETALL', keys[2]), redis.call('XLEN', keys[1]), pending, redis.call('ZCARD', keys[3])}
end

redis.register_function{function_name = 'sg_stats', callback = stats, flags = {'no-writes'}}
redis.register_function{function_name = 'sg_oldest', callback = oldest, flags = {'no-writes'}}
redis.register_function{function_name = 'sg_wire', callback = function() return WIRE end, flags = {'no-writes'}}
redis.register_function{function_name = 'sg_revision', callback = function() return REVISION end, flags = {'no-writes'}}
