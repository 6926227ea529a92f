-- wrk script: small JSON record creates (POST to the URL path given on the command line).
-- Counts every non-2xx response (wrk itself only reports status >= 400) and prints
-- "HARNESS non2xx=<n> first=<status body>" from done() for compare-rest.sh to check.
wrk.method = "POST"
wrk.body = '{"title":"hello","n":1}'
wrk.headers["Content-Type"] = "application/json"

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
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
