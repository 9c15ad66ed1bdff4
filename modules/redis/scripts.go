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
// fxelection.ErrInvalidRecord (or, for Release, to "not ours"). Terms stay
// below 2^53 (9007199254740992) so Lua's numbers hold them exactly. Writes
// after TIME need script effects replication, the default since Redis 5.

// acquireSrc: KEYS lease, term; ARGV "|<len>|<identity>|", metadata,
// duration ms, "1" for clock-based terms.
//
// Replies {1, term, acquired ms, now ms} when the caller holds the lease
// afterwards, {0, record, pttl, now ms} when another holds it, or
// {-1, reason} for a foreign value.
const acquireSrc = `
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
  if not at then return {-1, 'the lease key holds a value that is not a lease record'} end
  redis.call('SET', KEYS[1], head .. ARGV[3] .. '|' .. at .. '|' .. ARGV[2], 'PX', ARGV[3])
  return {1, term, at, now}
end
local n = 0
local c = redis.call('GET', KEYS[2])
if c then
  n = tonumber(c)
  if not n or n < 0 or n % 1 ~= 0 or n >= 9007199254740992 then
    return {-1, 'the term counter holds a value that is not a term'}
  end
end
local t = redis.call('TIME')
local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local term = n + 1
if ARGV[4] == '1' and us > term then term = us end
if term >= 9007199254740992 then
  return {-1, 'the term counter is exhausted'}
end
local ts = string.format('%d', term)
local at = math.floor(us / 1000)
local ats = string.format('%d', at)
redis.call('SET', KEYS[2], ts)
redis.call('SET', KEYS[1], 'fxe1|' .. ts .. ARGV[1] .. ARGV[3] .. '|' .. ats .. '|' .. ARGV[2], 'PX', ARGV[3])
return {1, ts, ats, at}
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
