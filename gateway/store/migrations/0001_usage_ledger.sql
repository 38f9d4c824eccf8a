-- One row per billed request; request_id is the exactly-once key (journal replays hit ON CONFLICT).
CREATE TABLE usage_events (
  request_id          text PRIMARY KEY,
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
  -- cache_read when the upstream's caching is explicit, else 0 (docs/contract.md, usage).
  cache_explicit_read bigint NOT NULL,
  estimated           boolean NOT NULL,
  cost_points         numeric NOT NULL,
  original_cost       numeric NOT NULL,
  detail              jsonb
);

CREATE INDEX usage_events_project_occurred_at ON usage_events (project, occurred_at);

-- Per UTC hour rollup, maintained in the same statement as the raw insert.
-- model = the client's model string, or the configured model id when the client sent none.
CREATE TABLE usage_hourly (
  project             text NOT NULL,
  hour                timestamptz NOT NULL,
  client_model        text NOT NULL,
  organization        text NOT NULL,
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
  PRIMARY KEY (project, hour, client_model)
);

CREATE INDEX usage_hourly_organization_hour ON usage_hourly (organization, hour);
