-- Reads the ids of one page of a home timeline: the stored timeline merged,
-- by id, with the profile timelines of the pulled authors the reader
-- follows, without duplicates (a status pushed before its author was
-- pulled is in both). Each source gives at most the page's size past the
-- cursor, and only what could still make the page: once the page is full,
-- ids past its last.
--
-- KEYS[1] the home timeline
-- KEYS[2] the reader's pulled authors
-- ARGV[1] prefix of profile timelines
-- ARGV[2] 1 for newest first (ids below the cursor), 0 for oldest first
--         (ids above it)
-- ARGV[3] the cursor: an id, 0 for none
-- ARGV[4] how many
-- Returns the ids, in the page's order.
local newest = ARGV[2] == '1'
local cursor = tonumber(ARGV[3])
local n = tonumber(ARGV[4])

-- window reads up to n ids of key past the cursor and, once bound is set,
-- before bound (exclusive).
local function window(key, bound)
  if newest then
    local hi, lo = '+inf', '-inf'
    if cursor > 0 then hi = '(' .. cursor end
    if bound then lo = '(' .. bound end
    return redis.call('ZREVRANGEBYSCORE', key, hi, lo, 'LIMIT', 0, n)
  end
  local lo, hi = '(' .. cursor, '+inf'
  if bound then hi = '(' .. bound end
  return redis.call('ZRANGEBYSCORE', key, lo, hi, 'LIMIT', 0, n)
end

local ids = window(KEYS[1])
local authors = redis.call('ZRANGE', KEYS[2], 0, -1)
if #authors == 0 then
  return ids
end
local page, seen = {}, {}
local function merge(list)
  for _, id in ipairs(list) do
    if not seen[id] then
      seen[id] = true
      page[#page + 1] = tonumber(id)
    end
  end
  if newest then
    table.sort(page, function(a, b) return a > b end)
  else
    table.sort(page)
  end
  for i = #page, n + 1, -1 do
    page[i] = nil
  end
end
merge(ids)
for _, author in ipairs(authors) do
  local bound
  if #page == n then
    bound = page[n]
  end
  merge(window(ARGV[1] .. author, bound))
end
for i = 1, #page do
  page[i] = string.format('%d', page[i])
end
return page
