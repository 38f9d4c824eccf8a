-- What the admin API reads. usage_events gains what a "recent requests" view shows (NULL on rows written before:
-- those were never recorded, and guessing them would be worse than saying so). The route is the row's endpoint.
ALTER TABLE usage_events ADD COLUMN status smallint;
ALTER TABLE usage_events ADD COLUMN latency_ms integer;
ALTER TABLE usage_events ADD COLUMN key_prefix text;

-- Recent requests, newest first, paged by (occurred_at, request_id).
CREATE INDEX usage_events_occurred_at_request_id ON usage_events (occurred_at, request_id);

-- Per key, per UTC hour, per model: usage_hourly has no key, so spend by key (and every admin usage view, which
-- groups by organization, project, key or model) reads this. Maintained by the ledger writer in the same statement
-- as usage_hourly, from the same newly inserted rows.
CREATE TABLE usage_hourly_keys (
  api_key_id          text NOT NULL,
  hour                timestamptz NOT NULL,
  client_model        text NOT NULL,
  organization        text NOT NULL,
  project             text NOT NULL,
  input               bigint NOT NULL,
  output              bigint NOT NULL,
  cache_read          bigint NOT NULL,
  cache_write         bigint NOT NULL,
  cache_explicit_read bigint NOT NULL,
  reasoning           bigint NOT NULL,
  artifacts           bigint NOT NULL,
  request_count       bigint NOT NULL,
  cost_points         numeric NOT NULL,
  original_cost       numeric NOT NULL,
  PRIMARY KEY (api_key_id, hour, client_model)
);

CREATE INDEX usage_hourly_keys_organization_hour ON usage_hourly_keys (organization, hour);
CREATE INDEX usage_hourly_keys_hour ON usage_hourly_keys (hour);

-- Backfill from the raw rows already in the ledger (a key lives in one organization and project).
INSERT INTO usage_hourly_keys (api_key_id, hour, client_model, organization, project,
  input, output, cache_read, cache_write, cache_explicit_read, reasoning, artifacts,
  request_count, cost_points, original_cost)
SELECT api_key_id, date_trunc('hour', occurred_at, 'UTC'), coalesce(nullif(client_model, ''), model_id),
  max(organization), max(project),
  sum(input), sum(output), sum(cache_read), sum(cache_write), sum(cache_explicit_read), sum(reasoning), sum(artifacts),
  count(*), sum(cost_points), sum(original_cost)
FROM usage_events
GROUP BY 1, 2, 3;
