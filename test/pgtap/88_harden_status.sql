-- test/pgtap/88_harden_status.sql: what a new user meets of a source's state is true for any
-- contract.  kafka_lake.late_events lists a late order of a closed date (the order's event_id
-- and business date are the line's own, not fields of "event", as only the seed's contract has
-- them), after a reopen too, and only to roles that may read the source.  source_status counts
-- a record that readmit() re-admitted once: where it is now (accepted), no longer as
-- quarantined, so an alert on quarantined > 0 clears after a fix and a readmit.  Needs the
-- broker.
SELECT plan(13);

\o /dev/null
SELECT kl_test.server('st88_srv');
SELECT kl_test.broker('create st88.t 1');
SELECT kafka_lake.create_contract('orders88', $${
  "type": "object",
  "properties": {
    "order_id":   {"type": "string", "minLength": 1},
    "ordered_at": {"type": "string", "format": "date-time"},
    "amount":     {"type": "number", "minimum": 0, "maximum": 100}
  },
  "required": ["order_id", "ordered_at", "amount"],
  "event_id": "order_id",
  "business_date": {"field": "ordered_at", "time_zone": "Europe/Berlin"}
}$$);
SELECT kafka_lake.create_source('st88', 'st88_srv', 'st88.t', contract => 'orders88');
SELECT kafka_lake.produce('st88_srv', 'st88.t', convert_to(v, 'UTF8'))
  FROM (VALUES ('{"order_id": "o-1", "ordered_at": "2026-07-04T09:00:00+02:00", "amount": 10}'),
               ('{"order_id": "o-2", "ordered_at": "2026-07-04T10:00:00+02:00", "amount": 250}'),
               ('{"order_id": "o-3", "ordered_at": "2026-07-04T11:00:00+02:00", "amount": 30}')) t(v);
\o
SELECT results_eq($$SELECT sum(accepted)::int, sum(quarantined)::int FROM kafka_lake.land('st88')$$,
                  $$VALUES (2, 1)$$, 'two orders accepted, one quarantined (its amount is over 100)');
SELECT results_eq($$SELECT accepted, quarantined FROM kafka_lake.source_status WHERE source = 'st88'$$,
                  $$VALUES (2::bigint, 1::bigint)$$, 'source_status counts them');

-- fix the contract, re-admit: the record is counted once, as accepted
\o /dev/null
SELECT kafka_lake.create_contract('orders88', $${
  "type": "object",
  "properties": {
    "order_id":   {"type": "string", "minLength": 1},
    "ordered_at": {"type": "string", "format": "date-time"},
    "amount":     {"type": "number", "minimum": 0, "maximum": 1000}
  },
  "required": ["order_id", "ordered_at", "amount"],
  "event_id": "order_id",
  "business_date": {"field": "ordered_at", "time_zone": "Europe/Berlin"}
}$$);
SELECT kafka_lake.alter_source('st88', 'orders88');
\o
SELECT results_eq($$SELECT sum(accepted)::int FROM kafka_lake.readmit('st88')$$, $$VALUES (1)$$,
                  'the fixed contract re-admits the order');
SELECT results_eq($$SELECT accepted, duplicates, quarantined, accepted_24h, quarantined_24h
                     FROM kafka_lake.source_status WHERE source = 'st88'$$,
                  $$VALUES (3::bigint, 0::bigint, 0::bigint, 3::bigint, 0::bigint)$$,
                  'source_status counts the re-admitted order once, as accepted: the quarantine alert clears');
SELECT is((SELECT sum(accepted + duplicates + quarantined) FROM kafka_lake.source_status WHERE source = 'st88'),
          (SELECT count(*)::numeric FROM kafka_lake.coordinate_list WHERE source = 'st88'),
          'the counts add up to the coordinates landed');

-- a closed date, a late order
\o /dev/null
SELECT kafka_lake.produce('st88_srv', 'st88.t', convert_to(v, 'UTF8'))
  FROM (VALUES ('{"order_id": "o-5", "ordered_at": "2026-07-05T09:00:00+02:00", "amount": 50}'),
               ('{"order_id": "o-6", "ordered_at": "2026-07-05T10:00:00+02:00", "amount": 60}')) t(v);
\o
CREATE TEMP TABLE c88 AS SELECT * FROM kafka_lake.close_date('st88', '2026-07-05');
SELECT results_eq($$SELECT status, selected_events FROM c88$$, $$VALUES ('closed', 2)$$, 'July 5th is closed, with its two orders');
\o /dev/null
SELECT kafka_lake.produce('st88_srv', 'st88.t',
         convert_to('{"order_id": "o-7", "ordered_at": "2026-07-05T23:30:00+02:00", "amount": 70}', 'UTF8'));
\o
SELECT results_eq($$SELECT sum(accepted)::int FROM kafka_lake.land('st88')$$, $$VALUES (1)$$, 'a late order lands');
SELECT results_eq($$SELECT event_id, business_date, "offset", through_offset, closing_status
                     FROM kafka_lake.late_events WHERE source = 'st88'$$,
                  $$VALUES ('o-7', '2026-07-05'::date, 5::bigint, 5::bigint, 'closed')$$,
                  'late_events lists the late order, with its coordinate and the certificate it missed');
SELECT throws_ok($$SELECT * FROM kafka_lake.bridge('st88', '2026-07-05')$$, '55000', NULL,
                 'bridge() refuses the closed date, pointing at late_events');
SELECT results_eq($$SELECT snapshot_status FROM kafka_lake.bridge('st88', '2026-07-05', reopen => true)$$,
                  $$VALUES ('published')$$, 'reopen publishes the correction');
SELECT results_eq($$SELECT event_id, closing_status FROM kafka_lake.late_events WHERE source = 'st88'$$,
                  $$VALUES ('o-7', 'reopened')$$, 'late_events still lists it, against the reopened certificate');

-- only to roles that may read the source
DROP ROLE IF EXISTS t88_watcher;
CREATE ROLE t88_watcher;
GRANT USAGE ON SCHEMA kafka_lake TO t88_watcher;
GRANT SELECT ON kafka_lake.late_events TO t88_watcher;
SET ROLE t88_watcher;
SELECT is((SELECT count(*)::int FROM kafka_lake.late_events WHERE source = 'st88'), 0,
          'a role that may read late_events but not the source sees none of its late events');
RESET ROLE;
GRANT SELECT ON kafka_lake.st88_records TO t88_watcher;
SET ROLE t88_watcher;
SELECT is((SELECT count(*)::int FROM kafka_lake.late_events WHERE source = 'st88'), 1,
          'one that may read the source sees them');
RESET ROLE;

SELECT * FROM finish();
\o /dev/null
SELECT kafka_lake.drop_source('st88', drop_landing => true);
DELETE FROM kafka_lake.contracts WHERE contract = 'orders88';
REVOKE ALL ON kafka_lake.late_events FROM t88_watcher;
REVOKE ALL ON SCHEMA kafka_lake FROM t88_watcher;
DROP ROLE t88_watcher;
DROP SERVER st88_srv CASCADE;
\o
