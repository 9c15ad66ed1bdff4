package redislease

// The Lua scripts. Every one reads and writes only KEYS[1] (the lease) and
// KEYS[2] (the term counter) of one election, which share a hash slot.
//
// The lease is a string with PX expiry:
//
//	fxe1|<term>|<holder length>|<holder>|<duration ms>|<acquired Unix ms>|<metadata JSON>
//
// "fxe1" is the record format. The holder is length-prefixed, so the
// prefix "fxe1|<term>|<len>|<holder>|" identifies one holder's term
// unambiguously and Renew and Release compare only that prefix. A key of
// another type makes GET raise WRONGTYPE, which the Go side maps to
// fxelection.ErrInvalidRecord (or, for Release, to "not ours"). Terms are
// handled as strings of digits (see termLib), so every term up to
// fxelection.MaxTerm is exact. Writes after TIME need script effects
// replication, the default since Redis 5.

// termLib is shared by the scripts that read terms. Terms are kept as
// decimal strings in canonical form (no sign, no leading zero) and compared
// as strings of digits, never converted to Lua numbers, which are doubles
// and would round terms above 2^53. A term is in [1, 9223372036854775807]
// (fxelection.MaxTerm); the counter may also read "0".
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

// acquireSrc: KEYS lease, term; ARGV "|<len>|<identity>|", metadata,
// duration ms, "1" for clock-based terms.
//
// Replies {1, term, acquired ms, now ms} when the caller holds the lease
// afterwards, {0, record, pttl, now ms} when another holds it, {-1, reason}
// for a foreign value, or {-2} when the term counter reached
// fxelection.MaxTerm.
//
// A new term is the counter plus one, by INCR (exact on 64-bit integers,
// an error instead of a wrap at the top), raised to the server's clock in
// microseconds (a string built from TIME's two fields) when that is larger.
const acquireSrc = termLib + `
local v = redis.call('GET', KEYS[1])
if v then
  local term = string.match(v, '^fxe1|(%d+)|')
  if not term then return {-1, 'the lease key holds a value that is not a lease record'} end
  local t = redis.call('TIME')
  local now = t[1] * 1000 + math.floor(t[2] / 1000)
  local head = 'fxe1|' .. term .. ARGV[1]
  if string.sub(v, 1, #head) ~= head then
    return {0, v, redis.call('PTTL', KEYS[1]), now}
  end
  local at = string.match(v, '^%d+|(%d+)|', #head + 1)
  if not at or not canon(term, false) or not canon(at, true) then return {-1, 'the lease key holds a value that is not a lease record'} end
  redis.call('SET', KEYS[1], head .. ARGV[3] .. '|' .. at .. '|' .. ARGV[2], 'PX', ARGV[3])
  return {1, term, at, now}
end
local c = redis.call('GET', KEYS[2])
if c and not canon(c, true) then
  return {-1, 'the term counter holds a value that is not a term'}
end
if c == MAXTERM then return {-2} end
local t = redis.call('TIME')
local us = t[1] .. string.format('%06d', tonumber(t[2]))
local ts
if ARGV[4] == '1' and less(c or '0', us) then
  ts = us
  redis.call('SET', KEYS[2], ts)
else
  redis.call('INCR', KEYS[2])
  ts = redis.call('GET', KEYS[2])
end
local ats = t[1] .. string.format('%03d', math.floor(tonumber(t[2]) / 1000))
redis.call('SET', KEYS[1], 'fxe1|' .. ts .. ARGV[1] .. ARGV[3] .. '|' .. ats .. '|' .. ARGV[2], 'PX', ARGV[3])
return {1, ts, ats, tonumber(ats)}
`

// renewSrc: KEYS lease; ARGV "fxe1|<term>|<len>|<holder>|", duration ms.
//
// Replies 1 renewed, 0 not ours (or no lease), -1 our prefix on a broken
// record.
const renewSrc = `
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local p = ARGV[1]
if string.sub(v, 1, #p) ~= p then return 0 end
local d = ARGV[2] .. '|'
if string.sub(v, #p + 1, #p + #d) == d then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
local rest = string.match(v, '^%d+|(.*)$', #p + 1)
if not rest then return -1 end
redis.call('SET', KEYS[1], p .. d .. rest, 'PX', ARGV[2])
return 1
`

// releaseSrc: KEYS lease; ARGV "fxe1|<term>|<len>|<holder>|", election,
// wake channel.
//
// Replies 1 released, 0 not ours.
const releaseSrc = `
local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, #ARGV[1]) ~= ARGV[1] then return 0 end
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
