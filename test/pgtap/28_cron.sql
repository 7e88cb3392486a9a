-- test/pgtap/28_cron.sql: a pg_cron job lands new records without anyone calling land.
-- pg_cron 1.4 schedules by the minute: this test waits up to 100 s.  Needs the broker.
SELECT plan(4);
SELECT kl_test.broker('create cron.t 1');
SELECT kl_test.server('cr_srv');
SELECT kafka_lake.create_source('cr_src', 'cr_srv', 'cron.t');
SELECT kafka_lake.produce('cr_srv', 'cron.t', kl_test.event(format('evt-cron-%s', n))) FROM generate_series(1, 3) n;

SELECT isnt(cron.schedule('land-cr-src', '* * * * *', $$SELECT * FROM kafka_lake.land('cr_src')$$), NULL::bigint,
            'the documented schedule call works');

CREATE FUNCTION pg_temp.wait_for_landing(src text, seconds int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  n bigint;
BEGIN
  FOR i IN 1 .. seconds LOOP
    -- a new snapshot each time: the job commits in its own session
    SELECT count(*) INTO n FROM kafka_lake.coordinate_list WHERE source = src;
    EXIT WHEN n > 0;
    PERFORM pg_sleep(1);
  END LOOP;
  RETURN n;
END $$;
-- in autocommit, each statement sees the job's commits; loop from the client
SELECT pg_temp.wait_for_landing('cr_src', 100) AS landed \gset
SELECT is(:landed::bigint, 3::bigint, 'the job landed the three records');
SELECT is((SELECT committed_offset FROM kafka_lake.lag('cr_src')), 3::bigint, 'and committed them');
SELECT ok((SELECT count(*) FROM cron.job_run_details d JOIN cron.job j USING (jobid)
           WHERE j.jobname = 'land-cr-src' AND d.status = 'succeeded') >= 1,
          'pg_cron records a successful run');
SELECT cron.unschedule('land-cr-src');
SELECT * FROM finish();
