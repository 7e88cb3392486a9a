/* sql/kafka_lake--1.3--1.4.sql
 *
 * Upgrade of kafka_lake 1.3 to 1.4.  The scripts up to 1.3 are released and
 * never change: every catalog or function change of 1.4 is made here, so
 * that a database created at an earlier version and one created at 1.4 end
 * with the same objects (test/t/35_upgrade.sh, test/t/92_upgrade_1_1.sh,
 * test/t/93_upgrade_1_3.sh and test/t/97_upgrade_1_4.sh check the paths).
 * Everything landed and bridged before stays readable, verifiable and
 * bridgeable.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kafka_lake UPDATE TO '1.4'" to load this file. \quit

-- schemas by registry and by GUID
--
-- A registry is its URL: a schema id is kept once per registry URL, whichever
-- server fetched it first (server says which), so that a server renamed, or
-- a second server of the same registry, is served from the catalog too (1.3
-- kept it per server name: a renamed server asked the registry again, and
-- could not while it was down).  Of the rows 1.3 kept twice for two servers
-- of one URL, the one fetched first stays.  A schema that records name by its
-- GUID (magic byte 1, or a __value_schema_id header of Confluent's newer
-- clients) has the GUID here, so that its records decode without the registry.
DELETE FROM kafka_lake.schemas a
 USING kafka_lake.schemas b
 WHERE a.registry_url = b.registry_url AND a.schema_id = b.schema_id
   AND (a.fetched_at, a.server) > (b.fetched_at, b.server);
ALTER TABLE kafka_lake.schemas DROP CONSTRAINT schemas_pkey;
ALTER TABLE kafka_lake.schemas ADD PRIMARY KEY (registry_url, schema_id);
ALTER TABLE kafka_lake.schemas ADD COLUMN guid uuid;
DROP INDEX kafka_lake.schemas_subject;
CREATE INDEX schemas_subject ON kafka_lake.schemas (registry_url, subject, version);
CREATE INDEX schemas_guid ON kafka_lake.schemas (registry_url, guid) WHERE guid IS NOT NULL;
COMMENT ON TABLE kafka_lake.schemas IS
  'Schemas fetched from schema registries, one row per registry URL and schema id, kept for good (a schema id never changes)';
COMMENT ON COLUMN kafka_lake.schemas.server IS
  'The server through which the schema was first fetched';
COMMENT ON COLUMN kafka_lake.schemas.guid IS
  'The schema''s GUID, once a record named it by GUID';
