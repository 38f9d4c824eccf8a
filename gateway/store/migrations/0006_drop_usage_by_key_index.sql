-- Per-key budget spend is now read from usage_hourly_keys (migration 0005), which the writer keeps in the same
-- statement; nothing else looks rows up by (api_key_id, occurred_at). The index cost every ledger row ~2 µs of
-- Postgres CPU. Dropping it on the parent drops it on every partition.
DROP INDEX IF EXISTS usage_events_api_key_occurred_at;
