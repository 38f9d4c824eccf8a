// Lua run atomically inside Redis/Valkey. A request's rules are admitted together: all admit or none changes.
// Floats (GCRA arrival times) travel as %.17g strings, which round-trip a double; spend is two integers per counter,
// whole points `w` and femtopoints `f` (0 <= f < 10^15), both exact in Lua's doubles. Integral values (clock
// readings, counts, whole ms) go as '%d' text: Redis' CPU per request is mostly this script, and '%d' costs less than
// half of '%.17g'.
// A rules list travels once per call as its kinds, one letter per rule (r rpm, t tpm, c concurrency, b budget),
// then one number per rate rule (its limit) and three per budget (whole points, femtopoints, counter ttl ms).
/**
 * Reaps incarnation `m` of the sorted set `alive`: its share comes off every concurrency count it is in, and it is
 * forgotten. Shared by the heartbeat (PODS, silent incarnations) and a registration (BATCH, the pod's retired ones).
 */
const REAP = `local function reap(alive, m)
  local set = alive .. '|' .. m
  for _, key in ipairs(redis.call('SMEMBERS', set)) do
    local v = redis.call('HGET', key, m)
    if v then
      -- As text: Lua would send minus zero as "-0", which HINCRBY refuses.
      if v ~= '0' then redis.call('HINCRBY', key, 't', string.format('%d', -tonumber(v))) end
      redis.call('HDEL', key, m)
    end
  end
  redis.call('DEL', set)
  redis.call('ZREM', alive, m)
end`;

const COMMON = `
local W = 60000
local EPS = 1e-6
-- How long a pod incarnation's last call number is kept: a settlement sent again after an outage up to then counts
-- once (see T in BATCH).
local DONE_MS = 600000
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
 * fields separated by spaces; a rules list's admissions go in one entry and its settlements in another, so a request
 * adds three numbers and no key, and Redis does per-rule work once per rules list, not once per request:
 *   I alive member reg seq [key n ..]        the pod's incarnation (see "Concurrency" below) and this call's number,
 *                                             before any settlement and any operation on a rules list with a
 *                                             concurrency rule → "1" counted, "0" reaped
 *   G k kinds n1 n2 ..                       a rules list: its counters are KEYS[k+1 .. k+n], `kinds` one letter
 *                                             per rule, then each rule's numbers (see the top of this file); parsed
 *                                             once per call, named by its order (1, 2, ..)
 *   A g now [tokens rw rf]..                 admit the call's requests on rules list g, in order, each reserving its
 *                                             tokens and rw/rf spend → when all fit (see admitGroup): "+", then each
 *                                             rate rule's arrival time and each budget's spent before the first, from
 *                                             which the pod derives every request's view; else each request's answer,
 *                                             joined by ",": the same for an admitted one, "0 index retryAfterMs"
 *                                             and each rate rule's arrival time for a refused one
 *   S g now tokensDelta dw df frees          the settlements of the call on rules list g, summed (rpm rules are
 *                                             skipped) → nothing; `frees` of them free their slots (the pod counts
 *                                             only slots counted in Redis under its current incarnation, once)
 *   T g now tokensDelta dw df done seq       a settlement sent again, its call having failed: counts only if that
 *                                             call (number seq of the incarnation whose last call number is kept at
 *                                             `done`) never ran, and then keeps seq there → nothing
 *   P g now                                  read rules list g → "r1a r1b .." per rule: rpm/tpm {remaining, reset
 *                                             ms}, concurrency {remaining, 0}, budget {w, f} spent
 * The answer holds one string per I, A and P, in order. A call with settlements keeps its number (SET done, for
 * DONE_MS): Redis runs an incarnation's calls in the order sent, so a failed call ran if and only if the number kept
 * is at least its own, and its settlements, sent again, count once. Each admission is all-or-nothing on its own rules.
 * The pod sends a call's settlements before its admissions (settled requests were admitted in earlier calls).
 *
 * Concurrency: a hash per rule holds `t`, the requests in flight, and one field per pod incarnation (`member`), its
 * share of `t`. A pod incarnation is alive while its member is in the sorted set `alive` (scored by Redis' clock,
 * refreshed by the pod's heartbeat, PODS); a member silent past the ttl is reaped there: its share is taken off every
 * `t` it is in (the set `alive|member` names them). So a dead pod's slots come back within the ttl, and a request's
 * slots cost its call no command of their own: the hash is read once and written once per call. A pod starts a new
 * incarnation whenever a call of its fails or it learns it was reaped; the first call of one registers it (`reg` 1)
 * and adopts the slots the pod still holds (`key n` pairs), counted under it from then on. A member that is neither
 * alive nor registering was reaped: its call counts no slot ("0"), and the pod adopts what it holds anew.
 */
export const BATCH = `${COMMON}
-- Library functions as locals: the script looks each up per use otherwise, some 40 times per admission.
local call, floor, ceil, max, min, tonum = redis.call, math.floor, math.ceil, math.max, math.min, tonumber
local sub, match, gmatch = string.sub, string.match, string.gmatch
-- Every counter the call touches is read from Redis once and written back once, at the end: a turn's requests share
-- their key's, project's and organization's counters, so a call of n requests costs Redis a few commands per counter
-- plus a few per request, not some 40 per request. Redis runs a script atomically with its clock stopped, so what the
-- cache holds is exactly what Redis would hold.
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
-- A concurrency hash: t, the requests in flight; mine, this incarnation's share of them; had, whether it had a field
-- (then the hash is already named in its alive|member set).
local me, live, touched = nil, false, nil
local function slot(key)
  local c = slots[key]
  if c == nil then
    local v = call('HMGET', key, 't', me)
    c = {t = tonum(v[1] or '0'), mine = tonum(v[2] or '0'), had = v[2] ~= false, dirty = false}
    slots[key] = c
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

