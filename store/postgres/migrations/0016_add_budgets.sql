-- Model spending budgets per day (UTC) of schedules, webhooks and stored
-- credentials: JSON {"tokens": N, "cost": X}, '' for none. Plain metadata,
-- never sealed: a credential's budget is no secret.
ALTER TABLE schedules ADD COLUMN budget TEXT NOT NULL DEFAULT '';
ALTER TABLE hooks ADD COLUMN budget TEXT NOT NULL DEFAULT '';
ALTER TABLE credentials ADD COLUMN budget TEXT NOT NULL DEFAULT '';
