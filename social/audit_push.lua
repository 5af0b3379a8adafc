-- Pushes audit records at the head of the audit log, in the order given
-- (oldest first), each unless the log holds it already: a flush repeated
-- because its clearing failed pushes nothing twice. A record is unique to
-- its change (its "ref"), so no two changes are taken for one. The log
-- keeps its newest ARGV[1] entries.
--
-- KEYS[1] the audit log
-- ARGV[1] how many entries the log keeps (MaxAuditEntries)
-- ARGV[2..] the records, JSON
-- Returns how many it pushed.
local n = 0
for i = 2, #ARGV do
  if not redis.call('LPOS', KEYS[1], ARGV[i]) then
    redis.call('LPUSH', KEYS[1], ARGV[i])
    n = n + 1
  end
end
redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[1]) - 1)
return n
