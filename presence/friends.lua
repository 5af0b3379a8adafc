-- Shared by online_friends.lua and friends_many.lua, which run with copy.lua
-- and this text prepended (one script each).

-- friends_online reads the friends of one user online from the shared
-- online copy as the classic layout does: the copy intersected with the
-- friend set (ZINTERSTORE, friend-since scores weighted 0 so the scores stay
-- last-seen times) into scratch, read most recent first down to cutoff, at
-- most most of them, and scratch deleted. The intersection walks the
-- smaller of the two sets, so a call costs about the friend count, not the
-- number online. Returns {uid, last seen ms, ...}.
local function friends_online(copy, friends, scratch, cutoff, most)
  if redis.call('ZINTERSTORE', scratch, 2, copy, friends, 'WEIGHTS', 1, 0) == 0 then
    return {}
  end
  local found = redis.call('ZREVRANGEBYSCORE', scratch, '+inf', cutoff,
    'WITHSCORES', 'LIMIT', 0, most)
  redis.call('DEL', scratch)
  return found
end
