/*-------------------------------------------------------------------------
 *
 * kafka_lake.h
 *	  What the module entry (kafka_lake.c) offers the files beside it: the
 *	  check of a landing directory.  The settings' variables, the fault
 *	  points and the check of NULL arguments are base/'s.
 *
 * IDENTIFICATION
 *	  src/kafka_lake.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_KAFKA_LAKE_H
#define KAFKA_LAKE_KAFKA_LAKE_H

extern char *kl_landing_dir_refusal(const char *path, char *resolved);

#endif							/* KAFKA_LAKE_KAFKA_LAKE_H */
