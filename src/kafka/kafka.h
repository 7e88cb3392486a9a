/*-------------------------------------------------------------------------
 *
 * kafka.h
 *	  librdkafka handles owned by resource owners, and the calls kafka_lake
 *	  makes to Kafka (kafka.c).
 *
 * IDENTIFICATION
 *	  src/kafka/kafka.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef KAFKA_LAKE_KAFKA_H
#define KAFKA_LAKE_KAFKA_H

#include <librdkafka/rdkafka.h>

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "utils/resowner.h"

#define KL_LOG_RING		16
#define KL_LOG_LINE		512

typedef enum KlKafkaRole
{
	KL_CONSUMER,
	KL_PRODUCER
} KlKafkaRole;

/* What kind of failure a librdkafka error is (kl_kafka_error_class) */
typedef enum KlKafkaErrorClass
{
	KL_KERR_UNAVAILABLE,		/* the cluster did not answer: HV00N, retried */
	KL_KERR_AUTHENTICATION,		/* credentials refused: 28000 */
	KL_KERR_AUTHORIZATION,		/* permission denied: 42501 */
	KL_KERR_UNKNOWN_TOPIC,		/* HV00R */
	KL_KERR_OTHER				/* HV000 */
} KlKafkaErrorClass;

/* the most partitions a consumer reads ahead of the one it lands (land.c) */
#define KL_KAFKA_AHEAD		4

/* A partition a consumer has assigned, with the queue its messages go to */
typedef struct KlKafkaPart
{
	char	   *topic;
	int32		partition;
	int64		offset;			/* where it was assigned */
	void	   *queue;			/* rd_kafka_queue_t of the partition */
} KlKafkaPart;

typedef struct KlKafka
{
	rd_kafka_t *rk;				/* NULL once destroyed */
	rd_kafka_queue_t *queue;	/* results of asynchronous commits, or NULL */
	bool		commit_pending; /* a commit was sent and not answered */
	bool		assigned;		/* a consumer reading a partition */
	/* the partitions assigned: the one read (current), and those read ahead */
	KlKafkaPart parts[KL_KAFKA_AHEAD + 1];
	int			nparts;
	int			current;		/* index in parts, -1: none */
	rd_kafka_resp_err_t last_error; /* from the error callback */
	struct KlKafka **owner_slot;	/* librdkafka's opaque (malloc'd, two
									 * pointers): [0] points here until the
									 * handle is destroyed */
	KlKafkaRole role;
	const char *server_name;
	List	   *secrets;		/* values scrubbed from librdkafka text */
	ResourceOwner owner;		/* destroyed when this owner is released */
	struct KlKafka *next;		/* list of live handles */
	/* log ring, filled by the log callback, emptied by kl_kafka_flush_log */
	int			log_count;
	int			log_flushed;
	int			log_level[KL_LOG_RING];
	char		log_lines[KL_LOG_RING][KL_LOG_LINE];
	/* consumer messages held by the current window, destroyed with it */
	rd_kafka_message_t **held;
	int			nheld;
	int			held_cap;
	/* producer delivery report */
	bool		delivered;
	rd_kafka_resp_err_t delivery_err;
	int64		delivery_offset;
} KlKafka;

extern KlKafka *kl_kafka_open(const char *server_name, KlKafkaRole role, const char *group_id);
extern void kl_kafka_close(KlKafka *kk);
extern void kl_kafka_flush_log(KlKafka *kk);
extern KlKafkaErrorClass kl_kafka_error_class(rd_kafka_resp_err_t err);
extern void kl_kafka_error(KlKafka *kk, const char *what, rd_kafka_resp_err_t err) pg_attribute_noreturn();
extern int	kl_kafka_partition_count(KlKafka *kk, const char *topic, TimestampTz deadline);
extern char *kl_kafka_cluster_id(KlKafka *kk, TimestampTz deadline);
extern void kl_kafka_watermarks(KlKafka *kk, const char *topic, int32 partition,
								int64 *low, int64 *high, TimestampTz deadline);
extern void kl_kafka_all_watermarks(KlKafka *kk, const char *topic, int n, int64 *low,
									int64 *high, TimestampTz deadline);
extern void kl_kafka_offsets_for_times(KlKafka *kk, const char *topic, int n, int64 timestamp_ms,
									   const int64 *low, const int64 *high, int64 *offsets,
									   TimestampTz deadline);
extern void kl_kafka_committed(KlKafka *kk, const char *topic, int n, int64 *offsets,
							   TimestampTz deadline);
extern int64 kl_kafka_committed_one(KlKafka *kk, const char *topic, int32 partition,
									TimestampTz deadline);
extern void kl_kafka_commit(KlKafka *kk, const char *topic, int32 partition, int64 next_offset,
							TimestampTz deadline);
extern void kl_kafka_assign(KlKafka *kk, const char *topic, int32 partition, int64 offset);
extern void kl_kafka_unassign(KlKafka *kk);
extern bool kl_kafka_read_ahead(KlKafka *kk, const char *topic, int32 partition, int64 offset);
extern void kl_kafka_forget_ahead(KlKafka *kk, const char *topic, int32 below);
extern void kl_kafka_unassign_all(KlKafka *kk);
extern rd_kafka_message_t *kl_kafka_poll(KlKafka *kk, int timeout_ms);
extern void kl_kafka_hold(KlKafka *kk, rd_kafka_message_t *msg);
extern void kl_kafka_release_held(KlKafka *kk);
extern int	kl_timeout_ms(Interval *iv, const char *argname);

#endif							/* KAFKA_LAKE_KAFKA_H */
