-- Resolves an open report, all in the reports' slot: it moves from the open
-- reports to the resolved ones, and its hash says by whom and when.
-- Resolving it again changes nothing.
--
-- KEYS[1] the report's hash
-- KEYS[2] the open reports
-- KEYS[3] the resolved reports (id -> when resolved, unix ms)
-- ARGV[1] the report's id
-- ARGV[2] the admin's uid
-- ARGV[3] now, unix ms
-- ARGV[4] the resolution's audit record, '' for none: kept in the report's
--         hash (audit_pending:resolve) until it is in the audit log
-- Returns 1 when this resolved it, 0 when it was resolved already, -1 when
-- there is no such report.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'resolved_by', ARGV[2], 'resolved', ARGV[3])
if ARGV[4] ~= '' then
  redis.call('HSET', KEYS[1], 'audit_pending:resolve', ARGV[4])
end
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
return 1
