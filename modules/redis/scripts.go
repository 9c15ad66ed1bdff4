package redislease

// The Lua scripts. Every one reads and writes only KEYS[1] (the lease) and
// KEYS[2] (the term counter) of one election, which share a hash slot.
//
// The lease is a string with PX expiry:
//
//	fxe2|<term>|<holder length>|<holder>|<nonce>|<duration ms>|<acquired Unix ms>|<metadata JSON>
//
// "fxe2" is the record format. The holder is length-prefixed, so the
// prefix "fxe2|<term>|<len>|<holder>|" identifies one holder's term
// unambiguously; Renew compares only that prefix. The nonce (16 lowercase
// hex digits) names the acquiring run: the request's incarnation itself
// when that is 16 lowercase hex digits (as backendkit.NewIncarnation
// makes them), else the first 64 bits of a SHA-256 of it, or random when
// the request names no incarnation (then new on every Acquire). Acquire
// compares it to decide whether a re-acquisition by the holder continues
// its term (same incarnation) or starts a new one (another incarnation),
// and Release compares the prefix up to and including it: a release from
// an earlier acquisition (a restarted holder's previous incarnation)
// frees nothing. Any other value under the lease key is a foreign value
// (backendkit.ErrInvalidRecord, never taken over before it expires). A key
// of another type makes GET raise WRONGTYPE, which the Go side maps to
// backendkit.ErrInvalidRecord (or, for Release, to "not ours"). Terms are
// handled as strings of digits (see termLib), so every term up to
// backendkit.MaxTerm is exact. Writes after TIME need script effects
// replication, the default since Redis 5.

// termLib is shared by the scripts that read terms. Terms are kept as
// decimal strings in canonical form (no sign, no leading zero) and compared
// as strings of digits, never converted to Lua numbers, which are doubles
// and would round terms above 2^53. A term is in [1, 9223372036854775807]
// (backendkit.MaxTerm); the counter may also read "0".
const termLib = `
local MAXTERM = '9223372036854775807'
local function canon(s, zero)
  if type(s) ~= 'string' or not string.match(s, '^%d+$') or #s > 19 then return false end
  if s == '0' then return zero end
  if string.sub(s, 1, 1) == '0' then return false end
  return #s < 19 or s <= MAXTERM
end
local function less(a, b)
  return #a < #b or (#a == #b and a < b)
end
`

// nonceLib is the Lua pattern of a nonce: 16 lowercase hex digits.
const nonceLib = `
local NONCE = string.rep('[0-9a-f]', 16)
`

// acquireSrc: KEYS lease, term; ARGV "|<len>|<identity>|", metadata,
// duration ms, nonce, "1" when the nonce is derived from the request's
// incarnation (else it is random).
//
// Replies {1, term, acquired ms, now ms} when the caller holds the lease
// afterwards (the record then carries the given nonce), {0, record, pttl,
// now ms} when another holds it, {-1, reason} for a foreign value, or {-2}
// when the term counter reached backendkit.MaxTerm.
//
// A live record of the caller's identity keeps its term when the request
// names no incarnation (ARGV[5] ~= "1": the Elector's hand-over hint, which
// must keep a successor's term) or when the record's nonce is the one
// derived from the request's incarnation (the same run retrying);
// otherwise — another nonce — it is a new incarnation of the identity,
// which takes the lease at once with a new term, as a new holder does, and
// strictly above the live record's term even when the counter was lost.
//
// A new term is the counter plus one, by INCR (exact on 64-bit integers,
// an error instead of a wrap at the top), raised to the server's clock in
// microseconds (a string built from TIME's two fields) when that is larger.
// The counter is first raised to the live record's term when it is below
// it (the counter was deleted while the record lived).
//
// The script is the Lua function acquire (acquireLib), which transferSrc
// calls too.
const acquireSrc = acquireLib + `
return acquire()
`

// acquireLib defines the Lua function acquire, acquireSrc's body, with
// termLib and nonceLib before it.
const acquireLib = termLib + nonceLib + `
local function acquire()
  local v = redis.call('GET', KEYS[1])
  local floor
  if v then
    local term = string.match(v, '^fxe2|(%d+)|')
    if not term then return {-1, 'the lease key holds a value that is not a lease record'} end
    local t = redis.call('TIME')
    local now = t[1] * 1000 + math.floor(t[2] / 1000)
    local head = 'fxe2|' .. term .. ARGV[1]
    if string.sub(v, 1, #head) ~= head then
      return {0, v, redis.call('PTTL', KEYS[1]), now}
    end
    local n, at = string.match(v, '^(' .. NONCE .. ')|%d+|(%d+)|', #head + 1)
    if not at or not canon(term, false) or not canon(at, true) then return {-1, 'the lease key holds a value that is not a lease record'} end
    if ARGV[5] ~= '1' or n == ARGV[4] then
      redis.call('SET', KEYS[1], 'fxe2|' .. term .. ARGV[1] .. ARGV[4] .. '|' .. ARGV[3] .. '|' .. at .. '|' .. ARGV[2], 'PX', ARGV[3])
      return {1, term, at, now}
    end
    floor = term
  end
  local c = redis.call('GET', KEYS[2])
  if c and not canon(c, true) then
    return {-1, 'the term counter holds a value that is not a term'}
  end
  local base = c or '0'
  if floor and less(base, floor) then base = floor end
  if base == MAXTERM then return {-2} end
  if base ~= (c or '0') then redis.call('SET', KEYS[2], base) end
  local t = redis.call('TIME')
  local us = t[1] .. string.format('%06d', tonumber(t[2]))
  local ts
  if less(base, us) then
    ts = us
    redis.call('SET', KEYS[2], ts)
  else
    redis.call('INCR', KEYS[2])
    ts = redis.call('GET', KEYS[2])
  end
  local ats = t[1] .. string.format('%03d', math.floor(tonumber(t[2]) / 1000))
  redis.call('SET', KEYS[1], 'fxe2|' .. ts .. ARGV[1] .. ARGV[4] .. '|' .. ARGV[3] .. '|' .. ats .. '|' .. ARGV[2], 'PX', ARGV[3])
  return {1, ts, ats, tonumber(ats)}
end
`

