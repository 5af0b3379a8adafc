-- Pushes a status into followers' home timelines, and sends its live frame
-- to those connected whose home it newly reached: one follower after
-- another, each only while they still follow its author (their following
-- set, in their slot: an unfollow takes it out there before it walks the
-- home timeline, so a push either comes before that walk, which takes it
-- out, or sees the unfollow). A repost entry leaves out a home that holds
-- its original, or another repost of it that is still there (home:reposts
-- maps each original a repost brought in to that repost's id). Each
-- follower's keys and channel are in the follower's slot: on a Redis
-- Cluster the script runs for one follower at a time, on one Redis for
-- many. Running it again adds nothing and sends nothing.
--
-- For a status (ARGV[3] '0'), two keys a follower:
-- KEYS[2i-1] follower i's following set
-- KEYS[2i]   follower i's home timeline
-- For a repost entry, three:
-- KEYS[3i-2] follower i's following set
-- KEYS[3i-1] follower i's home timeline
-- KEYS[3i]   follower i's home reposts (original id -> repost id)
-- ARGV[1] status id
-- ARGV[2] author uid
-- ARGV[3] the original's id, for a repost entry; '0' for a status
-- ARGV[4] home timeline size
-- ARGV[5] publish command (PUBLISH, or SPUBLISH on a cluster)
-- ARGV[6] the live frame (JSON)
-- ARGV[7] one character a follower, the sum of: 1 to trim their home
--         timeline to its size, 2 when they are connected, 4 when they are
--         to be reached only if active now (their last request within
--         ARGV[#ARGV] ms, or none kept) or connected now (see
--         followerActivity; on one Redis): then the last two keys are
--         presence's set of those connected and users' last requests
--         (uid -> unix ms), their ids follow those of ARGV[11..], and
--         ARGV[#ARGV], last, is that many ms
-- ARGV[8] on one Redis, the author's unfollow count as read before the
--         page was ('0' for none), and then the key after the followers'
--         is that count's; '' on a cluster, where that key is in another slot
-- ARGV[9] on one Redis, the channel of frames for many users
--         (bus.FramesChannel); '' on a cluster. With it, when presence is
--         kept, the two keys after the unfollow count's are presence's
--         instances (instance -> lease expiry, unix ms), those that hold
--         streams, and the readers of the channel (bus.FramesReadersKey:
--         instance -> until when it is marked, unix ms)
-- ARGV[10] with ARGV[9], the start of a user's event channel, which their id
--         ends
-- ARGV[11..] the followers connected, in order: their ids with ARGV[9],
--         else their event channels; then the ids of those flagged 4, in
--         order (and, after them, ARGV[#ARGV] as above)
--
-- Frames alone (ARGV[3] '', on one Redis: a post's first page, whose
-- frames leave in the round trip that writes the status, ahead of its
-- pushes, see post.go): no pushes. ARGV[7] is '', and ARGV[11] names the
-- page's followers (their ids, a space between two: one argument, not one
-- a follower, which Lua would intern one by one), ARGV[12] of them. They
-- are sent the frame in one message (or on their channels, see below),
-- connected or not: each instance hands it to those of them it holds
-- streams of, and Redis does no work a follower. But for a reply
-- (ARGV[13] its parent's author, else ''), only those who follow that
-- author too, and that author, are sent it.
-- KEYS[1] the post's job
-- KEYS[2] for a reply, the followers of ARGV[13]
-- then the unfollow count's key and presence's two, as above.
-- The call that sends the frames writes whom it sent them to in the job's
-- "framed" field (their ids, a space between two), once a job, and when in
-- "framed_at" (unix ms).
-- Returns {code, flags}: code 1 when it sent them; 0 when not, the job
-- being gone (finished by a worker, whose pushes sent them) or framed
-- already (a call run again); -1 when not, the frames to go with the
-- pushes, each on a ZADD that added: the job has a stream entry (a worker
-- took it over and may push the page), or the unfollow count moved (each
-- follow is to be checked). flags is '' but for a reply whose frames it
-- sent: then one character a follower of ARGV[11], '2' sent the frame,
-- '0' not.
--
-- With ARGV[9], the frames of the call go in one message on that channel
-- (the ids of their users, a space between two, a newline, the frame),
-- when they are as many as the connections that read it or more, and
-- every instance in presence's set is marked as a reader (an instance of a
-- build before the channel reads only users' channels, and marks nothing):
-- each instance gets the message once, where a frame on each follower's
-- channel reaches only the instance that holds the follower's streams.
-- Else each goes on its follower's channel.
-- Returns, a follower each, 1 when it added the status, 0 when not (there
-- already, or its original or another repost of it is), -1 when the
-- follower does not follow the author, -2 when flagged 4 and neither
-- active nor connected.
--
-- While the author's unfollow count is still the one read before the page,
-- no unfollow of the author has counted itself since (unfollow_followee.lua,
-- before the unfollow walks the home timeline and returns): each follower
-- of the page still follows, or is in an unfollow that will walk their home
-- after this push. The follow checks are then left out.
local sid, author, orig = ARGV[1], ARGV[2], ARGV[3]
local stride = 2
if orig ~= '0' then
  stride = 3
end
local n = #ARGV[7]
local base = stride * n -- the keys before the unfollow count's
if orig == '' then
  base = 1
  if ARGV[13] ~= '' then
    base = 2
  end
end
-- Those flagged 4 (or 5): the key of the set of those connected, where
-- their ids start, after those of the followers connected (flagged 2 or
-- 3), and whether each is active, their last requests read at once.
local connected, onlyIfOn, active = nil, 10, {}
if string.find(ARGV[7], '[45]') then
  connected = KEYS[#KEYS - 1]
  onlyIfOn = 10 + select(2, string.gsub(ARGV[7], '[23]', ''))
  local count = select(2, string.gsub(ARGV[7], '[45]', ''))
  local t = redis.call('TIME')
  local cutoff = t[1] * 1000 + math.floor(t[2] / 1000) - tonumber(ARGV[#ARGV])
  local last = redis.call('ZMSCORE', KEYS[#KEYS], unpack(ARGV, onlyIfOn + 1, onlyIfOn + count))
  for i = 1, count do
    active[i] = not last[i] or tonumber(last[i]) >= cutoff
  end
end
local away = 0 -- those flagged 4 so far
local check = true
if ARGV[8] ~= '' then
  check = (redis.call('GET', KEYS[base + 1]) or '0') ~= ARGV[8]
end

-- send sends the frame to those named in batch (ARGV's values).
-- With joined, batch is nil, and joined names n users (their ids, a space
-- between two).
local function send(batch, joined, n)
  if n == 0 then
    return
  end
  if ARGV[9] == '' then
    for _, channel in ipairs(batch) do
      redis.call(ARGV[5], channel, ARGV[6])
    end
    return
  end
  local readers = redis.call('PUBSUB', 'NUMSUB', ARGV[9])[2]
  local all = readers > 0 and n >= readers
  if all and #KEYS > base + 1 + (connected and 2 or 0) then
    local t = redis.call('TIME')
    local now = t[1] * 1000 + math.floor(t[2] / 1000)
    -- Every instance in the set, its lease run out or not: one whose lease
    -- lapsed while it stalled may still hold streams, until the sweep
    -- takes it out.
    local holders = redis.call('ZRANGE', KEYS[base + 2], 0, -1)
    -- Their marks a thousand at a time (unpack's bound).
    for first = 1, #holders, 1000 do
      local marks = redis.call('ZMSCORE', KEYS[base + 3], unpack(holders, first, math.min(first + 999, #holders)))
      for i = 1, #marks do
        if not marks[i] or tonumber(marks[i]) < now then
          all = false
          break
        end
      end
      if not all then
        break
      end
    end
  end
  if all then
    redis.call('PUBLISH', ARGV[9], (joined or table.concat(batch, ' ')) .. '\n' .. ARGV[6])
  elseif batch then
    for _, uid in ipairs(batch) do
      redis.call('PUBLISH', ARGV[10] .. uid, ARGV[6])
    end
  else
    for uid in string.gmatch(joined, '%d+') do
      redis.call('PUBLISH', ARGV[10] .. uid, ARGV[6])
    end
  end
end

if orig == '' then
  local job = KEYS[1]
  if redis.call('EXISTS', job) == 0 or redis.call('HEXISTS', job, 'framed') == 1 then
    return {0, ''}
  end
  if check or redis.call('HEXISTS', job, 'entry') == 1 then
    return {-1, ''}
  end
  local ids, n, flags = ARGV[11], tonumber(ARGV[12]), ''
  if ARGV[13] ~= '' then
    local members = {}
    for uid in string.gmatch(ids, '%d+') do
      members[#members + 1] = uid
    end
    -- Who follows the author answered, ZMSCORE a thousand at a time
    -- (unpack's bound).
    local flag, framed = {}, {}
    for first = 1, #members, 1000 do
      local last = math.min(first + 999, #members)
      local follows = redis.call('ZMSCORE', KEYS[2], unpack(members, first, last))
      for i = first, last do
        flag[i] = '0'
        if follows[i - first + 1] or members[i] == ARGV[13] then
          flag[i] = '2'
          framed[#framed + 1] = members[i]
        end
      end
    end
    ids, n, flags = table.concat(framed, ' '), #framed, table.concat(flag)
  end
  local t = redis.call('TIME')
  redis.call('HSET', job, 'framed', ids, 'framed_at', t[1] * 1000 + math.floor(t[2] / 1000))
  send(nil, ids, n)
  return {1, flags}
end

local out = {}
local channel = 10
local batch = {} -- the ids, or channels, of those whose frame is sent
for i = 1, n do
  local following, home = KEYS[stride * (i - 1) + 1], KEYS[stride * (i - 1) + 2]
  local flags = string.byte(ARGV[7], i) - 48
  local live = flags >= 2 and flags < 4
  if live then
    channel = channel + 1
  end
  local added, reached = -1, true
  if flags >= 4 then
    onlyIfOn, away = onlyIfOn + 1, away + 1
    reached = active[away] or redis.call('ZSCORE', connected, ARGV[onlyIfOn]) ~= false
    if not reached then
      added = -2
    end
  end
  if reached and (not check or redis.call('ZSCORE', following, author)) then
    added = 0
    if orig == '0' then
      added = redis.call('ZADD', home, sid, sid)
    else
      local map = KEYS[stride * i]
      local other = redis.call('ZSCORE', map, orig)
      if not redis.call('ZSCORE', home, orig)
          and not (other and other ~= sid and redis.call('ZSCORE', home, other)) then
        redis.call('ZADD', map, sid, orig)
        added = redis.call('ZADD', home, sid, sid)
        if flags % 2 == 1 then
          redis.call('ZREMRANGEBYRANK', map, 0, -tonumber(ARGV[4]) - 1)
        end
      end
    end
    if added == 1 then
      if flags % 2 == 1 then
        redis.call('ZREMRANGEBYRANK', home, 0, -tonumber(ARGV[4]) - 1)
      end
      if live then
        batch[#batch + 1] = ARGV[channel]
      end
    end
  end
  out[i] = added
end
send(batch, nil, #batch)
return out
