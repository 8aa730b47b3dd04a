-- Cupel shared run budget: every operation on a run's books, one atomic
-- script per call (spec/21-shared-run-budget.md). The rules are those of
-- crates/cupel-run/src/rules.rs; keep the two in step (the behaviour suite in
-- tests/shared_budget.rs runs both stores).
--
-- KEYS[1] scopes hash   cupel:{run}:scopes   fields "<id>:<name>" + counters
-- KEYS[2] leases zset   cupel:{run}:leases   reservation -> lease end (ms)
-- KEYS[3] holds hash    cupel:{run}:holds    reservation -> "in,out,id.id.id"
-- KEYS[4] done hash     cupel:{run}:done     "s:<reservation>" / "r:<request>" -> 1:
--                       settles and records already counted (exactly once)
-- ARGV[1] the operation; the rest depend on it (see each function).
--
-- Per scope: parent, depth, label, dl (deadline ms), li/lo (limits),
-- ui/uo (used), ri/ro (reserved), fi/fo (refused), halt (breach record).
-- Counts stay decimal strings and change only through HINCRBY (exact 64-bit
-- integers); comparisons convert to Lua numbers, exact below 2^53, which the
-- client enforces for every count and limit it sends.

local S, L, H, D = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local op = ARGV[1]

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function get(id, name)
  return redis.call('HGET', S, id .. ':' .. name)
end

local function num(id, name)
  return tonumber(get(id, name) or '0')
end

local function touch(idle_ms)
  local at = redis.call('HGET', S, 'expire_at')
  for _, k in ipairs({S, L, H, D}) do
    if at then
      redis.call('PEXPIREAT', k, at)
    else
      redis.call('PEXPIRE', k, idle_ms)
    end
  end
end

