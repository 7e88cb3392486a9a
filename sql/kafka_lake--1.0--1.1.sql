/* sql/kafka_lake--1.0--1.1.sql
 *
 * Upgrade of kafka_lake 1.0 to 1.1.  kafka_lake--1.0.sql is released and
 * never changes: every catalog or function change of 1.1 is made here, so a
 * database created at 1.0 and one created at 1.1 end with the same objects
 * (test/t/35_upgrade.sh checks both paths).  Everything a 1.0 installation
 * landed stays readable, verifiable and bridgeable after
 * ALTER EXTENSION kafka_lake UPDATE.
 *
 * The sections follow the order of the changes; each says what it changes
 * and why.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kafka_lake UPDATE TO '1.1'" to load this file. \quit
