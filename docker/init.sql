-- docker/init.sql: run once by the postgres image's entrypoint, as the
-- superuser in database "postgres", when the data directory is empty.
-- pg_cron and kafka_lake are preloaded by the compose command
-- (shared_preload_libraries; kafka_lake so that it keeps the secrets of user
-- mappings out of the server log); pg_cron schedules jobs in this database
-- (cron.database_name=postgres).

CREATE EXTENSION IF NOT EXISTS pg_cron;

-- kafka_lake requires btree_gist; CASCADE installs it.
CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE;

-- The compose network's broker.  Other librdkafka properties go in OPTIONS;
-- credentials go in a USER MAPPING (see docker/README.md).
CREATE SERVER plant_kafka FOREIGN DATA WRAPPER kafka_lake
    OPTIONS (brokers 'kafka:9092');
