-- test/pgtap/51_bridge_csv.sql -- the canonical CSV bytes and source_hash
--
-- Needs a running test broker: KL_BOOTSTRAP, KL_BROKER, KL_BROKER_DIR.
-- Self-contained, not wrapped in a transaction.
--
-- Part 1, golden bytes: events whose fields hold a comma, a quote, a line
-- feed, a carriage return, non-ASCII text (identifiers lower-cased as Python's
-- str.lower() does: Überwerk becomes überwerk), a null key and a key that is not
-- UTF-8.  The expected file is written out here byte for byte; only the
-- broker's timestamps and the fingerprints (which depend on them) are taken
-- from the landed records, because produce() lets the broker stamp the time.
--
-- Part 2, a pinned source_hash.  For the whole CSV to be fixed, the
-- timestamps must be too, so this part does not use produce(): it fills a
-- topic of a fixed name with the broker's own generator
-- (kafka_lake_broker fill --timestamp event), whose keys, values and
-- timestamps are functions of the event number alone.  The topic is filled
-- only by the run that creates it, so every run (and every fresh broker)
-- sees the same three records at offsets 0..2, and the same bytes.  The
-- pinned hash was cross-checked against Python's csv module (the seed's
-- reference dialect: csv.writer(lineterminator="\n")) over the landed
-- accepted.jsonl.

\getenv bootstrap KL_BOOTSTRAP
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE;

SELECT to_char(clock_timestamp(), 'YYYYMMDDHH24MISSUS') AS tok \gset
\set topic 'kafka_lake.test51.csv.' :tok
\set source 't51_csv_' :tok
\set pinned_source 't51_pin_' :tok
\set records :source '_records'
\set pinned_topic 'kafka_lake.test51.pinned.v1'
\setenv KL_T51_TOPIC :topic
\setenv KL_T51_PINNED :pinned_topic
\! "$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$KL_T51_TOPIC" 1 >/dev/null
\! "$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$KL_T51_PINNED" 1 >/dev/null 2>&1 && "$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$KL_T51_PINNED" --count 3 --date 2026-07-02 --machines 3 --timestamp event >/dev/null 2>&1

DROP SERVER IF EXISTS t51_kafka CASCADE;
CREATE SERVER t51_kafka FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers :'bootstrap');
SELECT kafka_lake.create_source(:'source', 't51_kafka', :'topic') \g /dev/null
SELECT kafka_lake.create_source(:'pinned_source', 't51_kafka', :'pinned_topic') \g /dev/null

CREATE FUNCTION pg_temp.event(event_id text, event_time text, plant_id text, line_id text,
                              work_order_id text, machine_id text, product_code text,
                              units int, defects int, cycle_ms int) RETURNS bytea
LANGUAGE sql AS $$
    SELECT convert_to(json_build_object(
        'event_id', event_id, 'schema_version', 1, 'event_time', event_time,
        'business_date', '2026-07-01', 'plant_id', plant_id, 'line_id', line_id,
        'work_order_id', work_order_id, 'machine_id', machine_id,
        'product_code', product_code, 'operation', 'assembly',
        'units_produced', units, 'defect_count', defects, 'cycle_time_ms', cycle_ms)::text, 'UTF8')
$$;

CREATE FUNCTION pg_temp.landing_path(rel text) RETURNS text
LANGUAGE sql AS $$
    SELECT CASE WHEN current_setting('kafka_lake.landing_dir') LIKE '/%' THEN ''
                ELSE current_setting('data_directory') || '/' END
           || current_setting('kafka_lake.landing_dir') || '/' || rel
$$;

SELECT plan(16);

-- part 1: golden bytes
SELECT is(array[
    kafka_lake.produce('t51_kafka', :'topic',
        pg_temp.event('evt-51-comma,"quoted"', '2026-07-01T08:00:00+09:00', '  Plant, North  ',
                      'line-01', 'wo-1', 'm-1', 'prd-a', 10, 1, 1500),
        convert_to('k,1', 'UTF8')),
    kafka_lake.produce('t51_kafka', :'topic',
        pg_temp.event('evt-51-lf', '2026-07-01T08:01:00+09:00', E'plant\nsouth',
                      'line-"2"', 'wo-2', 'm-2', 'prd-a', 20, 2, 1600),
        convert_to('k"2', 'UTF8')),
    kafka_lake.produce('t51_kafka', :'topic',
        pg_temp.event(E'evt-51-cr\rx', '2026-07-01T08:02:00+09:00', 'plant-01',
                      'line-03', 'wo-3', 'm-3', 'prd-a', 30, 3, 1700),
        NULL),
    kafka_lake.produce('t51_kafka', :'topic',
        pg_temp.event('evt-51-ünïcødé-日本', '2026-07-01T08:03:00+09:00', 'Überwerk',
                      'line-04', 'wo-4', 'm-4', 'PRD-É', 40, 4, 1800),
        convert_to('ключ', 'UTF8')),
    kafka_lake.produce('t51_kafka', :'topic',
        pg_temp.event('evt-51-b64', '2026-07-01T08:04:00+09:00', 'plant-01',
                      'line-05', 'wo-5', 'm-5', 'prd-a', 50, 5, 1900),
        '\xfffe3031'::bytea),
    kafka_lake.produce('t51_kafka', :'topic',
        pg_temp.event('evt-51-emoji-😀', '2026-07-01T08:05:00.123+09:00', 'plant-01',
                      'line-06', 'wo-6', 'm-6', 'prd-a', 60, 6, 2000),
        convert_to('🔑', 'UTF8'))],
    '{0,1,2,3,4,5}'::bigint[], 'six events with awkward fields produced');
