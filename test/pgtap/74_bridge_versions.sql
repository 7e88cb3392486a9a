-- test/pgtap/74_bridge_versions.sql: a topic's life reaches gold.  An orders topic whose
-- contract moves on in the middle of a business date, and whose quarantined orders are
-- re-admitted under a fixed version, is bridged and closed at every step:
--   * moving the source to a new version does not change a bridged date: the same records
--     bridge to the same source_hash (skipped), whatever version the source lands with now;
--   * a date of two versions bridges: the CSV has the newest version's fields, then those
--     only an older one has, a field a version lacks is an empty field; silver gains a
--     column for the new field in the bridge's transaction;
--   * re-admitted orders reach gold once; on a closed date only with reopen => true, and
--     late_events lists them until then;
--   * a field that changes type (integer to string) changes silver's column to text, the
--     rows bridged before read the same; a column that cannot follow is 42804 with the way on;
--   * verify() is clean after each step.
-- Needs the broker.
SELECT plan(57);
SET check_function_bodies = off;

CREATE FUNCTION pg_temp.produce(id text, country text, qty int, amount text, day text DEFAULT '2026-08-01',
                                extra text DEFAULT '') RETURNS void LANGUAGE sql AS $$
  SELECT kafka_lake.produce('v74_srv', 'v74.orders', convert_to(format(
    '{"order_id": "%s", "day": "%s", "country": "%s", "qty": %s, "amount": %s%s}',
    id, day, country, qty, amount, extra), 'UTF8'))
$$;
CREATE FUNCTION pg_temp.contract(amount text, extra text DEFAULT '') RETURNS json LANGUAGE sql AS $$
  SELECT format('{"type": "object",
    "properties": {"order_id": {"type": "string"}, "day": {"type": "string", "format": "date"},
                   "country": {"type": "string"}, "qty": {"type": "integer"},
                   "amount": %s%s},
    "required": ["order_id", "day", "country", "qty", "amount"], "event_id": "order_id",
    "business_date": {"field": "day"}, "natural_key": ["order_id"]}', amount, extra)::json
$$;
CREATE FUNCTION pg_temp.gold() RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(format('%s %s %s', country, qty, orders), '; ' ORDER BY country)
    FROM kafka_lake.v74_by_country_current WHERE business_date = '2026-08-01'
$$;
CREATE FUNCTION pg_temp.last_run() RETURNS text LANGUAGE sql AS $$
  SELECT run_id FROM kafka_lake.snapshots s JOIN kafka_lake.sources USING (source_id)
   WHERE source = 'v74' AND business_date = '2026-08-01' ORDER BY snapshot_id DESC LIMIT 1
$$;
CREATE FUNCTION pg_temp.detail_of(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE d text;
BEGIN
  EXECUTE sql;
  RETURN NULL;
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
  RETURN d;
END $$;
CREATE FUNCTION pg_temp.hint_of(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE h text;
BEGIN
  EXECUTE sql;
  RETURN NULL;
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS h = PG_EXCEPTION_HINT;
  RETURN h;
END $$;
CREATE FUNCTION pg_temp.bridged(date text DEFAULT '2026-08-01', reopen boolean DEFAULT false) RETURNS text
LANGUAGE sql AS $$
  SELECT run_status || ' ' || snapshot_status FROM kafka_lake.bridge('v74', date::date, reopen => reopen)
$$;
CREATE FUNCTION pg_temp.silver_columns() RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod) || CASE WHEN attnotnull THEN '!' ELSE '' END,
                    ', ' ORDER BY attnum)
    FROM pg_attribute WHERE attrelid = 'kafka_lake.v74_silver'::regclass AND attnum > 0 AND NOT attisdropped
$$;

\o /dev/null
SELECT kl_test.server('v74_srv');
SELECT kl_test.broker('create v74.orders 1');
-- version 1: an amount of at most 100
SELECT kafka_lake.create_contract('v74', pg_temp.contract('{"type": "integer", "maximum": 100}'));
SELECT kafka_lake.create_source('v74', 'v74_srv', 'v74.orders', contract => 'v74');
SELECT kafka_lake.define_gold('v74', 'v74_by_country', ARRAY['country'],
                              '{"qty": {"sum": "qty"}, "orders": {"count": "*"}}');
