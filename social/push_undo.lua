-- Undoes a push of a status into a follower's home timeline that the
-- follow check after it found no follow for (push.go, homePush): the
-- status leaves the home timeline, unless the follower follows its author
-- again by now (a follow since copies the author's statuses, this one with
-- them). Both keys are in the follower's slot.
--
-- KEYS[1] the follower's following set
-- KEYS[2] the follower's home timeline
-- ARGV[1] the author's uid
-- ARGV[2] the status id
-- Returns 1 when it took the status out, 0 when not.
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
return redis.call('ZREM', KEYS[2], ARGV[2])