SELECT is((SELECT sum(accepted)::int FROM kafka_lake.land(:'source')), 6, 'all six are accepted');

SELECT max(timestamp_ms) FILTER (WHERE "offset" = 0) AS ts0, max(fingerprint) FILTER (WHERE "offset" = 0) AS fp0,
       max(timestamp_ms) FILTER (WHERE "offset" = 1) AS ts1, max(fingerprint) FILTER (WHERE "offset" = 1) AS fp1,
       max(timestamp_ms) FILTER (WHERE "offset" = 2) AS ts2, max(fingerprint) FILTER (WHERE "offset" = 2) AS fp2,
       max(timestamp_ms) FILTER (WHERE "offset" = 3) AS ts3, max(fingerprint) FILTER (WHERE "offset" = 3) AS fp3,
       max(timestamp_ms) FILTER (WHERE "offset" = 4) AS ts4, max(fingerprint) FILTER (WHERE "offset" = 4) AS fp4,
       max(timestamp_ms) FILTER (WHERE "offset" = 5) AS ts5, max(fingerprint) FILTER (WHERE "offset" = 5) AS fp5
FROM kafka_lake.:"records" \gset

CREATE TEMP TABLE csv_bridge AS SELECT * FROM kafka_lake.bridge(:'source', '2026-07-01');
SELECT pg_temp.landing_path(a.path) AS csv_path
FROM kafka_lake.adapter_versions a JOIN kafka_lake.sources s USING (source_id)
WHERE s.source = :'source' \gset

SELECT is(pg_read_file(:'csv_path'),
    'event_time,plant_id,line_id,work_order_id,machine_id,product_code,operation,units_produced,defect_count,cycle_time_ms,business_date,event_id,schema_version,kafka_topic,kafka_partition,kafka_offset,kafka_key,kafka_timestamp_ms,kafka_record_fingerprint' || E'\n'
    || format(E'2026-07-01T08:00:00+09:00,"plant, north",line-01,wo-1,m-1,prd-a,assembly,10,1,1500,2026-07-01,"evt-51-comma,""quoted""",1,%s,0,0,"k,1",%s,%s\n', :'topic', :'ts0', :'fp0')
    || format(E'2026-07-01T08:01:00+09:00,"plant\nsouth","line-""2""",wo-2,m-2,prd-a,assembly,20,2,1600,2026-07-01,evt-51-lf,1,%s,0,1,"k""2",%s,%s\n', :'topic', :'ts1', :'fp1')
    || format(E'2026-07-01T08:02:00+09:00,plant-01,line-03,wo-3,m-3,prd-a,assembly,30,3,1700,2026-07-01,evt-51-cr\rx,1,%s,0,2,,%s,%s\n', :'topic', :'ts2', :'fp2')
    || format(E'2026-07-01T08:03:00+09:00,überwerk,line-04,wo-4,m-4,prd-é,assembly,40,4,1800,2026-07-01,evt-51-ünïcødé-日本,1,%s,0,3,ключ,%s,%s\n', :'topic', :'ts3', :'fp3')
    || format(E'2026-07-01T08:04:00+09:00,plant-01,line-05,wo-5,m-5,prd-a,assembly,50,5,1900,2026-07-01,evt-51-b64,1,%s,0,4,//4wMQ==,%s,%s\n', :'topic', :'ts4', :'fp4')
    || format(E'2026-07-01T08:05:00.123+09:00,plant-01,line-06,wo-6,m-6,prd-a,assembly,60,6,2000,2026-07-01,evt-51-emoji-😀,1,%s,0,5,🔑,%s,%s\n', :'topic', :'ts5', :'fp5'),
    'events.csv holds exactly the canonical bytes: quotes only around , " and LF, CR as is, UTF-8 (also outside the BMP), empty null key, base64 key');
SELECT is(encode(sha256(pg_read_binary_file(:'csv_path')), 'hex'), (SELECT source_hash FROM csv_bridge),
          'source_hash is the SHA-256 of those bytes');
