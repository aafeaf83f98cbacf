-- The OpenTelemetry trace each provider call ran in (issue 44): a result's `traceId`, its audit rows
-- and its spans find each other. NULL when tracing was off.
ALTER TABLE research_call_records ADD COLUMN trace_id TEXT;
