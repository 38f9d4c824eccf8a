-- How many upstream attempts a billed request took (retries and fallbacks included; 1 when the first answered).
-- The row's model_id, provider and upstream_model already name the attempt that answered.
ALTER TABLE usage_events ADD COLUMN attempts smallint NOT NULL DEFAULT 1;
