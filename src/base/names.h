/*-------------------------------------------------------------------------
 *
 * names.h
 *	  The names users give kafka_lake (names.c).
 *
 * IDENTIFICATION
 *	  src/base/names.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_NAMES_H
#define KAFKA_LAKE_NAMES_H

extern void kl_check_source_name(const char *name);
extern void kl_check_topic_name(const char *topic);
extern void kl_check_group_id(const char *group_id);

#endif							/* KAFKA_LAKE_NAMES_H */
