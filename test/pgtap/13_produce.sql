-- test/pgtap/13_produce.sql: produce() sends a record that a separate consumer (kcat) reads back.
SELECT plan(5);
SELECT kl_test.broker('create produce.t1 2');
SELECT kl_test.server('pr_srv');

SELECT is(kafka_lake.produce('pr_srv', 'produce.t1', convert_to('hello, kafka', 'UTF8'),
                             key => convert_to('k1', 'UTF8'), partition => 1),
          0::bigint, 'produce returns the offset of the record');
SELECT is(kafka_lake.produce('pr_srv', 'produce.t1', convert_to('second', 'UTF8'), partition => 1),
          1::bigint, 'the next record gets the next offset');
SELECT is(kl_test.sh(format('kcat -C -q -e -b %s -t produce.t1 -p 1 -o beginning -f ''%%k|%%s|%%o\n''',
                            kl_test.bootstrap())),
          E'k1|hello, kafka|0\n|second|1', 'kcat reads back what produce sent, key and value');
SELECT throws_ok($$SELECT kafka_lake.produce('pr_srv', 'bad topic', '\x00')$$, '42602', NULL,
  'an invalid topic name is refused before anything is sent');
SELECT throws_ok($$SELECT kafka_lake.produce('pr_srv', 'produce.t1', '\x00', partition => -1)$$, '22023', NULL,
  'a negative partition is refused');

DROP SERVER pr_srv;
SELECT * FROM finish();