-- "0.3.7" -> {"0", "3", "7"}, checked to be a chain from the root.
local function parse_path(csv)
  local path = {}
  for id in string.gmatch(csv, '[^.]+') do
    path[#path + 1] = id
  end
  for d, id in ipairs(path) do
    local depth = get(id, 'depth')
    if not depth or tonumber(depth) ~= d - 1 then
      return nil, 'scope ' .. id .. ' is not at depth ' .. (d - 1)
    end
    if d > 1 and get(id, 'parent') ~= path[d - 1] then
      return nil, 'scope ' .. id .. ' is not a child of scope ' .. path[d - 1]
    end
  end
  if #path == 0 then
    return nil, 'empty scope path'
  end
  return path
end

-- "-" .. s, except that Redis reads "-0" as no integer at all.
local function neg(s)
  if s == '0' then
    return '0'
  end
  return '-' .. s
end

local function charge(path, field_i, field_o, i, o)
  for _, id in ipairs(path) do
    redis.call('HINCRBY', S, id .. ':' .. field_i, i)
    redis.call('HINCRBY', S, id .. ':' .. field_o, o)
  end
end

-- Gives back every reservation whose lease ended at or before now.
local function expire_leases(now)
  local ended = redis.call('ZRANGEBYSCORE', L, '-inf', now)
  for _, rid in ipairs(ended) do
    local rec = redis.call('HGET', H, rid)
    if rec then
      local i, o, p = string.match(rec, '^(%d+),(%d+),(.*)$')
      local path = {}
      for id in string.gmatch(p, '[^.]+') do
        path[#path + 1] = id
      end
      charge(path, 'ri', 'ro', neg(i), neg(o))
      redis.call('HDEL', H, rid)
    end
    redis.call('ZREM', L, rid)
  end
end

-- The path's books: now, then per scope ui uo ri ro fi fo halted.
local function state(path, now)
  local out = {now}
  for _, id in ipairs(path) do
    for _, f in ipairs({'ui', 'uo', 'ri', 'ro', 'fi', 'fo'}) do
      out[#out + 1] = get(id, f) or '0'
    end
    out[#out + 1] = get(id, 'halt') and 1 or 0
  end
  return out
end

local function latched(path)
  for _, id in ipairs(path) do
    local h = get(id, 'halt')
    if h then
      return h
    end
  end
  return nil
end

-- phase|dimension|breach|scope depth|requester depth|ui|uo|ri|ro|qi|qo|dur|now|label flag|label
local function record(phase, dim, breach, d, path, qi, qo, dur, now, has_label, label)
  local id = path[d]
  return table.concat({phase, dim, breach, tostring(d - 1), tostring(#path - 1),
    get(id, 'ui') or '0', get(id, 'uo') or '0', get(id, 'ri') or '0', get(id, 'ro') or '0',
    qi, qo, dur, string.format('%d', now), has_label, label}, '|')
end

-- The first rule broken on the path, root first; nil if none.
local function first_breach(path, qi, qo, dur, now)
  local cost = {tonumber(qi), tonumber(qo)}
  for d, id in ipairs(path) do
    local dl = get(id, 'dl')
    if dl then
      dl = tonumber(dl)
      if now >= dl then
        return d, 'deadline', 'expired'
      end
      if dur >= 0 and dur > dl - now then
        return d, 'deadline', 'too_long'
      end
    end
    for k, dim in ipairs({'input', 'output'}) do
      local lim = get(id, k == 1 and 'li' or 'lo')
      if lim then
        lim = tonumber(lim)
        local used = num(id, k == 1 and 'ui' or 'uo')
        local held = num(id, k == 1 and 'ri' or 'ro')
        if used + held >= lim then
          return d, dim, 'exhausted'
        end
        if used + held + cost[k] > lim then
          return d, dim, 'does_not_fit'
        end
      end
    end
  end
  return nil
end

local function set_scope(id, parent, depth, dl, li, lo, has_label, label)
  local f = {id .. ':depth', depth}
  if parent ~= '' then f[#f + 1] = id .. ':parent'; f[#f + 1] = parent end
  if dl ~= '' then f[#f + 1] = id .. ':dl'; f[#f + 1] = dl end
  if li ~= '' then f[#f + 1] = id .. ':li'; f[#f + 1] = li end
  if lo ~= '' then f[#f + 1] = id .. ':lo'; f[#f + 1] = lo end
  if has_label == '1' then f[#f + 1] = id .. ':label'; f[#f + 1] = label end
  redis.call('HSET', S, unpack(f))
end

-- create_run dl li lo expire_at idle_ms
if op == 'create_run' then
  if redis.call('EXISTS', S) == 1 then
    return {'exists'}
  end
  set_scope('0', '', '0', ARGV[2], ARGV[3], ARGV[4], '0', '')
  redis.call('HSET', S, 'next', '1', 'next_hold', '0')
  if ARGV[5] ~= '' then
    redis.call('HSET', S, 'expire_at', ARGV[5])
  end
  touch(ARGV[6])
  return {'ok'}
end

if redis.call('EXISTS', S) == 0 then
  return {'unknown_run'}
end

-- create_child parent dl li lo has_label label idle_ms
if op == 'create_child' then
  local parent = ARGV[2]
  local depth = get(parent, 'depth')
  if not depth then
    return {'unknown_scope', parent}
  end
  local id = tostring(redis.call('HINCRBY', S, 'next', 1) - 1)
  set_scope(id, parent, tostring(tonumber(depth) + 1), ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7])
  touch(ARGV[8])
  return {'ok', id}
end

-- scope_path scope: per scope (root first) id dl li lo has_label label
if op == 'scope_path' then
  local id = ARGV[2]
  if not get(id, 'depth') then
    return {'unknown_scope', id}
  end
  local chain = {}
  while id do
    table.insert(chain, 1, id)
    id = get(id, 'parent')
  end
  local out = {'ok'}
  for _, s in ipairs(chain) do
    local label = get(s, 'label')
    for _, v in ipairs({s, get(s, 'dl') or '', get(s, 'li') or '', get(s, 'lo') or '',
                        label and '1' or '0', label or ''}) do
      out[#out + 1] = v
    end
  end
  return out
end

local path, err = parse_path(ARGV[2])
if not path then
  return {'malformed', err}
end
local now = now_ms()

-- admit path phase qi qo dur mode lease_ms has_label label idle_ms
if op == 'admit' then
  expire_leases(now)
  local h = latched(path)
  if h then
    return {'refused', h, state(path, now)}
  end
  local qi, qo, dur, mode = ARGV[4], ARGV[5], tonumber(ARGV[6]), ARGV[7]
  local d, dim, breach = first_breach(path, qi, qo, dur, now)
  if d then
    local rec = record(ARGV[3], dim, breach, d, path, qi, qo, ARGV[6], now, ARGV[9], ARGV[10])
    if mode ~= 'probe' then
      redis.call('HSETNX', S, path[d] .. ':halt', rec)
      charge(path, 'fi', 'fo', qi, qo)
      touch(ARGV[11])
    end
    return {'refused', rec, state(path, now)}
  end
  local rid = -1
  if mode == 'reserve' then
    charge(path, 'ri', 'ro', qi, qo)
    rid = redis.call('HINCRBY', S, 'next_hold', 1)
    redis.call('HSET', H, rid, qi .. ',' .. qo .. ',' .. table.concat(path, '.'))
    redis.call('ZADD', L, now + tonumber(ARGV[8]), rid)
    touch(ARGV[11])
  end
  return {'passed', rid, state(path, now)}
end

-- settle path hold has_actual ai ao idle_ms
-- A reservation settles once: a retry after a lost reply finds it in D and
-- counts nothing again ({'ok', 'again'}).
if op == 'settle' then
  if redis.call('HEXISTS', D, 's:' .. ARGV[3]) == 1 then
    return {'ok', 'again'}
  end
  redis.call('HSET', D, 's:' .. ARGV[3], '1')
  local rec = redis.call('HGET', H, ARGV[3])
  if rec then
    local i, o, p = string.match(rec, '^(%d+),(%d+),(.*)$')
    local held = {}
    for id in string.gmatch(p, '[^.]+') do
      held[#held + 1] = id
    end
    charge(held, 'ri', 'ro', neg(i), neg(o))
    redis.call('HDEL', H, ARGV[3])
    redis.call('ZREM', L, ARGV[3])
  end
  if ARGV[4] == '1' then
    charge(path, 'ui', 'uo', ARGV[5], ARGV[6])
  end
  touch(ARGV[7])
  return {'ok'}
end

-- record path ui uo idle_ms request
-- With a request id (ARGV[6] not empty) a record counts once: a retry finds
-- the id in D and counts nothing again ({'ok', 'again'}).
if op == 'record' then
  local req = ARGV[6] or ''
  if req ~= '' then
    if redis.call('HEXISTS', D, 'r:' .. req) == 1 then
      return {'ok', 'again'}
    end
    redis.call('HSET', D, 'r:' .. req, '1')
  end
  charge(path, 'ui', 'uo', ARGV[3], ARGV[4])
  touch(ARGV[5])
  return {'ok'}
end

-- read path
if op == 'read' then
  expire_leases(now)
  return {'ok', state(path, now)}
end

-- finalize path has_label label idle_ms
if op == 'finalize' then
  expire_leases(now)
  local h = latched(path)
  if h then
    return {'refused', h, state(path, now)}
  end
  for d, id in ipairs(path) do
    for k, dim in ipairs({'input', 'output'}) do
      local lim = get(id, k == 1 and 'li' or 'lo')
      if lim and num(id, k == 1 and 'ui' or 'uo') > tonumber(lim) then
        local rec = record('response', dim, 'overshot', d, path, '0', '0', '-1', now, ARGV[3], ARGV[4])
        redis.call('HSETNX', S, id .. ':halt', rec)
        touch(ARGV[5])
        return {'refused', rec, state(path, now)}
      end
    end
  end
  return {'passed', -1, state(path, now)}
end

return {'malformed', 'unknown operation ' .. op}
