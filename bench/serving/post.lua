-- wrk script of run_serving_bench: every request POSTs the same scoring-protocol body, and the
-- run's figures are written as one JSON object for serving_bench.py to read (parsing wrk's text
-- output would lose the error kinds and round the percentiles).
--   SERVING_BENCH_BODY    the request body (a file)
--   SERVING_BENCH_RESULT  where done() writes the JSON
-- No response() callback: defining one makes wrk hand every body to Lua, which would slow the
-- load generator that shares the CPU with the servers; wrk counts non-2xx/3xx answers itself.

local body_file = assert(io.open(os.getenv("SERVING_BENCH_BODY"), "rb"))
wrk.method = "POST"
wrk.body = body_file:read("*a")
body_file:close()
wrk.headers["Content-Type"] = "application/json"

function done(summary, latency, requests)
  local out = assert(io.open(os.getenv("SERVING_BENCH_RESULT"), "w"))
  local e = summary.errors
  -- %.0f, not %d: wrk's numbers are Lua doubles.
  out:write(string.format(
    '{"requests": %.0f, "duration_us": %.0f, "bytes": %.0f, ' ..
    '"errors": {"connect": %.0f, "read": %.0f, "write": %.0f, "status": %.0f, "timeout": %.0f}, ' ..
    '"latency_us": {"min": %.0f, "mean": %.1f, "p50": %.0f, "p90": %.0f, "p99": %.0f, ' ..
    '"p999": %.0f, "max": %.0f}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.min, latency.mean, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency:percentile(99.9), latency.max))
  out:close()
end
