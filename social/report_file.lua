-- Files a report, all in the reports' slot: a new id, the report's hash,
-- and its place among the open reports.
--
-- KEYS[1] the reports' id sequence
-- KEYS[2] the open reports (id -> id)
-- ARGV[1] the prefix of a report's hash key (the id follows)
-- ARGV[2..] the report's field, value pairs
-- Returns the report's id.
local id = redis.call('INCR', KEYS[1])
local fields = {}
for i = 2, #ARGV do
  fields[#fields + 1] = ARGV[i]
end
redis.call('HSET', ARGV[1] .. id, 'id', id, unpack(fields))
redis.call('ZADD', KEYS[2], id, id)
return id
