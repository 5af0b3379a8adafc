-- Settles the audit records held in a changed object's hash (a user's, a
-- report's) and returns those to push to the audit log.
--
-- A change's own script writes its record into the hash as a field
-- audit_pending:<name>, which stays until the record is in the log. A
-- suspension's records come from intents (audit_intent.lua): an intent
-- whose revision the suspension has moved past becomes the pending record
-- of the change right after it, audit_pending:rev<n>, unless a record of
-- that change was taken already (audit_suspension_rev, the latest change
-- taken): two admins asking for one change at once log it once, the
-- caller's own intent first. The caller's own intent whose change did not
-- take place is dropped: its call is over. Another's is left to its call.
--
-- KEYS[1] the object's hash
-- ARGV[1] the caller's intent's field, '' for none
-- Returns the pending records: {field, record, field, record, ...}.
local rev = tonumber(redis.call('HGET', KEYS[1], 'suspension_rev') or '0')
local taken = tonumber(redis.call('HGET', KEYS[1], 'audit_suspension_rev') or '0')
local all = redis.call('HGETALL', KEYS[1])
local done, pending = {}, {}
for i = 1, #all, 2 do
  local field, value = all[i], all[i + 1]
  if string.sub(field, 1, 13) == 'audit_intent:' then
    local from, record = string.match(value, '^(%d+) (.*)$')
    from = tonumber(from)
    if from and from < rev then
      table.insert(done, {from = from, own = field == ARGV[1], record = record})
      redis.call('HDEL', KEYS[1], field)
    elseif field == ARGV[1] or not from then
      redis.call('HDEL', KEYS[1], field)
    end
  elseif string.sub(field, 1, 14) == 'audit_pending:' then
    table.insert(pending, field)
    table.insert(pending, value)
  end
end
table.sort(done, function(a, b)
  if a.from ~= b.from then
    return a.from < b.from
  end
  return a.own and not b.own
end)
local was = taken
for _, d in ipairs(done) do
  if d.from + 1 > taken then
    taken = d.from + 1
    local field = 'audit_pending:rev' .. taken
    redis.call('HSET', KEYS[1], field, d.record)
    table.insert(pending, field)
    table.insert(pending, d.record)
  end
end
if taken ~= was then
  redis.call('HSET', KEYS[1], 'audit_suspension_rev', taken)
end
return pending
