-- Placeholder (branch otel19): migrations must be numbered 1..n without a gap, and
-- this branch's migration is 0007. Drop this file at merge, when the other
-- branches' migrations take numbers 0004..0006.
SELECT 1;
