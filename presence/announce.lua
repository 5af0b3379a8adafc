-- Publishes a presence frame to friends' channels, but only while it is still
-- true. Announcements are sent after the change they report, from whichever
-- instance made it, so an "offline" can come after a newer "online" (a tab
-- reloaded onto another instance); checking connected here, in the same step
-- as the publish, means the last frame each friend gets is the true state.
-- One Redis only: on a cluster the friends' channels are in other slots than
-- connected, and event.go publishes with SPUBLISH and checks after.
--
-- A friend whose friendship has ended (an unfollow or a block whose
-- friend_removed is on its way, published after the friendship's end) is
-- told nothing: no presence frame may follow that friend_removed.
--
-- KEYS[1] connected (uid -> when the user was told online, unix ms)
-- KEYS[2] uid's friends (friend uid -> since)
-- ARGV[1] uid
-- ARGV[2] 1 to announce "online", 0 to announce "offline"
-- ARGV[3] the frame (JSON)
-- ARGV[4] the command to publish with (PUBLISH: one Redis only)
-- ARGV[5] what a user's channel holds before their uid
-- ARGV[6..] the friends' uids
-- Returns the number of channels published on, or -1 when the frame is stale.
local told = 0
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  told = 1
end
if told ~= tonumber(ARGV[2]) then
  return -1
end
-- One ZMSCORE for the batch: cheaper than a ZSCORE per friend.
local fids = {unpack(ARGV, 6)}
local since = redis.call('ZMSCORE', KEYS[2], unpack(fids))
local n = 0
for i, fid in ipairs(fids) do
  if since[i] then
    redis.call(ARGV[4], ARGV[5] .. fid, ARGV[3])
    n = n + 1
  end
end
return n
