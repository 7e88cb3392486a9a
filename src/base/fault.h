/*-------------------------------------------------------------------------
 *
 * fault.h
 *	  The fault injection points of the tests (fault.c).
 *
 * IDENTIFICATION
 *	  src/base/fault.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_FAULT_H
#define KAFKA_LAKE_FAULT_H

#include "utils/guc.h"

extern char *kl_fault_injection;
extern const char *kl_fault_point_names(void);
extern bool kl_check_fault_injection(char **newval, void **extra, GucSource source);
extern void kl_assign_fault_injection(const char *newval, void *extra);
extern void kl_fault_point(const char *point);
extern bool kl_fault_take(const char *point);
extern bool kl_fault_pausing(const char *point);
extern void kl_fault_pause(const char *point);

#endif							/* KAFKA_LAKE_FAULT_H */
