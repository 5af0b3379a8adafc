-- A check shared by the scripts that change a list; their text goes after
-- this one's.

-- Returns the script's refusal unless uid owns the list whose hash is at
-- key: -1 when there is no such list, -2 when it belongs to someone else;
-- nil when uid owns it. A list marked deleted (its deletion under way) is
-- no list, except to its deletion (deleting true), which a retry finishes.
local function refuse_unless_owner(key, uid, deleting)
  local list = redis.call('HMGET', key, 'owner', 'deleted')
  if not list[1] or (list[2] and not deleting) then
    return -1
  end
  if list[1] ~= uid then
    return -2
  end
  return nil
end
