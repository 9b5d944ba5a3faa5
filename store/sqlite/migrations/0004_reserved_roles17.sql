-- Placeholder: number 4 is given to the roles17 branch (issue #17), which adds
-- its own 0004_*.sql. This file only keeps the numbering 1..n without a gap
-- on the triggers17 branch; delete it when the two branches are merged.
SELECT 1;