SELECT results_eq($$SELECT run_status, quality_passed, silver_rows FROM csv_bridge$$,
                  $$VALUES ('processed'::text, 8, 6)$$, 'the awkward events pass the checks into silver');

-- silver holds the values the CSV quotes, unquoted
SELECT is((SELECT event_time FROM kafka_lake.silver_machine_events
           WHERE run_id = (SELECT run_id FROM csv_bridge) AND kafka_offset = 5),
          '2026-07-01T08:05:00.123+09:00'::timestamptz, 'silver: a fractional event_time, as an instant');
SELECT results_eq(
    $$SELECT event_id, plant_id, line_id, product_code, kafka_key
      FROM kafka_lake.silver_machine_events WHERE run_id = (SELECT run_id FROM csv_bridge)
      ORDER BY kafka_offset$$,
    $$VALUES ('evt-51-comma,"quoted"', 'plant, north', 'line-01', 'prd-a', 'k,1'),
             ('evt-51-lf', E'plant\nsouth', 'line-"2"', 'prd-a', 'k"2'),
             (E'evt-51-cr\rx', 'plant-01', 'line-03', 'prd-a', NULL),
             ('evt-51-ünïcødé-日本', 'überwerk', 'line-04', 'prd-é', 'ключ'),
             ('evt-51-b64', 'plant-01', 'line-05', 'prd-a', '//4wMQ=='),
             ('evt-51-emoji-😀', 'plant-01', 'line-06', 'prd-a', '🔑')$$,
    'silver: the same values, read back from the CSV');
SELECT is((SELECT count(*)::int FROM kafka_lake.silver_machine_events
           WHERE run_id = (SELECT run_id FROM csv_bridge) AND kafka_timestamp_ms IS NOT NULL), 6,
          'silver: the broker timestamps');

-- the bytes do not depend on the session: same input, same hash
SET TimeZone = 'America/Los_Angeles';
SET DateStyle = 'SQL, DMY';
SET extra_float_digits = 0;
SELECT results_eq(
    format($$SELECT source_hash, adapter_status, run_status FROM kafka_lake.bridge(%L, '2026-07-01')$$, :'source'),
    $$SELECT source_hash, 'reused'::text, 'skipped'::text FROM csv_bridge$$,
    'a session with other TimeZone and DateStyle gets the same source_hash');
RESET TimeZone;
RESET DateStyle;
RESET extra_float_digits;

-- part 2: a pinned source_hash
SELECT is((SELECT sum(accepted)::int FROM kafka_lake.land(:'pinned_source')), 3,
          'pinned: the three generated events are accepted');
CREATE TEMP TABLE pinned_bridge AS SELECT * FROM kafka_lake.bridge(:'pinned_source', '2026-07-02');
SELECT is((SELECT source_hash FROM pinned_bridge),
          '228bfc62544b9d774ad02c6a764b16d141e5c138533d91001d9cb44c8e6715c2',
          'pinned: source_hash of the fixed landing');
SELECT pg_temp.landing_path(a.path) AS pinned_path
FROM kafka_lake.adapter_versions a JOIN kafka_lake.sources s USING (source_id)
WHERE s.source = :'pinned_source' \gset
SELECT is(split_part(pg_read_file(:'pinned_path'), E'\n', 2),
          '2026-07-02T08:00:01+09:00,plant-01,line-03,wo-000001,machine-003,prd-a,welding,29,1,3130,2026-07-02,evt-20260702-000001,1,kafka_lake.test51.pinned.v1,0,0,machine-003,1782946801000,ff5181e11f63a6b02321e2ca573bfd9adb6facf3a570c4c72dc5ec3a62be8f2d',
          'pinned: the first event''s line');
SELECT is(length(pg_read_binary_file(:'pinned_path')), 988, 'pinned: the file''s size');
SELECT results_eq($$SELECT selected_events, run_status, silver_rows FROM pinned_bridge$$,
                  $$VALUES (3, 'processed'::text, 3)$$, 'pinned: processed');

-- the pinned events, once more through another source: same bytes, same hash
SELECT kafka_lake.create_source(:'pinned_source' || '_b', 't51_kafka', :'pinned_topic') \g /dev/null
SELECT is((SELECT sum(accepted)::int FROM kafka_lake.land(:'pinned_source' || '_b')), 3,
          'pinned: a second source lands the same three records');
SELECT is((SELECT source_hash FROM kafka_lake.bridge(:'pinned_source' || '_b', '2026-07-02')),
          (SELECT source_hash FROM pinned_bridge),
          'pinned: same landing, same source_hash');

SELECT * FROM finish();

SELECT kafka_lake.drop_source(:'source', drop_landing => true) \g /dev/null
SELECT kafka_lake.drop_source(:'pinned_source', drop_landing => true) \g /dev/null
SELECT kafka_lake.drop_source(:'pinned_source' || '_b', drop_landing => true) \g /dev/null
DROP SERVER t51_kafka CASCADE;