// transferSrc: KEYS lease, term; ARGV 1 to 5 as for acquireSrc (the
// request), then ARGV 6 to 8 as releaseSrc's 1 to 3 (the lease ended):
// "|<term>|<len>|<holder>|" followed by "<nonce>|" when the releaser has
// one, election, wake channel.
//
// Replies {0}, changing nothing, when the lease is not the releaser's (no
// key, a key of another type, another holder, term or nonce: matched as
// releaseSrc matches), {-1,
// reason} for a term counter that is not a term and {-2} when the counter,
// raised to the released record's term, has reached backendkit.MaxTerm,
// both changing nothing too; otherwise acquireSrc's {1, term, acquired
// ms, now ms}. It checks everything that could fail first, and only then
// writes: the counter raised to the released record's term when it is
// below it (so the new term is above it even when the counter was lost),
// the lease deleted, acquire() on the now absent key (which cannot fail:
// the counter is a term below MaxTerm), and the wake-up published. A
// Redis script that fails half way keeps the writes it made, hence the
// order, and redis.pcall for the reads that could meet a key of another
// type.
const transferSrc = acquireLib + `
local v = redis.pcall('GET', KEYS[1])
if type(v) ~= 'string' then return {0} end
if string.sub(v, 1, 4) ~= 'fxe2' then return {0} end
if string.sub(v, 5, 4 + #ARGV[6]) ~= ARGV[6] then return {0} end
local term = string.match(v, '^fxe2|(%d+)|')
if not term or not canon(term, false) then return {0} end
local c = redis.pcall('GET', KEYS[2])
if type(c) == 'table' or (c and not canon(c, true)) then
  return {-1, 'the term counter holds a value that is not a term'}
end
local base = c or '0'
if less(base, term) then base = term end
if base == MAXTERM then return {-2} end
if base ~= (c or '0') then redis.call('SET', KEYS[2], base) end
redis.call('DEL', KEYS[1])
local r = acquire()
redis.call('PUBLISH', ARGV[8], ARGV[7])
return r
`

// renewSrc: KEYS lease; ARGV "|<term>|<len>|<holder>|", duration ms.
//
// Replies {1, nonce} renewed (the record's nonce), {0} not ours (or no
// lease), {-1} our prefix on a broken record. The nonce is not compared:
// any acquisition of the holder's term is renewed.
const renewSrc = nonceLib + `
local v = redis.call('GET', KEYS[1])
if not v then return {0} end
local p = 'fxe2' .. ARGV[1]
if string.sub(v, 1, #p) ~= p then return {0} end
local n = string.match(v, '^(' .. NONCE .. ')|', #p + 1)
if not n then return {-1} end
p = p .. n .. '|'
local d = ARGV[2] .. '|'
if string.sub(v, #p + 1, #p + #d) == d then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, n}
end
local rest = string.match(v, '^%d+|(.*)$', #p + 1)
if not rest then return {-1} end
redis.call('SET', KEYS[1], p .. d .. rest, 'PX', ARGV[2])
return {1, n}
`

// releaseSrc: KEYS lease; ARGV "|<term>|<len>|<holder>|" followed by
// "<nonce>|" when the releaser has one, election, wake channel.
//
// Replies 1 released, 0 not ours. With a nonce only the record of that
// acquisition matches; without one, any record of the holder's term.
const releaseSrc = `
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
if string.sub(v, 1, 4) ~= 'fxe2' then return 0 end
if string.sub(v, 5, 4 + #ARGV[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[3], ARGV[2])
return 1
`

// getSrc: KEYS lease.
//
// Replies {1, record, pttl, now ms}, {0} (no lease) or {-1, reason}.
const getSrc = `
local v = redis.call('GET', KEYS[1])
if not v then return {0} end
local t = redis.call('TIME')
return {1, v, redis.call('PTTL', KEYS[1]), t[1] * 1000 + math.floor(t[2] / 1000)}
`
