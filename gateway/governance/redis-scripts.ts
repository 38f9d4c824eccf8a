// Lua run atomically inside Redis/Valkey. A request's rules are admitted together: all admit or none changes.
// Floats (GCRA arrival times) travel as %.17g strings, which round-trip a double; spend is two integers per counter,
// whole points `w` and femtopoints `f` (0 <= f < 10^15), both exact in Lua's doubles. Integral values (clock
// readings, counts, whole ms) go as '%d' text: Redis' CPU per request is mostly this script, and '%d' costs less than
// half of '%.17g'.
// A rules list travels once per call as its kinds, one letter per rule (r rpm, t tpm, c concurrency, b budget),
// then one number per rate rule (its limit) and three per budget (whole points, femtopoints, counter ttl ms).
const COMMON = `
local W = 60000
local EPS = 1e-6
-- A settlement mark outlives the lease by this much: a settlement sent again after an outage up to then still counts.
local MARK_GRACE = 600000
local ONE = 1e15
local fmt = string.format
local function num(x) return fmt('%.17g', x) end
-- A clock reading or a whole number of ms: integral in practice (Date.now()), '%d' then.
local function int(x)
  if x % 1 == 0 then return fmt('%d', x) end
  return fmt('%.17g', x)
end
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
 *   G k kinds n1 n2 ..                       a rules list: its counters are KEYS[k+1 .. k+n], `kinds` one letter
 *                                             per rule, then each rule's numbers (see the top of this file); parsed
 *                                             once per call, named by its order (1, 2, ..)
 *   A g now lease leaseMs tokens rw rf       admit on rules list g, reserving tokens and rw/rf spend
 *                                             → "1 ri rleft rreset ti tleft treset w1 f1 .." (the tightest rpm and
 *                                             tpm rule, -1 if none; each budget's spent) or "0 index retryAfterMs"
 *   S g now lease tokensDelta dw df          settle on rules list g (rpm rules are skipped) → nothing; tokens and
 *                                             spend count once per lease (a mark set by A), a slot is freed always
 *   P g now                                  read rules list g → "r1a r1b .." per rule: rpm/tpm {remaining, reset
 *                                             ms}, concurrency {remaining, 0}, budget {w, f} spent
 * The answer holds one string per A and P, in order. Each admission is all-or-nothing on its own rules; the
 * operations run in the order the pod issued them.
 */
export const BATCH = `${COMMON}
-- Library functions as locals: the script looks each up per use otherwise, some 40 times per admission.
local call, floor, ceil, max, min, tonum = redis.call, math.floor, math.ceil, math.max, math.min, tonumber
local sub, match, gmatch = string.sub, string.match, string.gmatch
-- Every counter the call touches is read from Redis once and written back once, at the end: a turn's requests share
-- their key's, project's and organization's counters, so a call of n requests costs Redis a few commands per counter
-- plus a few per request, not some 40 per request. Redis runs a script atomically with its clock stopped, so what the
-- cache holds is exactly what Redis would hold. Concurrency members (one per lease) and settlement marks are written
-- at once: their commands' answers are counted in the cache.
local rates = {}
local slots = {}
local spends = {}
-- A rate counter: v, its theoretical arrival time (nil before its first request); px, the expiry of its last write.
local function rate(key)
  local c = rates[key]
  if c == nil then
    local v = call('GET', key)
    c = {v = v and tonum(v) or nil, px = 0, dirty = false}
    rates[key] = c
  end
  return c
end
-- A concurrency set: used, its live members, cleared of leases expired up to at; ttl, set by an admission.
local function slot(key, now)
  local c = slots[key]
  if c == nil then
    call('ZREMRANGEBYSCORE', key, '-inf', int(now))
    c = {used = call('ZCARD', key), at = now, ttl = nil}
    slots[key] = c
  elseif now > c.at then
    c.used = c.used - call('ZREMRANGEBYSCORE', key, '-inf', int(now))
    c.at = now
  end
  return c
end
-- A spend counter: whole points w and femtopoints f; ttl > 0 once a change asks for an expiry. A counter's expiry is
-- set when it is made (its name holds its period, so it only has to outlive that): one that exists keeps its own.
local function spend(key)
  local c = spends[key]
  if c == nil then
    local v = call('HMGET', key, 'w', 'f')
    c = {w = tonum(v[1] or '0'), f = tonum(v[2] or '0'), ttl = 0, dirty = false, existed = (v[1] or v[2]) ~= false}
    spends[key] = c
  end
  return c
