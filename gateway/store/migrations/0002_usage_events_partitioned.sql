-- usage_events partitioned by UTC day on occurred_at, so retention drops whole days (usage_hourly is kept) instead
-- of deleting rows, and the table a writer inserts into stays small. A partitioned table's unique key must hold the
-- partition key, so the exactly-once key becomes (request_id, occurred_at): a journal replay is the same row with
-- the same occurred_at, so it lands in the same partition and meets ON CONFLICT there. Rows for a day that has no
-- partition yet go to the default partition; maintenance (gateway/store/partitions.ts) creates days ahead and moves
-- any such rows into their day when it creates it.
ALTER TABLE usage_events RENAME TO usage_events_unpartitioned;
ALTER INDEX usage_events_pkey RENAME TO usage_events_unpartitioned_pkey;
ALTER INDEX usage_events_project_occurred_at RENAME TO usage_events_unpartitioned_project_occurred_at;

CREATE TABLE usage_events (
  request_id          text NOT NULL,
  occurred_at         timestamptz NOT NULL,
  organization        text NOT NULL,
  project             text NOT NULL,
  api_key_id          text NOT NULL,
  client_model        text NOT NULL,
  model_id            text NOT NULL,
  provider            text NOT NULL,
  upstream_model      text NOT NULL,
  endpoint            text NOT NULL,
  stream              boolean NOT NULL,
  input               bigint NOT NULL,
  output              bigint NOT NULL,
  cache_read          bigint NOT NULL,
  cache_write         bigint NOT NULL,
  reasoning           bigint NOT NULL,
  artifacts           bigint NOT NULL,
  -- cache_read when the upstream's caching is explicit, else 0.
  cache_explicit_read bigint NOT NULL,
  estimated           boolean NOT NULL,
  cost_points         numeric NOT NULL,
  original_cost       numeric NOT NULL,
  detail              jsonb,
  PRIMARY KEY (request_id, occurred_at)
) PARTITION BY RANGE (occurred_at);

CREATE INDEX usage_events_project_occurred_at ON usage_events (project, occurred_at);

CREATE TABLE usage_events_default PARTITION OF usage_events DEFAULT;

-- A partition for each day that already has rows (named usage_events_pYYYYMMDD, as maintenance names them), then the rows.
DO $$
DECLARE
  d date;
BEGIN
  FOR d IN SELECT DISTINCT (occurred_at AT TIME ZONE 'UTC')::date FROM usage_events_unpartitioned LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF usage_events FOR VALUES FROM (%L) TO (%L)',
      'usage_events_p' || to_char(d, 'YYYYMMDD'),
      to_char(d, 'YYYY-MM-DD') || ' 00:00:00+00', to_char(d + 1, 'YYYY-MM-DD') || ' 00:00:00+00');
  END LOOP;
END $$;

INSERT INTO usage_events SELECT * FROM usage_events_unpartitioned;
DROP TABLE usage_events_unpartitioned;
