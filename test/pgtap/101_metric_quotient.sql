-- test/pgtap/101_metric_quotient.sql: metric_quotient(), with which a coordinator's combined
-- golds compute their averages and ratios, rounds as the bridge does (test 101_coordinator
-- compares whole golds): "python" rounds the double quotient with exact ties to even (1/128 is
-- 0.0078125: 0.007812), and 107/40 = 2.675 is a double just below it (2.67); "half_up" rounds
-- the exact decimal quotient away from zero (0.007813, 2.68); a zero denominator gives NULL;
-- NULL in, NULL out; a bad round or rounding is 22023.  Needs no broker.
SELECT plan(9);
SELECT is(kafka_lake.metric_quotient(1, 128, 6, 'python', true), 0.007812, 'python: 1/128 to 6 decimals ties to even');
SELECT is(kafka_lake.metric_quotient(1, 128, 6, 'half_up', true), 0.007813, 'half_up: away from zero');
SELECT is(kafka_lake.metric_quotient(107, 40, 2, 'python', true), 2.67, 'python: 107/40 is a double below 2.675');
SELECT is(kafka_lake.metric_quotient(107, 40, 2), 2.68, 'half_up by default');
SELECT is(kafka_lake.metric_quotient(10.5, 4, 1, 'python', false)::text, '2.6', 'python of numbers: 2.625 as a double, rounded to even');
SELECT is(kafka_lake.metric_quotient(5, 0, 2), NULL, 'a zero denominator gives NULL');
SELECT is(kafka_lake.metric_quotient(NULL, 3, 2), NULL, 'NULL in, NULL out');
SELECT throws_ok($$SELECT kafka_lake.metric_quotient(1, 3, 16)$$, '22023', NULL, 'round over 15 is refused');
SELECT throws_ok($$SELECT kafka_lake.metric_quotient(1, 3, 2, 'banker')$$, '22023', NULL, 'an unknown rounding is refused');
SELECT * FROM finish();
