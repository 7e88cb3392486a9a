/* sql/kafka_lake--1.12--1.13.sql
 *
 * Upgrade of kafka_lake 1.12 to 1.13.  The scripts up to 1.12 are released
 * and never change: every catalog or function change of 1.13 is made here, so
 * that a database created at an earlier version and one created at 1.13 end
 * with the same objects (test/t/99i_upgrade_1_13.sh checks the path).
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kafka_lake UPDATE TO '1.13'" to load this file. \quit

-- Ordered event keys
--
-- accepted_events keys each accepted event_id by 16 bytes whose B-tree
-- decides I3.  Up to 1.12 the key was a hash (the first 16 bytes of
-- SHA-256(source_id || event_id)), which scatters a landing's inserts and
-- probes over the whole index: once it outgrows shared_buffers, a source
-- lands slower the more it holds.  A source made from 1.13 on keys 'ordered':
-- its source_id, then the event_id itself packed 6 bits a character when it
-- is made of [-0-9A-Z_a-z] and fits (20 characters for the first 127
-- sources), else the hash (src/base/digest.c).  Time-ordered event_ids then
-- go to the index's right edge.  A source's key scheme never changes: the
-- sources that exist keep 'hashed', under which their rows are keyed, and
-- create_source() says 'ordered' for a new one.  The default stays 'hashed'
-- so that the rows of a dump of an older catalog (which lack the column)
-- are restored as what they are.
ALTER TABLE kafka_lake.sources ADD COLUMN event_keys text NOT NULL DEFAULT 'hashed'
    CONSTRAINT sources_event_keys_check CHECK (event_keys IN ('hashed', 'ordered'));
COMMENT ON COLUMN kafka_lake.sources.event_keys IS
  'How accepted_events keys the source''s event_ids: ordered (the event_id packed when it can be, from 1.13) or hashed (SHA-256; sources made before 1.13); fixed once the source has landed';

-- event_key() follows the source's scheme, so the library computes it (the
-- same errors as before: 22004 for a NULL, 42704 for an unknown source).  Its
-- privileges stay: not executable by PUBLIC.
CREATE OR REPLACE FUNCTION kafka_lake.event_key(source text, event_id text)
RETURNS uuid
LANGUAGE C STABLE
AS 'MODULE_PATHNAME', 'kafka_lake_event_key';

-- A source keeps its scheme for life: its accepted_events rows are keyed by
-- it, and under another scheme an event_id it accepted would not be found,
-- and would be accepted again (I3).  So event_keys changes only while the
-- source has landed nothing.
CREATE FUNCTION kafka_lake.sources_event_keys_fixed()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NEW.event_keys IS DISTINCT FROM OLD.event_keys
       AND EXISTS (SELECT 1 FROM kafka_lake.batches b WHERE b.source_id = OLD.source_id) THEN
        RAISE EXCEPTION 'source "%" keeps its event_keys %', OLD.source, OLD.event_keys
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'Its accepted event_ids are keyed so; under another scheme a redelivered one would be accepted again.',
                  HINT = 'To key a topic''s event_ids another way, land it into a new source.';
    END IF;
    RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION kafka_lake.sources_event_keys_fixed() FROM PUBLIC;
COMMENT ON FUNCTION kafka_lake.sources_event_keys_fixed() IS
  'Refuses a change of sources.event_keys once the source has landed a batch';
CREATE TRIGGER sources_event_keys_fixed BEFORE UPDATE OF event_keys ON kafka_lake.sources
    FOR EACH ROW EXECUTE FUNCTION kafka_lake.sources_event_keys_fixed();
