-- Version 2: ownership of an executing run (docs/deploy.md, "Ownership").
--
-- owner:            which process executes the run (its application name and a
--                   random id), for people reading the table.
-- epoch:            bumped by every take of the run (a job starting, a resume's
--                   claim, the reaper's takeover); every checkpoint and event
--                   write of the run checks it, so a process that lost the run
--                   can never write again.
-- lease_until:      unix microseconds; the owner's heartbeat moves it on. A
--                   running run whose lease passed is taken over by the reaper.
-- cancel_requested: set with River's cancel of the run's job; the heartbeat
--                   reads it, so a cancel lands even with notifications lost.
ALTER TABLE runs
    ADD COLUMN owner            VARCHAR(256),
    ADD COLUMN epoch            BIGINT  NOT NULL DEFAULT 0,
    ADD COLUMN lease_until      BIGINT,
    ADD COLUMN cancel_requested BOOLEAN NOT NULL DEFAULT FALSE;