SELECT pg_temp.produce('o-1', 'DE', 1, '10');
SELECT pg_temp.produce('o-2', 'FR', 2, '20');
SELECT pg_temp.produce('o-3', 'DE', 3, '150');            -- quarantined by version 1
SELECT pg_temp.produce('o-9', 'DE', 9, '90', '2026-08-02');
SELECT * FROM kafka_lake.land('v74');
\o

SELECT is(pg_temp.bridged(), 'processed published', 'version 1: the date bridges');
SELECT is(pg_temp.bridged('2026-08-02'), 'processed published', 'version 1: the next date bridges');
SELECT is(pg_temp.gold(), 'DE 1 1; FR 2 1', 'the quarantined order is not in gold');
CREATE TEMP TABLE hashes AS
  SELECT business_date, source_hash FROM kafka_lake.adapter_versions a
    JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'v74';

-- version 2: an optional channel; moving the source changes no bridged date
\o /dev/null
SELECT kafka_lake.create_contract('v74', pg_temp.contract('{"type": "integer", "maximum": 100}',
                                  ', "channel": {"type": "string"}'));
SELECT kafka_lake.alter_source('v74', 'v74');
\o
SELECT is(pg_temp.bridged(), 'skipped skipped',
          'after alter_source the same records bridge to the same source_hash: skipped');
SELECT is((SELECT count(*)::int FROM kafka_lake.adapter_versions a JOIN kafka_lake.sources s USING (source_id)
            WHERE s.source = 'v74'), 2, 'no new adapter version');

-- a version-2 order of the same date: the date holds both versions
\o /dev/null
SELECT pg_temp.produce('o-4', 'FR', 4, '40', extra => ', "channel": "web"');
SELECT * FROM kafka_lake.land('v74');
\o
SELECT is(pg_temp.bridged(), 'processed published', 'a date of two contract versions bridges');

SELECT is(pg_temp.silver_columns(),
          'run_id text!, business_date date!, day date!, country text!, qty bigint!, '
          'amount bigint!, order_id text!, kafka_topic text!, kafka_partition integer!, kafka_offset bigint!, kafka_key text, '
          'kafka_timestamp_ms bigint, kafka_record_fingerprint text!, channel text',
          'silver gained a nullable column for the new field');
SELECT is((SELECT string_agg(order_id || ':' || coalesce(channel, '-'), ' ' ORDER BY order_id)
             FROM kafka_lake.v74_silver WHERE run_id = pg_temp.last_run()),
          'o-1:- o-2:- o-4:web', 'a field version 1 lacks is null in its rows');
SELECT is(pg_temp.gold(), 'DE 1 1; FR 6 2', 'gold counts the version-2 order');
SELECT alike((SELECT pg_read_file(kl_test.landing('v74') || '/' || regexp_replace(a.path, '^v74/', ''))
               FROM kafka_lake.adapter_versions a JOIN kafka_lake.sources s USING (source_id)
              WHERE s.source = 'v74' ORDER BY a.created_at DESC LIMIT 1),
            'day,country,qty,amount,channel,order_id,kafka_topic,%',
            'the CSV has the newest version''s fields, event_id last');
SELECT is((SELECT passed FROM kafka_lake.quality_results q JOIN kafka_lake.runs r USING (run_id)
            WHERE q.check_name = 'schema_drift' ORDER BY r.finished_at DESC LIMIT 1), true,
          'schema_drift passes on the followed silver');
SELECT is((SELECT count(*)::int FROM kafka_lake.verify('v74')), 0, 'verify() is clean');

-- the date is closed; version 3 accepts the quarantined order, readmit() brings it back
SELECT is((SELECT status FROM kafka_lake.close_date('v74', '2026-08-01', timeout => '10 s')), 'closed',
          'the date of two versions closes');
\o /dev/null
SELECT kafka_lake.create_contract('v74', pg_temp.contract('{"type": "integer"}',
                                  ', "channel": {"type": "string"}'));
SELECT kafka_lake.alter_source('v74', 'v74');
\o
SELECT is((SELECT string_agg(status || ' ' || accepted, ',') FROM kafka_lake.readmit('v74')), 'readmitted 1',
          'readmit() re-admits the order under version 3');
SELECT is((SELECT string_agg(event_id, ',') FROM kafka_lake.late_events WHERE source = 'v74'), 'o-3',
          'late_events lists the re-admitted order of the closed date');
