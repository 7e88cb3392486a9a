/*-------------------------------------------------------------------------
 *
 * pg_shim.h
 *	  What the fuzz targets use of the backend stand-in (pg_shim.c), and
 *	  the one way a target runs an input and reports a broken property.
 *
 * IDENTIFICATION
 *	  fuzz/pg_shim.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_PG_SHIM_H
#define KAFKA_LAKE_PG_SHIM_H

#include <stdio.h>
#include <stdlib.h>

extern void kl_shim_init(void);
extern void kl_shim_reset(void);
extern void kl_shim_set_stack_base(void);
extern const char *kl_shim_last_error(void);

/*
 * KL_FUZZ_RUN
 *		Run body on one input as a backend would: an ERROR is a rejection
 *		(caught here, its memory freed with the rest of the input's), and
 *		everything the input allocated is freed afterwards.
 */
#define KL_FUZZ_RUN(body) \
	do { \
		kl_shim_set_stack_base(); \
		PG_TRY(); \
		{ \
			body; \
		} \
		PG_CATCH(); \
		{ \
		} \
		PG_END_TRY(); \
		kl_shim_reset(); \
	} while (0)

/*
 * kl_fuzz_fail
 *		A property does not hold: say which, and abort, which libFuzzer
 *		reports as a crash with the input that did it.
 */
#define kl_fuzz_fail(...) \
	do { \
		fprintf(stderr, "property violated: "); \
		fprintf(stderr, __VA_ARGS__); \
		fprintf(stderr, "\n"); \
		abort(); \
	} while (0)

#endif							/* KAFKA_LAKE_PG_SHIM_H */