-- Scratch (each entry written before it is read): no tables per request or per group.
local toks, rws, rfs, nexts, vals = {}, {}, {}, {}, {}
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

-- Rule i's counter in the call's cache (every rule's is found once per call).
local function cell(g, i)
  local c = g.cs[i]
  if c == nil then
    local kind, key = g.kinds[i], KEYS[g.k + i]
    if kind == 'r' or kind == 't' then c = rate(key) elseif kind == 'c' then c = slot(key) else c = spend(key) end
    g.cs[i] = c
  end
  return c
end

-- What an admitted request (or group) starts from, as the pod reads it: "+", then each rate rule's theoretical
-- arrival time (never before now) and each budget's spent w f, in rule order. The pod derives each request's
-- rate-limit headers and budget view from it (what is left after it, when the bucket is full again), so Redis does
-- that arithmetic for no request.
local function state(g, now)
  local kinds, cs = g.kinds, g.cs
  local nv = 0
  for i = 1, g.n do
    local kind = kinds[i]
    local c = cs[i]
    if kind == 'r' or kind == 't' then
      local tat = c.v or now
      if tat < now then tat = now end
      nv = nv + 1
      vals[nv] = int(tat)
    elseif kind == 'b' then
      vals[nv + 1] = c.w
      vals[nv + 2] = c.f
      nv = nv + 2
    end
  end
  return fmt(g.fmt, unpack(vals, 1, nv))
end

-- Takes n admitted requests on every rule of g, once all were checked: each rate rule's new arrival time (nexts),
-- n slots, and the reservations rw rf on each budget.
local function take(g, now, n, rw, rf)
  local kinds, cs = g.kinds, g.cs
  for i = 1, g.n do
    local kind = kinds[i]
    local c = cs[i]
    if kind == 'r' or kind == 't' then
      c.v = nexts[i]
      c.px = ceil(c.v - now) + 1000
      c.dirty = true
    elseif kind == 'c' then
      -- A reaped incarnation counts nothing: the pod adopts the slots with the others it holds (see I).
      if live then
        c.t = c.t + n
        c.mine = c.mine + n
        c.dirty = true
      end
    else
      addCached(c, rw, rf, g.ttls[i])
    end
  end
end

-- A refused request's answer: "0 index retryAfterMs", then each rate rule's arrival time as it stands (never before
-- now), from which the pod derives what is left of every rate rule for the refusal's rate-limit headers.
local function refusal(g, now, i, retry)
  local kinds = g.kinds
  local s = fmt('0 %d %s', i - 1, retry)
  for j = 1, g.n do
    local kind = kinds[j]
    if kind == 'r' or kind == 't' then
      local tat = cell(g, j).v or now
      if tat < now then tat = now end
      s = s .. ' ' .. int(tat)
    end
  end
  return s
end

-- One request of a group that did not fit whole, in order: all its rules admit it, or it changes nothing.
-- → its state (see above) or its refusal.
local function admit(g, now, tokens, rw, rf)
  local kinds, lims, ts = g.kinds, g.lims, g.ts
  for i = 1, g.n do
    local kind = kinds[i]
    local a = lims[i]
    local c = cell(g, i)
    if kind == 'r' or kind == 't' then
      local cost = 1
      if kind == 't' then cost = max(1, min(tokens, a)) end
      local tat = c.v or now
      if tat < now then tat = now end
      local nx = tat + cost * ts[i]
      local over = nx - now - W
      if over > EPS then return refusal(g, now, i, num(over)) end
      nexts[i] = nx
    elseif kind == 'c' then
      if c.t >= a then return refusal(g, now, i, '1000') end
    elseif c.w > a or (c.w == a and c.f >= g.bs[i]) then
      return refusal(g, now, i, '0')
    end
  end
  local st = state(g, now)
  take(g, now, 1, rw, rf)
  return st
end

-- A call's admissions on one rules list, n of them: when all fit on every rule (the usual case, far from a limit)
-- they are taken in one pass, one check and one update per rule, with the same arithmetic as one after the other;
-- else one by one. Admitting in order, each rule admits all n if and only if it admits the last one, since every
-- request only adds: a rate rule then holds the n costs, a concurrency rule n more slots, and a budget is not yet
-- spent before the last request's reservation (sw sf: the reservations of the first n - 1).
-- → one state for the group, or the n requests' answers joined by ",".
local function admitGroup(g, now, n, sw, sf, rw, rf)
  local kinds, lims, ts = g.kinds, g.lims, g.ts
  if not g.fetched then prefetch(g) end
  local whole = true
  for i = 1, g.n do
    local kind = kinds[i]
    local a = lims[i]
    local c = cell(g, i)
    if kind == 'r' or kind == 't' then
      local t = ts[i]
      local nx = c.v or now
      if nx < now then nx = now end
      -- Added one request at a time, as admit does: the same double, to the last bit.
      if kind == 'r' then
        for _ = 1, n do nx = nx + t end
      else
        -- max(1, min(tokens, limit)) inline: two C calls per request and rule cost more than the rest of the loop.
        for j = 1, n do
          local k = toks[j]
          if k > a then k = a end
          if k < 1 then k = 1 end
          nx = nx + k * t
        end
      end
      if nx - now - W > EPS then whole = false break end
      nexts[i] = nx
    elseif kind == 'c' then
      -- A reaped incarnation's admissions take no slot: each is checked against the same count.
      if c.t + (live and n or 1) > a then whole = false break end
    else
      local w, f = c.w + sw, c.f + sf
      if f >= ONE then w, f = w + 1, f - ONE end
      if w > a or (w == a and f >= g.bs[i]) then whole = false break end
    end
  end
  if not whole then
    local each = {}
    for j = 1, n do each[j] = admit(g, now, toks[j], rws[j], rfs[j]) end
    return table.concat(each, ',')
  end
  local st = state(g, now)
  take(g, now, n, rw, rf)
  return st
end

-- Settlements on one rules list, summed by the pod (rpm rules are skipped): 'frees' of them free their slots.
local function settle(g, now, dt, dw, df, frees)
  local kinds = g.kinds
  if not g.fetched then prefetch(g) end
  for i = 1, g.n do
    local kind = kinds[i]
    if kind == 't' and dt ~= 0 then
      local c = cell(g, i)
      -- From the bucket as it stands (never before now), and never back before now: tokens given back are no credit.
      local nx = (c.v or now)
      if nx < now then nx = now end
      nx = nx + dt * g.ts[i]
      if nx < now then nx = now end
      c.v = nx
      c.px = ceil(nx - now) + 1000
      c.dirty = true
    elseif kind == 'c' then
      if frees > 0 and live then
        local c = cell(g, i)
        -- Never below nothing: t stays the sum of the live incarnations' shares.
        local f = min(frees, c.mine)
        if f > 0 then
          c.t = c.t - f
          c.mine = c.mine - f
          c.dirty = true
        end
      end
    elseif kind == 'b' and (dw ~= 0 or df ~= 0) then
      addCached(cell(g, i), dw, df, g.ttls[i])
    end
  end
end

-- The pod's incarnation for this call: counted if alive, or registering (then it adopts the slots it holds).
local seq, settled = nil, false
local function incarnation(s)
  local it = gmatch(s, '%S+')
  it()
  local alive = it()
  me = it()
  touched = alive .. '|' .. me
  local reg = it()
  seq = it()
  if call('ZSCORE', alive, me) then
    live = true
  elseif reg == '1' then
    -- This pod's retired incarnations are reaped now, not a ttl later: what they counted and the pod still holds is
    -- adopted below, so it would count twice meanwhile. Nothing of theirs can come after this: Redis runs one
    -- connection's calls in order, and a closed connection's calls ran before it closed or not at all. First, before
    -- any count is read into the call's cache.
    local pod = match(me, '^(.*)%.%d+$')
    ${REAP}
    for _, m in ipairs(call('ZRANGE', alive, 0, -1)) do
      if m ~= me and sub(m, 1, #pod + 1) == pod .. '.' then reap(alive, m) end
    end
    local t = call('TIME')
    call('ZADD', alive, fmt('%d', tonum(t[1]) * 1000 + floor(tonum(t[2]) / 1000)), me)
    live = true
    for key in it do
      local c = slot(key)
      local n = tonum(it())
      c.t = c.t + n
      c.mine = c.mine + n
      c.dirty = true
    end
  else
    live = false
  end
  return live and '1' or '0'
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
      local c = slots[key]
      res[2 * i - 1] = num(a - (c and c.t or tonum(call('HGET', key, 't') or '0')))
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
-- T operations: whether each failed call's settlements count here, and the call numbers to keep once they did.
local replayed, marks = {}, {}
for at = 1, #ARGV do
  local s = ARGV[at]
  local op = sub(s, 1, 1)
  if op == 'A' then
    local g, now, rest = match(s, '^A (%d+) (%S+) (.+)$')
    -- Each request's tokens and reservation, and the reservations' sums (exact: femtopoints carried each time).
    local n, rw, rf, sw, sf = 0, 0, 0, 0, 0
    for t, w, f in gmatch(rest, '(%S+) (%S+) (%S+)') do
      n = n + 1
      w, f = tonum(w), tonum(f)
      toks[n], rws[n], rfs[n] = tonum(t), w, f
      sw, sf = rw, rf
      rw, rf = rw + w, rf + f
      if rf >= ONE then rw, rf = rw + 1, rf - ONE end
    end
    out[#out + 1] = admitGroup(groups[tonum(g)], tonum(now), n, sw, sf, rw, rf)
  elseif op == 'S' then
    local g, now, dt, dw, df, frees = match(s, '^S (%d+) (%S+) (%S+) (%S+) (%S+) (%d+)$')
    settle(groups[tonum(g)], tonum(now), tonum(dt), tonum(dw), tonum(df), tonum(frees))
    settled = true
  elseif op == 'T' then
    local g, now, dt, dw, df, done, n = match(s, '^T (%d+) (%S+) (%S+) (%S+) (%S+) (%S+) (%d+)$')
    -- Decided once per failed call (its rules lists come as several T operations), from the state before this call.
    local key = done .. ' ' .. n
    local run = replayed[key]
    if run == nil then
      local last = call('GET', done)
      run = not last or tonum(last) < tonum(n)
      replayed[key] = run
      if run then
        marks[#marks + 1] = done
        marks[#marks + 1] = n
      end
    end
    if run then settle(groups[tonum(g)], tonum(now), tonum(dt), tonum(dw), tonum(df), 0) end
  elseif op == 'I' then
    out[#out + 1] = incarnation(s)
  elseif op == 'G' then
    local it = gmatch(s, '%S+')
    it()
    -- cs: each rule's counter in the call's cache, found on first use; ts: a rate rule's ms per unit.
    local g = {k = tonum(it()), kinds = {}, lims = {}, bs = {}, ttls = {}, cs = {}, ts = {}, fetched = false}
    local ks = it()
    local n = #ks
    local f = '+'
    for i = 1, n do
      local kind = sub(ks, i, i)
      g.kinds[i] = kind
      local lim = tonum(it())
      g.lims[i] = lim
      if kind == 'r' or kind == 't' then
        g.ts[i] = W / lim
        f = f .. ' %s'
      end
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
  if c.dirty then
    call('HSET', key, 't', fmt('%d', c.t), me, fmt('%d', c.mine))
    if not c.had then call('SADD', touched, key) end
  end
end
for key, c in pairs(spends) do
  if c.dirty then
    call('HSET', key, 'w', fmt('%d', c.w), 'f', fmt('%d', c.f))
    if c.ttl > 0 and not c.existed then call('PEXPIRE', key, c.ttl) end
  end
end
-- This call ran: its settlements, if sent again, count no more (see T). Last, after the counters: a script that
-- fails part-way leaves what it wrote, and its settlements are then sent again, counted twice rather than lost.
if settled then call('SET', touched .. '|d', seq, 'PX', DONE_MS) end
-- Replayed settlements counted: their failed calls' numbers are kept as if those calls had run, so the same replay sent
-- again (this call's answer lost) counts once. An incarnation's failed calls replay in order, so the number only grows.
for j = 1, #marks, 2 do
  local last = call('GET', marks[j])
  if not last or tonum(last) < tonum(marks[j + 1]) then call('SET', marks[j], marks[j + 1], 'PX', DONE_MS) end
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
 * Pod presence. KEYS[1] (`pods`) is a sorted set of pod ids scored by when each last said it is alive (Redis' clock, so
 * pods' clocks do not matter), for the share each pod takes of a limit while Redis is unreachable; KEYS[2] (`alive`)
 * holds pod incarnations the same way, for concurrency slots (see BATCH). ARGV: pod, ttl ms, member (the pod's
 * current incarnation, '' before its first call), leaving ('1' on a clean shutdown).
 * Refreshes the pod and its member (a member no longer there is not added back: it was reaped, and the pod starts a
 * new incarnation), reaps members silent past the ttl (a few per call: every pod's heartbeat reaps), and answers
 * how many pods remain (this one included) and whether the member was alive.
 */
export const PODS = `
local call = redis.call
local t = call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
local pods, alive, member = KEYS[1], KEYS[2], ARGV[3]
${REAP}
local present = 0
if ARGV[4] == '1' then
  call('ZREM', pods, ARGV[1])
  if member ~= '' then reap(alive, member) end
else
  call('ZADD', pods, now, ARGV[1])
  if member ~= '' and call('ZSCORE', alive, member) then
    call('ZADD', alive, now, member)
    present = 1
  end
end
call('ZREMRANGEBYSCORE', pods, '-inf', now - ttl)
call('PEXPIRE', pods, ttl * 2)
for _, m in ipairs(call('ZRANGEBYSCORE', alive, '-inf', now - ttl, 'LIMIT', 0, 32)) do reap(alive, m) end
return {call('ZCARD', pods), present}
`;
