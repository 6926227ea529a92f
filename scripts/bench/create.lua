-- wrk script: small JSON record creates (POST to the URL path given on the command line).
-- Non-2xx answers are counted and reported by non2xx.lua.
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "non2xx.lua")

wrk.method = "POST"
wrk.body = '{"title":"hello","n":1}'
wrk.headers["Content-Type"] = "application/json"

function setup(thread)
  track_thread(thread)
end

function init(args)
  reset_non2xx()
end
