-- wrk script: small record reads of random existing ids.
-- Usage: wrk ... -s view.lua http://host:port -- <ids-file> <path-prefix> [path-suffix]
--   each request is GET <path-prefix><random id from ids-file><path-suffix>
-- Non-2xx answers are counted and reported by non2xx.lua.
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "non2xx.lua")
local counter = 0

function setup(thread)
  counter = counter + 1
  thread:set("tid", counter)
  track_thread(thread)
end

function init(args)
  reset_non2xx()
  local file, prefix, suffix = args[1], args[2], args[3] or ""
  if file == nil or prefix == nil then
    error("view.lua needs: -- <ids-file> <path-prefix> [path-suffix]")
  end
  paths = {}
  for line in io.lines(file) do
    if line ~= "" then table.insert(paths, prefix .. line .. suffix) end
  end
  if #paths == 0 then error("view.lua: no ids in " .. file) end
  math.randomseed(os.time() * 1000 + (tid or 0))
end

function request()
  return wrk.format("GET", paths[math.random(#paths)])
end
