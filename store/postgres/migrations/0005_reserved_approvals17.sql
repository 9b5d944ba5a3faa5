-- Placeholder: number 5 is given to the approvals17 branch (issue #17), which adds
-- its own 0005_*.sql. This file only keeps the numbering 1..n without a gap
-- on the triggers17 branch; delete it when the two branches are merged.
SELECT 1;