SELECT throws_ok($$SELECT * FROM kafka_lake.bridge('v74', '2026-08-01')$$, '55000', NULL,
                 'the closed date that gained a re-admitted order needs reopen (55000)');
SELECT is(pg_temp.gold(), 'DE 1 1; FR 6 2', 'the closed gold is unchanged');
SELECT is(pg_temp.bridged(reopen => true), 'processed published', 'reopen publishes the correction');
SELECT is(pg_temp.gold(), 'DE 4 2; FR 6 2', 'the re-admitted order is in gold, once');
SELECT is((SELECT count(*)::int FROM kafka_lake.v74_silver WHERE run_id = pg_temp.last_run() AND order_id = 'o-3'),
          1, 'silver holds the re-admitted order once');
SELECT is(pg_temp.bridged(reopen => true), 'skipped skipped', 'bridging it again changes nothing');
SELECT is((SELECT count(*)::int FROM kafka_lake.verify('v74')), 0, 'verify() is clean');

-- version 4: amount becomes a string: silver's column becomes text
\o /dev/null
SELECT kafka_lake.create_contract('v74', pg_temp.contract('{"type": "string"}',
                                  ', "channel": {"type": "string"}'));
SELECT kafka_lake.alter_source('v74', 'v74');
SELECT pg_temp.produce('o-5', 'DE', 5, '"55 EUR"');
SELECT * FROM kafka_lake.land('v74');
\o
SELECT is(pg_temp.bridged(reopen => true), 'processed published', 'a date whose field changed type bridges');
SELECT is((SELECT format_type(atttypid, atttypmod) FROM pg_attribute
            WHERE attrelid = 'kafka_lake.v74_silver'::regclass AND attname = 'amount'), 'text',
          'silver''s column follows the field to text');
SELECT is((SELECT string_agg(order_id || '=' || amount, ' ' ORDER BY order_id)
             FROM kafka_lake.v74_silver WHERE run_id = pg_temp.last_run()),
          'o-1=10 o-2=20 o-3=150 o-4=40 o-5=55 EUR', 'older integers and the new strings in one column');
SELECT is((SELECT count(*)::int FROM kafka_lake.v74_silver WHERE amount IS NULL), 0,
          'the rows bridged before kept their amounts');
SELECT is(pg_temp.gold(), 'DE 9 3; FR 6 2', 'gold of the date');
SELECT is(pg_temp.bridged('2026-08-02'), 'skipped skipped', 'the version-1 date still bridges to its source_hash');
SELECT is((SELECT count(*)::int FROM kafka_lake.adapter_versions a JOIN kafka_lake.sources s USING (source_id)
             JOIN hashes h USING (business_date, source_hash) WHERE s.source = 'v74'), 2,
          'both first adapter versions are still there');
SELECT is((SELECT count(*)::int FROM kafka_lake.verify('v74')), 0, 'verify() is clean');

-- a column that cannot follow: the error says the way on
ALTER TABLE kafka_lake.v74_silver ALTER COLUMN qty TYPE boolean USING qty > 0;
\o /dev/null
SELECT pg_temp.produce('o-6', 'DE', 6, '"6"');
SELECT * FROM kafka_lake.land('v74');
\o
SELECT throws_ok($$SELECT * FROM kafka_lake.bridge('v74', '2026-08-01', reopen => true)$$, '42804', NULL,
                 'a silver column that reads neither way is 42804');
SELECT alike(pg_temp.hint_of($$SELECT * FROM kafka_lake.bridge('v74', '2026-08-01', reopen => true)$$),
            '%RENAME TO%', 'the hint gives the way on');
ALTER TABLE kafka_lake.v74_silver RENAME TO v74_silver_v1;
SELECT is(pg_temp.bridged(reopen => true), 'processed published', 'after the rename the bridge makes silver again');

SELECT is(pg_temp.gold(), 'DE 15 4; FR 6 2', 'and gold');

-- a wrong accepted order set aside: its corrected re-send, landed as a duplicate, is
-- promoted; the gold is corrected in a new snapshot, the old one stays readable
\o /dev/null
SELECT pg_temp.produce('o-2', 'FR', 12, '"20"');
SELECT * FROM kafka_lake.land('v74');
\o
SELECT is(pg_temp.bridged(reopen => true), 'skipped skipped', 'a re-send that lands as a duplicate changes nothing');
CREATE TEMP TABLE old_snapshot AS
  SELECT snapshot_id FROM kafka_lake.v74_by_country_current WHERE business_date = '2026-08-01' LIMIT 1;
