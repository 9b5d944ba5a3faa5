-- Version 3: checkpoints lose their foreign key to runs.
--
-- A 1,000-node run inserts a thousand checkpoint rows, and the key's check
-- (a SELECT … FOR KEY SHARE of the run's row per inserted row) was a quarter
-- of what PostgreSQL spent on those inserts (docs/benchmarks.md, issue 14).
-- Every write path creates or locks the run's row before its first entry
-- (ensureRun, lockRun; the single-statement node insert runs only once that
-- happened), and pruning runs deletes their checkpoints in the same
-- transaction, so the key only cost time.
ALTER TABLE checkpoints DROP CONSTRAINT IF EXISTS checkpoints_run_id_fkey;
