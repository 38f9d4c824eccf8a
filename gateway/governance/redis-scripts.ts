// Lua run atomically inside Redis/Valkey. Every request's rules go in one script call: all admit or none changes.
// Floats (GCRA arrival times) travel as %.17g strings, which round-trip a double; spend is two integers per counter,
// whole points `w` and femtopoints `f` (0 <= f < 10^15), both exact in Lua's doubles.
// Per rule the ARGV carry four values from index 6: kind (r rpm, t tpm, c concurrency, b budget), a, b, ttl ms.

const COMMON = `
local W = 60000
local EPS = 1e-6
local ONE = 1e15
local function num(x) return string.format('%.17g', x) end
local function addSpend(key, dw, df, ttl)
  if dw == 0 and df == 0 then return end
  redis.call('HINCRBY', key, 'w', string.format('%d', dw))
  local f = redis.call('HINCRBY', key, 'f', string.format('%d', df))
  if f >= ONE or f < 0 then
    local c = math.floor(f / ONE)
    redis.call('HINCRBY', key, 'f', string.format('%d', -c * ONE))
    redis.call('HINCRBY', key, 'w', string.format('%d', c))
  end
  if ttl > 0 then redis.call('PEXPIRE', key, ttl) end
end
`;

/** Returns {1, r1a, r1b, r2a, r2b, ...} on admission, {0, index, retryAfterMs} on refusal. */
export const ADMIT = `${COMMON}
local now = tonumber(ARGV[1])
local lease = ARGV[2]
local leaseMs = tonumber(ARGV[3])
local tokens = tonumber(ARGV[4])
local n = #KEYS
local res = {1}
local nexts = {}
for i = 1, n do
  local at = 6 + 4 * (i - 1)
  local kind = ARGV[at]
  local a = tonumber(ARGV[at + 1])
  if kind == 'r' or kind == 't' then
    local t = W / a
    local cost = 1
    if kind == 't' then cost = math.max(1, math.min(tokens, a)) end
    local tat = tonumber(redis.call('GET', KEYS[i]) or now)
    if tat < now then tat = now end
    local nx = tat + cost * t
    local over = nx - now - W
    if over > EPS then return {0, i - 1, num(over)} end
    nexts[i] = nx
    res[2 * i] = num(math.floor((W - (nx - now) + EPS) / t))
    res[2 * i + 1] = num(nx - now)
  elseif kind == 'c' then
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', num(now))
    local used = redis.call('ZCARD', KEYS[i])
    if used >= a then return {0, i - 1, '1000'} end
    res[2 * i] = num(a - used - 1)
    res[2 * i + 1] = '0'
  else
    local v = redis.call('HMGET', KEYS[i], 'w', 'f')
    local w = tonumber(v[1] or '0')
    local f = tonumber(v[2] or '0')
    local lf = tonumber(ARGV[at + 2])
    if w > a or (w == a and f >= lf) then return {0, i - 1, '0'} end
    res[2 * i] = string.format('%d', w)
    res[2 * i + 1] = string.format('%d', f)
  end
end
local rw = tonumber(ARGV[5])
local rf = tonumber(ARGV[6 + 4 * n])
for i = 1, n do
  local at = 6 + 4 * (i - 1)
  local kind = ARGV[at]
  if kind == 'r' or kind == 't' then
    redis.call('SET', KEYS[i], num(nexts[i]), 'PX', math.ceil(nexts[i] - now) + 1000)
  elseif kind == 'c' then
    redis.call('ZADD', KEYS[i], num(now + leaseMs), lease)
    redis.call('PEXPIRE', KEYS[i], leaseMs)
  else
    addSpend(KEYS[i], rw, rf, tonumber(ARGV[at + 3]))
  end
end
return res
`;

/** Settles one request: tokens delta on tpm rules, the lease off concurrency rules, the spend delta on budgets. */
export const SETTLE = `${COMMON}
local now = tonumber(ARGV[1])
local lease = ARGV[2]
local dt = tonumber(ARGV[3])
local dw = tonumber(ARGV[4])
local df = tonumber(ARGV[5])
for i = 1, #KEYS do
  local at = 6 + 4 * (i - 1)
  local kind = ARGV[at]
  local a = tonumber(ARGV[at + 1])
  if kind == 't' and dt ~= 0 then
    local t = W / a
    local tat = tonumber(redis.call('GET', KEYS[i]) or now)
    local nx = tat + dt * t
    if nx > now then redis.call('SET', KEYS[i], num(nx), 'PX', math.ceil(nx - now) + 1000) end
  elseif kind == 'c' then
    redis.call('ZREM', KEYS[i], lease)
  elseif kind == 'b' then
    addSpend(KEYS[i], dw, df, tonumber(ARGV[at + 3]))
  end
end
return 1
`;

/** Reads without changing: per rule {remaining, reset} or, for budgets, {w, f}. */
export const PEEK = `${COMMON}
local now = tonumber(ARGV[1])
local res = {}
for i = 1, #KEYS do
  local at = 6 + 4 * (i - 1)
  local kind = ARGV[at]
  local a = tonumber(ARGV[at + 1])
  if kind == 'r' or kind == 't' then
    local t = W / a
    local tat = tonumber(redis.call('GET', KEYS[i]) or now)
    if tat < now then tat = now end
    res[2 * i - 1] = num(math.max(0, math.floor((W - (tat - now) + EPS) / t)))
    res[2 * i] = num(tat - now)
  elseif kind == 'c' then
    res[2 * i - 1] = num(a - redis.call('ZCOUNT', KEYS[i], '(' .. num(now), '+inf'))
    res[2 * i] = '0'
  else
    local v = redis.call('HMGET', KEYS[i], 'w', 'f')
    res[2 * i - 1] = v[1] or '0'
    res[2 * i] = v[2] or '0'
  end
end
return res
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
