-- test/pgtap/92b_dedupe_horizon.sql: event identity with a horizon.  A source keeps its
-- accepted event_ids for set_dedupe_horizon()'s interval: expire() removes those of the
-- batches whose dates are all past it and all closed, and marks those dates' certificates;
-- an open date and a recent one keep theirs.  A redelivery of a removed event is accepted
-- again, as a late event of its closed date, and that date is final: bridge(), with or
-- without reopen, and close_date() refuse it (55000), so its published gold cannot change;
-- source_status says through which date the event_ids went.  Over eight closed dates the
-- catalog keeps none of their event_ids.  Bad horizons are 22023.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(21);

CREATE FUNCTION pg_temp.send(id text, day text) RETURNS bigint LANGUAGE sql AS $$
  SELECT kafka_lake.produce('hz92b_srv', 'hz92b.t', kl_test.event(id, business_date => day::date), partition => 0)
$$;
CREATE FUNCTION pg_temp.event_ids() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM kafka_lake.accepted_events a JOIN kafka_lake.sources s USING (source_id)
   WHERE s.source = 'hz92b'
$$;

\o /dev/null
SELECT kl_test.server('hz92b_srv');
SELECT kl_test.broker('create hz92b.t 1');
SELECT kafka_lake.create_source('hz92b', 'hz92b_srv', 'hz92b.t');
\o

SELECT throws_ok($$SELECT kafka_lake.set_dedupe_horizon('hz92b', '0 days')$$, '22023', NULL, 'a horizon of 0 is refused');
SELECT throws_ok($$SELECT kafka_lake.set_dedupe_horizon('hz92b', '-1 day')$$, '22023', NULL, 'a negative horizon is refused');
SELECT lives_ok($$SELECT kafka_lake.set_dedupe_horizon('hz92b', '30 days')$$, 'a horizon of 30 days');
SELECT is((SELECT dedupe_horizon FROM kafka_lake.sources WHERE source = 'hz92b'), '30 days'::interval,
          'the catalog keeps it');

-- June 1st (to be closed), June 2nd (stays open), yesterday (within the horizon)
\o /dev/null
SELECT pg_temp.send('hz-1', '2026-06-01'), pg_temp.send('hz-2', '2026-06-01');
SELECT * FROM kafka_lake.land('hz92b');
SELECT pg_temp.send('hz-3', '2026-06-02');
SELECT * FROM kafka_lake.land('hz92b');
SELECT pg_temp.send('hz-4', (current_date - 1)::text);
SELECT * FROM kafka_lake.land('hz92b');
SELECT * FROM kafka_lake.close_date('hz92b', '2026-06-01');
\o
SELECT sum(units_produced)::bigint AS certified FROM kafka_lake.gold_current
 WHERE source = 'hz92b' AND business_date = '2026-06-01' \gset
SELECT is(pg_temp.event_ids(), 4::bigint, 'four event_ids are kept');
SELECT results_eq($$SELECT status, records, min_business_date, max_business_date
                      FROM kafka_lake.expire('hz92b', before => '2026-01-01') WHERE status = 'event_ids_pruned'$$,
                  $$VALUES ('event_ids_pruned', 2, '2026-06-01'::date, '2026-06-01'::date)$$,
                  'expire() removes the event_ids of the closed date past the horizon, and says so');
SELECT is(pg_temp.event_ids(), 2::bigint, 'the open date''s and the recent date''s stay');
SELECT ok((SELECT event_ids_pruned_at IS NOT NULL FROM kafka_lake.date_closings c JOIN kafka_lake.sources s USING (source_id)
            WHERE s.source = 'hz92b' AND c.business_date = '2026-06-01' AND c.status = 'closed'),
          'the certificate of June 1st says its event_ids went');
SELECT is((SELECT DISTINCT event_ids_pruned_through FROM kafka_lake.source_status WHERE source = 'hz92b'),
          '2026-06-01'::date, 'source_status says through which date');
SELECT is((SELECT count(*) FROM kafka_lake.expire('hz92b', before => '2026-01-01') WHERE status = 'event_ids_pruned'),
          0::bigint, 'a second expire() has nothing more to remove');

-- redeliveries: of a removed event, and of a kept one
\o /dev/null
SELECT pg_temp.send('hz-1', '2026-06-01');
\o
SELECT results_eq($$SELECT sum(accepted)::int, sum(duplicates)::int FROM kafka_lake.land('hz92b')$$,
                  $$VALUES (1, 0)$$, 'the removed event is accepted again');
\o /dev/null
SELECT pg_temp.send('hz-3', '2026-06-02');
\o
SELECT results_eq($$SELECT sum(accepted)::int, sum(duplicates)::int FROM kafka_lake.land('hz92b')$$,
                  $$VALUES (0, 1)$$, 'the kept one is a duplicate');
SELECT is((SELECT event_id FROM kafka_lake.late_events WHERE source = 'hz92b'), 'hz-1',
          'the redelivery is a late event of its closed date');
SELECT throws_like($$SELECT * FROM kafka_lake.bridge('hz92b', '2026-06-01')$$,
                   '%is final: its event_ids are past the source''s dedupe horizon%', 'bridge() refuses the final date');
SELECT throws_ok($$SELECT * FROM kafka_lake.bridge('hz92b', '2026-06-01', reopen => true)$$, '55000', NULL,
                 'reopening it is refused too');
SELECT throws_ok($$SELECT * FROM kafka_lake.close_date('hz92b', '2026-06-01')$$, '55000', NULL,
                 'and closing it again');
SELECT is((SELECT sum(units_produced)::bigint FROM kafka_lake.gold_current WHERE source = 'hz92b' AND business_date = '2026-06-01'),
          :certified::bigint, 'its published gold is what was certified');
SELECT results_eq($$SELECT run_status FROM kafka_lake.bridge('hz92b', '2026-06-02')$$, $$VALUES ('processed')$$,
                  'an open date bridges as before');

-- eight closed dates, each landed in its batches: none of their event_ids stays
\o /dev/null
SELECT pg_temp.send('hz-7' || d || '-' || i, '2026-07-0' || d), kafka_lake.land('hz92b')
  FROM generate_series(1, 8) d, generate_series(1, 3) i;
SELECT kafka_lake.close_date('hz92b', ('2026-07-0' || d)::date) FROM generate_series(1, 8) d;
\o
SELECT is(pg_temp.event_ids(), 3 + 24::bigint, 'before expire(): the 24 event_ids of July are kept (and the redelivered one of June 1st)');
SELECT results_eq($$SELECT records FROM kafka_lake.expire('hz92b', before => '2026-01-01') WHERE status = 'event_ids_pruned'$$,
                  $$VALUES (25)$$, 'expire() removes them, and the redelivered one''s');
SELECT is(pg_temp.event_ids(), 2::bigint, 'the catalog keeps only the open and recent dates'' event_ids');

SELECT * FROM finish();