SELECT is((SELECT string_agg(action, ',' ORDER BY action)
             FROM kafka_lake.exclude('v74', event_id => 'o-2', reason => 'wrong quantity')),
          'excluded,promoted', 'exclude() sets the wrong order aside and promotes its re-send');
SELECT is(pg_temp.bridged(reopen => true), 'processed published', 'the date bridges again');
SELECT is(pg_temp.gold(), 'DE 15 4; FR 16 2', 'gold counts the corrected order, once');
SELECT is((SELECT string_agg(format('%s %s %s', country, qty, orders), '; ' ORDER BY country)
             FROM kafka_lake.v74_by_country_as_of((SELECT snapshot_id FROM old_snapshot))),
          'DE 15 4; FR 6 2', 'the snapshot before the correction still reads as it was');
SELECT is((SELECT count(*)::int FROM kafka_lake.verify('v74')), 0, 'verify() is clean');

-- an order set aside without a re-send: the one that arrives later is accepted
SELECT is((SELECT string_agg(action, ',' ORDER BY action)
             FROM kafka_lake.exclude('v74', event_id => 'o-4', reason => 'cancelled by the shop')),
          'excluded,released', 'an order without a duplicate is released');
\o /dev/null
SELECT pg_temp.produce('o-4', 'FR', 14, '"40"');
SELECT * FROM kafka_lake.land('v74');
\o
SELECT is((SELECT status FROM kafka_lake.v74_records WHERE event_id = 'o-4' AND event->>'qty' = '14'), 'accepted',
          'the later re-send is accepted');
SELECT is(pg_temp.bridged(reopen => true), 'processed published', 'and bridged');
SELECT is(pg_temp.gold(), 'DE 15 4; FR 26 2', 'gold counts it once');

-- on a closed date an exclusion is a correction: reopen => true
SELECT is((SELECT status FROM kafka_lake.close_date('v74', '2026-08-01', timeout => '10 s')), 'closed',
          'the date closes again');
SELECT is((SELECT string_agg(action, ',') FROM kafka_lake.exclude('v74', event_id => 'o-6', reason => 'test order')),
          'excluded,released', 'an order of the closed date is set aside');
SELECT throws_ok($$SELECT * FROM kafka_lake.bridge('v74', '2026-08-01')$$, '55000', NULL,
                 'the closed date that lost an order needs reopen (55000)');
SELECT is(pg_temp.bridged(reopen => true), 'processed published', 'reopen publishes the correction');
SELECT is(pg_temp.gold(), 'DE 9 3; FR 26 2', 'without the excluded order');
SELECT is((SELECT string_agg(action, ',') FROM kafka_lake.unexclude('v74', event_id => 'o-6', reason => 'a real order after all')), 'restored',
          'unexclude() puts it back');
SELECT is(pg_temp.bridged(reopen => true), 'processed published', 'the date bridges with it');
SELECT is(pg_temp.gold(), 'DE 15 4; FR 26 2', 'and counts it once');
SELECT is((SELECT count(*)::int FROM kafka_lake.verify('v74')), 0, 'verify() is clean');

-- a gold over a field a later version added: a date of the versions before refuses it,
-- saying which versions the date holds; dropped, the date bridges again
\o /dev/null
SELECT kafka_lake.define_gold('v74', 'v74_by_channel', ARRAY['channel'], '{"orders": {"count": "*"}}');
\o
SELECT throws_ok($$SELECT * FROM kafka_lake.bridge('v74', '2026-08-02', recheck => true)$$, '42703', NULL,
                 'a gold over a field the date''s versions lack is 42703');
SELECT alike(pg_temp.detail_of($$SELECT * FROM kafka_lake.bridge('v74', '2026-08-02', recheck => true)$$),
             '%judged by version 1 of the contract%', 'the detail names the date''s versions');
SELECT lives_ok($$SELECT kafka_lake.drop_gold('v74', 'v74_by_channel')$$, 'drop_gold');
SELECT is((SELECT run_status FROM kafka_lake.bridge('v74', '2026-08-02', recheck => true)), 'skipped',
          'without it the date rechecks to what it published');

SELECT * FROM finish();
