-- Version 4: approvals (issue 17). A pending interrupt keeps what the inbox
-- shows and the deadline sweeper needs, so neither reads checkpoint logs:
--
--   prompt       the pause's prompt, as JSON (the inbox's text filter reads it)
--   approval     engine.ApprovalInfo as JSON (schema, proposed value, approvers…)
--   deadline     when the pause must be answered (µs), NULL: never
--   escalation   the webhook told about the pause ('' : none)
--   notify_at    when the webhook is told the deadline nears (µs), NULL: never
--   escalated_at / warned_at  when one process claimed each notification, so
--                that several processes send each one once
ALTER TABLE run_interrupts ADD COLUMN prompt TEXT;
ALTER TABLE run_interrupts ADD COLUMN approval TEXT;
ALTER TABLE run_interrupts ADD COLUMN deadline BIGINT;
ALTER TABLE run_interrupts ADD COLUMN escalation TEXT NOT NULL DEFAULT '';
ALTER TABLE run_interrupts ADD COLUMN notify_at BIGINT;
ALTER TABLE run_interrupts ADD COLUMN escalated_at BIGINT;
ALTER TABLE run_interrupts ADD COLUMN warned_at BIGINT;
CREATE INDEX run_interrupts_pending ON run_interrupts (created_at) WHERE claimed_at IS NULL;
CREATE INDEX run_interrupts_deadline ON run_interrupts (deadline) WHERE claimed_at IS NULL AND deadline IS NOT NULL;
