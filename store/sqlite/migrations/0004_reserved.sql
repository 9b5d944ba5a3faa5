-- Reserved for another branch of issue #17 (approvals17). The roles17 branch
-- was given migration 0005 and the loader wants 1..n without a gap: this
-- no-op keeps that branch testable on its own. Drop it at merge.
SELECT 1;
