-- Versions say how they were made, so the history can fold a burst of
-- autosaves into one row and show the versions a person named.
--
-- kind: 'autosave' (the designer saved an edit by itself), 'named' (a person
-- saved the version with a name: "Save version…", POST /v1/chains/{id}/versions)
-- or 'save' (anything else: created, updated or imported through the API or
-- the CLI, restored).
--
-- Before this column the designer's autosaves were told apart only by their
-- message, which it always wrote as 'edited in the designer'; they are marked
-- from it once, here. Every later version says its kind itself.

ALTER TABLE chain_versions ADD COLUMN kind VARCHAR(16) NOT NULL DEFAULT 'save';
UPDATE chain_versions SET kind = 'autosave' WHERE message = 'edited in the designer';
