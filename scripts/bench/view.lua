-- wrk script: small record reads of random existing ids.
-- Usage: wrk ... -s view.lua http://host:port -- <ids-file> <path-prefix> [path-suffix]
--   each request is GET <path-prefix><random id from ids-file><path-suffix>
-- Counts every non-2xx response and prints "HARNESS non2xx=<n> first=<status body>" from done().
local threads = {}
local counter = 0

function setup(thread)
  counter = counter + 1
  thread:set("tid", counter)
  table.insert(threads, thread)
end

function init(args)
  non2xx = 0
  first_bad = ""
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

function response(status, headers, body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
    if first_bad == "" then
      first_bad = tostring(status) .. " " .. string.sub(body or "", 1, 200)
    end
  end
end

function done(summary, latency, requests)
  local total, first = 0, ""
  for _, t in ipairs(threads) do
    total = total + (t:get("non2xx") or 0)
    local fb = t:get("first_bad") or ""
    if first == "" and fb ~= "" then first = fb end
  end
  print(string.format("HARNESS non2xx=%d first=%s", total, (first:gsub("\n", " "))))
end
