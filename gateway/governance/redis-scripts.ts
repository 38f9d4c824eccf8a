// Lua run atomically inside Redis/Valkey. A request's rules are admitted together: all admit or none changes.
// Floats (GCRA arrival times) travel as %.17g strings, which round-trip a double; spend is two integers per counter,
// whole points `w` and femtopoints `f` (0 <= f < 10^15), both exact in Lua's doubles.
// A rule travels as one spec string built once per rule: "kind:a:b:ttl" with kind r (rpm), t (tpm), c (concurrency)
// or b (budget); a is the limit (budgets: whole points), b the budget's femtopoints, ttl the counter's ms (budgets).

const COMMON = `
local W = 60000
local EPS = 1e-6
-- A settlement mark outlives the lease by this much: a settlement sent again after an outage up to then still counts.
local MARK_GRACE = 600000
local ONE = 1e15
local function num(x) return string.format('%.17g', x) end
local function addSpend(key, dw, df, ttl)
  if dw == 0 and df == 0 then return end
  -- Most charges and reservations are below one point: their whole part (0) is not sent to the hash.
  if dw ~= 0 then redis.call('HINCRBY', key, 'w', string.format('%d', dw)) end
  local f = redis.call('HINCRBY', key, 'f', string.format('%d', df))
  if f >= ONE or f < 0 then
    local c = math.floor(f / ONE)
    redis.call('HINCRBY', key, 'f', string.format('%d', -c * ONE))
    redis.call('HINCRBY', key, 'w', string.format('%d', c))
  end
  if ttl > 0 then redis.call('PEXPIRE', key, ttl) end
end
`;

/**
 * Every admission, settlement and read of one event-loop turn in one call. Each ARGV entry is one operation, its
 * fields separated by spaces, so a request adds one short argument and no key:
 *   G k spec1 .. specn                        a rules list: its counters are KEYS[k+1 .. k+n], its rule specs
 *                                             ("kind:a:b:ttl"); parsed once, named by its order (1, 2, ..)
 *   A g now lease leaseMs tokens rw rf       admit on rules list g, reserving tokens and rw/rf spend
 *                                             → "1 r1a r1b .." or "0 index retryAfterMs"
 *   S g now lease tokensDelta dw df          settle on rules list g (rpm rules are skipped) → nothing; tokens and
 *                                             spend count once per lease (a mark set by A), a slot is freed always
 *   P g now                                  read rules list g → "r1a r1b .."
 * The answer holds one string per A and P, in order. Rule values per kind: rpm/tpm {remaining, reset ms},
 * concurrency {remaining, 0}, budget {w, f} spent. Each admission is all-or-nothing on its own rules; the
 * operations run in the order the pod issued them.
 */
