-- Lets go of a connection of this instance that closed as the instance
-- drains or shuts down, whose client reconnects elsewhere: it leaves the
-- user's registry, so that it counts no longer against the user's cap of
-- live connections (register.lua), but stays in the instance's set of
-- connections and leaves the user in connected, with no offline frame. The
-- user's reconnection elsewhere registers a connection of its own; a user
-- who does not come back is taken out of connected by the sweep of this
-- instance once its lease runs out, which finds their registry empty and
-- tells the friends then. Running it again changes nothing.
--
-- KEYS[1] the user's registry (hash connID -> instance id)
-- ARGV[1] the connection id
-- ARGV[2] this instance's id
-- Returns 1 when it let the connection go, 0 when the registry did not hold
-- it for this instance.
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('HDEL', KEYS[1], ARGV[1])
  return 1
end
return 0
