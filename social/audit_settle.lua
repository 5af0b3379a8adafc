-- Settles the audit records held in a changed object's hash (a user's, a
-- report's) and returns those to push to the audit log.
--
-- A change's own script writes its record into the hash as a field
-- audit_pending:<name>, which stays until the record is in the log.
--
-- A build before suspend.lua wrote its records recorded a suspension's
-- intent ahead of it instead (audit_intent:<ref>: the revision then, and
-- the record), taken here for the change right after that revision once
-- the suspension has moved past it, unless a record of that change was
-- taken already (audit_suspension_rev, which suspend.lua now moves at
-- every change). Such an intent whose change is yet to come is left to
-- its call, or to the next change, which takes it out.
--
-- KEYS[1] the object's hash
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
      table.insert(done, {from = from, record = record})
      redis.call('HDEL', KEYS[1], field)
    elseif not from then
      redis.call('HDEL', KEYS[1], field)
    end
  elseif string.sub(field, 1, 14) == 'audit_pending:' then
    table.insert(pending, field)
    table.insert(pending, value)
  end
end
table.sort(done, function(a, b) return a.from < b.from end)
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