export const BATCH = `${COMMON}
local function admit(g, now, lease, leaseMs, tokens, rw, rf)
  local k, kinds, lims = g.k, g.kinds, g.lims
  local res = {1}
  local nexts = {}
  for i = 1, g.n do
    local key = KEYS[k + i]
    local kind = kinds[i]
    local a = lims[i]
    if kind == 'r' or kind == 't' then
      local t = W / a
      local cost = 1
      if kind == 't' then cost = math.max(1, math.min(tokens, a)) end
      local tat = tonumber(redis.call('GET', key) or now)
      if tat < now then tat = now end
      local nx = tat + cost * t
      local over = nx - now - W
      if over > EPS then return {0, i - 1, num(over)} end
      nexts[i] = nx
      res[2 * i] = num(math.floor((W - (nx - now) + EPS) / t))
      res[2 * i + 1] = num(nx - now)
    elseif kind == 'c' then
      redis.call('ZREMRANGEBYSCORE', key, '-inf', num(now))
      local used = redis.call('ZCARD', key)
      if used >= a then return {0, i - 1, '1000'} end
      res[2 * i] = num(a - used - 1)
      res[2 * i + 1] = '0'
    else
      local v = redis.call('HMGET', key, 'w', 'f')
      local w = tonumber(v[1] or '0')
      local f = tonumber(v[2] or '0')
      if w > a or (w == a and f >= g.bs[i]) then return {0, i - 1, '0'} end
      res[2 * i] = string.format('%d', w)
      res[2 * i + 1] = string.format('%d', f)
    end
  end
  -- The request's settlement mark: its settlement applies only while the mark exists, so one sent again after a
  -- lost answer (the connection dropped after Redis ran it) is not counted twice.
  if g.settles then redis.call('SET', KEYS[k + 1] .. '|s|' .. lease, '1', 'PX', leaseMs + MARK_GRACE) end
  for i = 1, g.n do
    local key = KEYS[k + i]
    local kind = kinds[i]
    if kind == 'r' or kind == 't' then
      redis.call('SET', key, num(nexts[i]), 'PX', math.ceil(nexts[i] - now) + 1000)
    elseif kind == 'c' then
      redis.call('ZADD', key, num(now + leaseMs), lease)
      redis.call('PEXPIRE', key, leaseMs)
    else
      addSpend(key, rw, rf, g.ttls[i])
    end
  end
  return res
end

local function settle(g, now, lease, dt, dw, df)
  local k, kinds = g.k, g.kinds
  -- Tokens and spend only once per admission (see the mark in admit); the slot is released whatever.
  if redis.call('DEL', KEYS[k + 1] .. '|s|' .. lease) == 0 then
    dt, dw, df = 0, 0, 0
  end
  for i = 1, g.n do
    local key = KEYS[k + i]
    local kind = kinds[i]
    if kind == 't' and dt ~= 0 then
      local tat = tonumber(redis.call('GET', key) or now)
      local nx = tat + dt * (W / g.lims[i])
      if nx > now then redis.call('SET', key, num(nx), 'PX', math.ceil(nx - now) + 1000) end
    elseif kind == 'c' then
      redis.call('ZREM', key, lease)
    elseif kind == 'b' then
      addSpend(key, dw, df, g.ttls[i])
    end
  end
end

local function peek(g, now)
  local k, kinds, lims = g.k, g.kinds, g.lims
  local res = {}
  for i = 1, g.n do
    local key = KEYS[k + i]
    local kind = kinds[i]
    local a = lims[i]
    if kind == 'r' or kind == 't' then
      local t = W / a
      local tat = tonumber(redis.call('GET', key) or now)
      if tat < now then tat = now end
      res[2 * i - 1] = num(math.max(0, math.floor((W - (tat - now) + EPS) / t)))
      res[2 * i] = num(tat - now)
    elseif kind == 'c' then
      res[2 * i - 1] = num(a - redis.call('ZCOUNT', key, '(' .. num(now), '+inf'))
      res[2 * i] = '0'
    else
      local v = redis.call('HMGET', key, 'w', 'f')
      res[2 * i - 1] = v[1] or '0'
      res[2 * i] = v[2] or '0'
    end
  end
  return res
end

local groups = {}
local out = {}
for at = 1, #ARGV do
  local s = ARGV[at]
  local op = string.sub(s, 1, 1)
  if op == 'A' then
    local g, now, lease, leaseMs, tokens, rw, rf = string.match(s, '^A (%d+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+)$')
    out[#out + 1] = table.concat(admit(groups[tonumber(g)], tonumber(now), lease, tonumber(leaseMs), tonumber(tokens), tonumber(rw), tonumber(rf)), ' ')
  elseif op == 'S' then
    local g, now, lease, dt, dw, df = string.match(s, '^S (%d+) (%S+) (%S+) (%S+) (%S+) (%S+)$')
    settle(groups[tonumber(g)], tonumber(now), lease, tonumber(dt), tonumber(dw), tonumber(df))
  elseif op == 'G' then
    local k, specs = string.match(s, '^G (%d+) (.*)$')
    local g = {k = tonumber(k), n = 0, kinds = {}, lims = {}, bs = {}, ttls = {}, settles = false}
    for kind, a, b, ttl in string.gmatch(specs, '(%a):([^: ]+):([^: ]+):([^: ]+)') do
      local n = g.n + 1
      if kind ~= 'r' then g.settles = true end
      g.kinds[n] = kind
      g.lims[n] = tonumber(a)
      g.bs[n] = tonumber(b)
      g.ttls[n] = tonumber(ttl)
      g.n = n
    end
    groups[#groups + 1] = g
  else
    local g, now = string.match(s, '^P (%d+) (%S+)$')
    out[#out + 1] = table.concat(peek(groups[tonumber(g)], tonumber(now)), ' ')
  end
end
return out
`;

/** Raises a spend counter to at least (w, f): the ledger is the floor of what was spent. */
export const RAISE = `${COMMON}
local v = redis.call('HMGET', KEYS[1], 'w', 'f')
local w = tonumber(v[1] or '0')
local f = tonumber(v[2] or '0')
local lw = tonumber(ARGV[1])
local lf = tonumber(ARGV[2])
if w < lw or (w == lw and f < lf) then
  redis.call('HSET', KEYS[1], 'w', ARGV[1], 'f', ARGV[2])
  local ttl = tonumber(ARGV[3])
  if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
  return 1
end
return 0
`;

/** Adds spend accrued while Redis was unreachable. ARGV: w, f, ttl. */
export const ADD_SPEND = `${COMMON}
addSpend(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
return 1
`;
