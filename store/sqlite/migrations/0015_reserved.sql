-- Reserved: another branch's migration 0015 takes this number. This
-- placeholder only keeps the numbering 1..n on this branch; drop it when
-- that migration is merged.
SELECT 1;