end
local function addCached(c, dw, df, ttl)
  if dw == 0 and df == 0 then return end
  c.w = c.w + dw
  c.f = c.f + df
  if c.f >= ONE or c.f < 0 then
    local k = floor(c.f / ONE)
    c.f = c.f - k * ONE
    c.w = c.w + k
  end
  c.dirty = true
  if ttl > 0 then c.ttl = ttl end
end

-- Scratch for one admission (each fully written before it is read): no tables per request.
local cells, nexts, vals = {}, {}, {}
-- A rules list's rate counters not yet in the cache, read in one MGET with its first admission of the call.
local function prefetch(g)
  g.fetched = true
  local want = {}
  for i = 1, g.n do
    local kind = g.kinds[i]
    if (kind == 'r' or kind == 't') and rates[KEYS[g.k + i]] == nil then want[#want + 1] = KEYS[g.k + i] end
  end
  if #want == 0 then return end
  local vs = call('MGET', unpack(want))
  for j = 1, #want do
    local v = vs[j]
    rates[want[j]] = {v = v and tonum(v) or nil, px = 0, dirty = false}
  end
end

-- The answer: "1", then the rpm rule with the least left (0-based index, -1 if none), what it has left and its
-- reset in whole ms (rounded up), the same for tpm, then each budget's spent w f in order: what the pod reads (its
-- rate-limit headers name the tightest rule of each kind; budgets feed soft thresholds and the local view).
local function admit(g, now, lease, leaseMs, tokens, rw, rf)
  local k, kinds, lims = g.k, g.kinds, g.lims
  if not g.fetched then prefetch(g) end
  local ri, rrem, rreset, ti, trem, treset = -1, 0, 0, -1, 0, 0
  local nv = 6
  for i = 1, g.n do
    local key = KEYS[k + i]
    local kind = kinds[i]
    local a = lims[i]
    if kind == 'r' or kind == 't' then
      local t = W / a
      local cost = 1
      if kind == 't' then cost = max(1, min(tokens, a)) end
      local c = rate(key)
      local tat = c.v or now
      if tat < now then tat = now end
      local nx = tat + cost * t
      local over = nx - now - W
      if over > EPS then return fmt('0 %d %s', i - 1, num(over)) end
      cells[i] = c
      nexts[i] = nx
      local left = floor((W - (nx - now) + EPS) / t)
      if kind == 'r' then
        if ri < 0 or left < rrem then ri, rrem, rreset = i - 1, left, ceil(nx - now) end
      elseif ti < 0 or left < trem then ti, trem, treset = i - 1, left, ceil(nx - now) end
    elseif kind == 'c' then
      local c = slot(key, now)
      if c.used >= a then return fmt('0 %d 1000', i - 1) end
      cells[i] = c
    else
      local c = spend(key)
      if c.w > a or (c.w == a and c.f >= g.bs[i]) then return fmt('0 %d 0', i - 1) end
      cells[i] = c
      vals[nv + 1] = c.w
      vals[nv + 2] = c.f
      nv = nv + 2
    end
  end
  -- The request's settlement mark: its settlement applies only while the mark exists, so one sent again after a
  -- lost answer (the connection dropped after Redis ran it) is not counted twice. Only tokens and spend need it: a
  -- slot is freed by removing its lease, which counts once by itself.
  if g.marks then call('SET', KEYS[k + 1] .. '|s|' .. lease, '1', 'PX', leaseMs + MARK_GRACE) end
  local ends = now + leaseMs
  local score
  for i = 1, g.n do
    local kind = kinds[i]
    local c = cells[i]
    if kind == 'r' or kind == 't' then
      c.v = nexts[i]
      c.px = ceil(nexts[i] - now) + 1000
      c.dirty = true
    elseif kind == 'c' then
      score = score or int(ends)
      c.used = c.used + call('ZADD', KEYS[k + i], score, lease)
      c.ttl = leaseMs
      -- A lease ending at or before the time the set was cleared up to (this admission's clock behind an earlier
      -- one's in the same call): the next admission at or past its end must clear it, as per-op commands would.
      if ends <= c.at then c.at = ends - 1 end
    else
      addCached(c, rw, rf, g.ttls[i])
    end
  end
  vals[1], vals[2], vals[3], vals[4], vals[5], vals[6] = ri, rrem, rreset, ti, trem, treset
  return fmt(g.fmt, unpack(vals, 1, nv))
end

local function settle(g, now, lease, dt, dw, df)
  local k, kinds = g.k, g.kinds
  -- Tokens and spend only once per admission (see the mark in admit); the slot is released whatever.
  if g.marks and call('DEL', KEYS[k + 1] .. '|s|' .. lease) == 0 then
    dt, dw, df = 0, 0, 0
  end
  for i = 1, g.n do
    local key = KEYS[k + i]
    local kind = kinds[i]
    if kind == 't' and dt ~= 0 then
      local c = rate(key)
      local nx = (c.v or now) + dt * (W / g.lims[i])
      if nx > now then
        c.v = nx
        c.px = ceil(nx - now) + 1000
        c.dirty = true
      end
    elseif kind == 'c' then
      local removed = call('ZREM', key, lease)
      local c = slots[key]
      if c ~= nil then c.used = c.used - removed end
    elseif kind == 'b' and (dw ~= 0 or df ~= 0) then
      addCached(spend(key), dw, df, g.ttls[i])
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
      local tat = rate(key).v or now
      if tat < now then tat = now end
      res[2 * i - 1] = num(max(0, floor((W - (tat - now) + EPS) / t)))
      res[2 * i] = num(tat - now)
    elseif kind == 'c' then
      res[2 * i - 1] = num(a - call('ZCOUNT', key, '(' .. num(now), '+inf'))
      res[2 * i] = '0'
    else
      local c = spend(key)
      res[2 * i - 1] = fmt('%d', c.w)
      res[2 * i] = fmt('%d', c.f)
    end
  end
  return res
end

local groups = {}
local out = {}
for at = 1, #ARGV do
  local s = ARGV[at]
  local op = sub(s, 1, 1)
  if op == 'A' then
    local g, now, lease, leaseMs, tokens, rw, rf = match(s, '^A (%d+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+)$')
    out[#out + 1] = admit(groups[tonum(g)], tonum(now), lease, tonum(leaseMs), tonum(tokens), tonum(rw), tonum(rf))
  elseif op == 'S' then
    local g, now, lease, dt, dw, df = match(s, '^S (%d+) (%S+) (%S+) (%S+) (%S+) (%S+)$')
    settle(groups[tonum(g)], tonum(now), lease, tonum(dt), tonum(dw), tonum(df))
  elseif op == 'G' then
    local it = gmatch(s, '%S+')
    it()
    local g = {k = tonum(it()), kinds = {}, lims = {}, bs = {}, ttls = {}, marks = false, fetched = false}
    local ks = it()
    local n = #ks
    local f = '1 %d %d %d %d %d %d'
    for i = 1, n do
      local kind = sub(ks, i, i)
      if kind == 't' or kind == 'b' then g.marks = true end
      g.kinds[i] = kind
      g.lims[i] = tonum(it())
      if kind == 'b' then
        g.bs[i] = tonum(it())
        g.ttls[i] = tonum(it())
        f = f .. ' %d %d'
      end
    end
    g.n = n
    g.fmt = f
    groups[#groups + 1] = g
  else
    local g, now = match(s, '^P (%d+) (%S+)$')
    out[#out + 1] = table.concat(peek(groups[tonum(g)], tonum(now)), ' ')
  end
end
-- The write-back: each changed counter once, as the last operation that changed it left it.
for key, c in pairs(rates) do
  if c.dirty then call('SET', key, num(c.v), 'PX', c.px) end
end
for key, c in pairs(slots) do
  if c.ttl ~= nil then call('PEXPIRE', key, c.ttl) end
end
for key, c in pairs(spends) do
  if c.dirty then
    call('HSET', key, 'w', fmt('%d', c.w), 'f', fmt('%d', c.f))
    if c.ttl > 0 and not c.existed then call('PEXPIRE', key, c.ttl) end
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

/**
 * Pod presence, for the share each pod takes of a limit while Redis is unreachable. KEYS[1] is a sorted set of pod
 * ids scored by when each last said it is alive (Redis' clock, so pods' clocks do not matter); ARGV: pod, ttl ms.
 * Adds or refreshes the pod, forgets pods silent past the ttl, and answers how many remain (this one included).
 */
export const PODS = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - ttl)
redis.call('PEXPIRE', KEYS[1], ttl * 2)
return redis.call('ZCARD', KEYS[1])
`;
