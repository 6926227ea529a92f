-- Shared by the wrk scripts: counts every non-2xx response (wrk itself only reports status >= 400)
-- and prints "HARNESS non2xx=<n> first=<status body>" from done() for compare-rest.sh to check.
-- A script loads it with dofile() and calls track_thread(thread) from its setup().
local threads = {}

function track_thread(thread)
  table.insert(threads, thread)
end

function reset_non2xx()
  non2xx = 0
  first_bad = ""
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
