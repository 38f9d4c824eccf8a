-- Per-key budgets are reconciled from the ledger: spend of one key since a period start.
CREATE INDEX usage_events_api_key_occurred_at ON usage_events (api_key_id, occurred_at);
