/* sql/kafka_lake--1.2--1.3.sql
 *
 * Upgrade of kafka_lake 1.2 to 1.3.  The scripts of 1.0, 1.1 and 1.2 are
 * released and never change: every catalog or function change of 1.3 is
 * made here, so that a database created at 1.0, 1.1 or 1.2 and one created
 * at 1.3 end with the same objects (test/t/35_upgrade.sh,
 * test/t/92_upgrade_1_1.sh and test/t/93_upgrade_1_2.sh check the paths).
 * Everything landed and bridged before stays readable, verifiable and
 * bridgeable.
 *
 * 1.3 carries a topic's life through to gold: dates judged by several
 * versions of a contract and dates with re-admitted records bridge, silver
 * follows its contract, an accepted record can be set aside (exclude), and
 * golds and checks can be dropped, redefined and run again (recheck).  The
 * sections below are what the catalog needs of it, one per feature.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kafka_lake UPDATE TO '1.3'" to load this file. \quit
