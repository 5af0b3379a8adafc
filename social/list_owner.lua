-- A check shared by the scripts that change a list; their text goes after
-- this one's.

-- Returns the script's refusal unless uid owns the list whose hash is at
-- key: -1 when there is no such list, -2 when it belongs to someone else;
-- nil when uid owns it.
local function refuse_unless_owner(key, uid)
  local owner = redis.call('HGET', key, 'owner')
  if not owner then
    return -1
  end
  if owner ~= uid then
    return -2
  end
  return nil
end
