-- Why a run ended, beside its status: 'rejected' when a person's (or a
-- deadline's) "no" decided it (engine.Result.Outcome), NULL otherwise. The
-- runs list tells a rejected run from one that broke without reading
-- checkpoint logs.
ALTER TABLE runs ADD COLUMN outcome VARCHAR(16);
