-- test/pgtap/87_harden_patterns.sql: no record blocks a partition, and a cancel is a cancel.
-- A pattern with back references (one 401-character value against
-- ^(.*)(.*)(.*)(.*)\1\2\3\4$ takes hours) or with lookaround (quadratic in the value) is
-- refused by create_contract; a contract version stored before this release with one is
-- refused before anything is polled, and the source lands again, record and all, once it
-- moves to a fixed version.  Every other pattern matches in time linear in the value, and
-- land()'s own timeout bounds the judging: a window of slow-to-match values ends at the
-- deadline, and the next call lands the rest.  statement_timeout during a match is 57014, as
-- any cancel, not a bad pattern (2201B).  Needs the broker.
SELECT plan(11);

\o /dev/null
SELECT kl_test.server('pat87_srv');
SELECT kl_test.broker('create pat87.t 1');
SELECT kl_test.broker('create pat87.slow 1');
\o

SELECT throws_matching($$SELECT kafka_lake.create_contract('pat87_backref', '{"type": "object", "properties":
    {"v": {"type": "string", "pattern": "^(.*)(.*)(.*)(.*)\\1\\2\\3\\4$"}}}')$$,
                       'whose matching time cannot be bounded', 'a pattern with back references is refused');
SELECT throws_ok($$SELECT kafka_lake.create_contract('pat87_ahead', '{"type": "object", "properties":
    {"v": {"type": "string", "pattern": "^(?=.*x)"}}}')$$,
                 '42P17', NULL, 'and one with a lookahead constraint');
SELECT throws_ok($$SELECT kafka_lake.create_contract('pat87_behind', '{"type": "object", "properties":
    {"v": {"type": "string", "pattern": "(?<!a)b"}}}')$$,
                 '42P17', NULL, 'and one with a lookbehind constraint');

-- a version an earlier release stored with such a pattern
INSERT INTO kafka_lake.contracts (contract, version, definition) VALUES ('pat87', 1,
  '{"type": "object", "properties": {"v": {"type": "string", "pattern": "^(.*)(.*)(.*)(.*)\\1\\2\\3\\4$"}},
    "required": ["v"]}');
\o /dev/null
SELECT kafka_lake.create_source('pat87', 'pat87_srv', 'pat87.t', contract => 'pat87');
SELECT kafka_lake.produce('pat87_srv', 'pat87.t', convert_to(json_build_object('v', repeat('a', 400) || 'b')::text, 'UTF8'));
SELECT kafka_lake.produce('pat87_srv', 'pat87.t', convert_to('{"v": "xyzxyz"}', 'UTF8'));
\o
SET statement_timeout = '60 s';
SELECT throws_matching($$SELECT * FROM kafka_lake.land('pat87', timeout => '3 s')$$,
                       'whose matching time cannot be bounded',
                       'a stored version with such a pattern is refused before any record is polled or judged');
RESET statement_timeout;
SELECT is((SELECT count(*)::int FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
            WHERE s.source = 'pat87'), 0, 'nothing landed, nothing was committed');
SELECT is(kafka_lake.create_contract('pat87', '{"type": "object", "properties": {"v": {"type": "string",
            "pattern": "^[a-z]{1,100}$"}}, "required": ["v"]}'), 2, 'a fixed version');
SELECT lives_ok($$SELECT kafka_lake.alter_source('pat87', 'pat87')$$, 'the source moves to it');
SELECT results_eq($$SELECT sum(accepted)::int, sum(quarantined)::int FROM kafka_lake.land('pat87', timeout => '5 s')$$,
                  $$VALUES (1, 1)$$, 'and lands both records: the long one (quarantined by its pattern), and the one behind it');

-- land()'s timeout bounds judging: four values of 900,000 characters that a linear pattern
-- takes about a quarter of a second each to match (here)
\o /dev/null
SELECT kafka_lake.create_contract('pat87_slow', '{"type": "object", "properties": {"v": {"type": "string",
          "pattern": "(a|b)*a(a|b){15}c"}}, "required": ["v"], "max_value_bytes": 1048576}');
SELECT kafka_lake.create_source('pat87_slow', 'pat87_srv', 'pat87.slow', contract => 'pat87_slow');
SELECT kafka_lake.produce('pat87_srv', 'pat87.slow',
         convert_to(json_build_object('v', (SELECT string_agg(CASE WHEN random() < 0.5 THEN 'a' ELSE 'b' END, '')
                                              FROM generate_series(1, 900000)))::text, 'UTF8'))
  FROM generate_series(1, 4);
\o
CREATE TEMP TABLE first87 AS SELECT * FROM kafka_lake.land('pat87_slow', timeout => '300 ms');
SELECT ok((SELECT sum(records) BETWEEN 1 AND 3 FROM first87),
          'a call whose timeout passes while it judges lands the records judged by then, at least one');
SELECT results_eq($$SELECT sum(records)::int FROM (SELECT records FROM first87 UNION ALL
                     SELECT records FROM kafka_lake.land('pat87_slow', timeout => '60 s')) r$$,
                  $$VALUES (4)$$, 'the next call lands the rest: nothing lost, nothing twice');

-- a cancel or a timeout while a pattern is matched
\o /dev/null
SELECT kafka_lake.produce('pat87_srv', 'pat87.slow',
         convert_to(json_build_object('v', (SELECT string_agg(CASE WHEN random() < 0.5 THEN 'a' ELSE 'b' END, '')
                                              FROM generate_series(1, 900000)))::text, 'UTF8'));
\o
CREATE TEMP TABLE err87 (sqlstate text, message text);
SET statement_timeout = '50 ms';
DO $$
BEGIN
  PERFORM * FROM kafka_lake.land('pat87_slow', timeout => '60 s');
EXCEPTION
  WHEN query_canceled THEN INSERT INTO err87 VALUES (SQLSTATE, SQLERRM);
  WHEN OTHERS THEN INSERT INTO err87 VALUES (SQLSTATE, SQLERRM);
END $$;
RESET statement_timeout;
SELECT results_eq($$SELECT sqlstate, message FROM err87$$,
                  $$VALUES ('57014', 'canceling statement due to statement timeout')$$,
                  'statement_timeout during a match is the timeout it is (57014), not a failed pattern (2201B)');

SELECT * FROM finish();
\o /dev/null
SELECT kafka_lake.drop_source('pat87', drop_landing => true);
SELECT kafka_lake.drop_source('pat87_slow', drop_landing => true);
DELETE FROM kafka_lake.contracts WHERE contract IN ('pat87', 'pat87_slow');
DROP SERVER pat87_srv CASCADE;
\o
