/*-------------------------------------------------------------------------
 *
 * kafka.c
 *	  librdkafka inside a PostgreSQL backend: handle lifetime, signals, logs,
 *	  errors, and the few Kafka calls kafka_lake makes (metadata, watermarks,
 *	  committed offsets, assign/poll, commit, produce); and the SQL functions
 *	  lag() and produce().
 *
 * A librdkafka handle runs several threads.  Three rules keep them from
 * hurting the backend:
 *
 *	1. Signals.  All signals are blocked around rd_kafka_new, so the threads
 *	   it starts (and the threads those start) inherit a full mask and never
 *	   run PostgreSQL's handlers, which assume the backend's own thread.
 *
 *	2. Lifetime.  A handle never outlives the statement that created it.  It
 *	   is registered with the resource owner current at its creation; when
 *	   that owner is released (end of statement, ERROR, cancel, the abort of
 *	   a subtransaction) the handle is destroyed and its threads joined.  The
 *	   normal path destroys it explicitly, earlier.  One exception: a handle
 *	   whose commit the cluster never answered would make the backend wait
 *	   in librdkafka's destroy for about 45 s; its threads are left to end
 *	   in the background instead (kl_kafka_destroy_handle).
 *
 *	3. Callbacks never leave librdkafka by longjmp.  Logs are routed to the
 *	   handle's own queue (log.queue) and served by our polls in the
 *	   backend's thread; the callback only copies the line into a small
 *	   fixed ring, which kl_kafka_flush_log then reports with ereport.
 *	   Every text from librdkafka is scrubbed of secret values first.
 *
 * Every blocking call is bounded, and interruptible.  librdkafka's waits are
 * condition variables that no signal wakes, so a backend inside one cannot
 * see a cancel, statement_timeout or its own deadline: a synchronous commit
 * to a broker that went down sits out librdkafka's own retries (about 45 s).
 * So each call here takes an absolute deadline, never waits in librdkafka
 * for more than one short attempt (polls at most 100 ms; requests that need
 * a round trip 100 ms doubling up to 1 s, so that a slow broker is still
 * answered) and runs CHECK_FOR_INTERRUPTS between attempts.  The commit is
 * asynchronous, its result read from a queue of the handle in 100 ms slices.
 * A request abandoned at the deadline may still complete at the broker; that
 * is harmless, because nothing is committed before it is durable.
 *
 * Errors are classified once (kl_kafka_error_class): the cluster did not
 * answer (HV00N, retried until the deadline), it refused the credentials
 * (28000) or the permission (42501), the topic is unknown (HV00R), anything
 * else (HV000).
 *
 * IDENTIFICATION
 *	  src/kafka/kafka.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <pthread.h>
#include <signal.h>

#include "access/htup_details.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "base/args.h"
#include "base/compat.h"
#include "base/names.h"
#include "base/settings.h"
#include "base/thread_job.h"
#include "kafka/kafka.h"
#include "kafka/options.h"
#include "kl_catalog/catalog.h"

PG_FUNCTION_INFO_V1(kafka_lake_lag);
PG_FUNCTION_INFO_V1(kafka_lake_produce);

/* handles alive in this backend, to be destroyed with their resource owner */
static KlKafka *kl_live_handles = NULL;
static bool kl_release_callback_registered = false;

static void kl_kafka_release_callback(ResourceReleasePhase phase, bool isCommit,
									  bool isTopLevel, void *arg);
static void kl_kafka_log_cb(const rd_kafka_t *rk, int level, const char *fac,
							const char *buf);
static void kl_kafka_delivery_cb(rd_kafka_t *rk, const rd_kafka_message_t *msg,
								 void *opaque);
static void kl_kafka_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque);

/*
 * kl_kafka_log_cb
 *		librdkafka's log callback: copy the line into the handle's ring.  Runs
 *		in our own thread (log.queue), but must not ereport all the same.
 */
static void
kl_kafka_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
	KlKafka   **owner = (KlKafka **) rd_kafka_opaque(rk);
	KlKafka    *kk = owner ? *owner : NULL;
	int			slot;

	if (kk == NULL)
		return;
	slot = kk->log_count % KL_LOG_RING;
	kk->log_level[slot] = level;
	snprintf(kk->log_lines[slot], KL_LOG_LINE, "%s: %s", fac, buf);
	kk->log_count++;
}

/*
 * kl_kafka_error_cb
 *		librdkafka's error callback (a broker down, a refused SASL handshake,
 *		...): remember the error, for kl_kafka_error to report instead of a
 *		bare timeout.  Called from our own polls, in the backend's thread.
 */
static void
kl_kafka_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
	KlKafka    *kk = opaque ? *(KlKafka **) opaque : NULL;

	if (kk == NULL)
		return;
	/* an authentication failure says more than what follows it */
	if (kl_kafka_error_class(kk->last_error) == KL_KERR_AUTHENTICATION &&
		kl_kafka_error_class(err) == KL_KERR_UNAVAILABLE)
		return;
	kk->last_error = err;
}

/*
 * kl_kafka_serve
 *		Serve the handle's events (logs, errors) between two attempts of a
 *		synchronous call.  A consumer is served only while nothing is
 *		assigned, so that no message is taken from a window.
 */
static void
kl_kafka_serve(KlKafka *kk)
{
	if (kk->role == KL_PRODUCER)
		rd_kafka_poll(kk->rk, 0);
	else if (!kk->assigned)
	{
		rd_kafka_message_t *msg = rd_kafka_consumer_poll(kk->rk, 0);

		if (msg != NULL)
		{
			if (msg->err != RD_KAFKA_RESP_ERR_NO_ERROR &&
				msg->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
				kk->last_error = msg->err;
			rd_kafka_message_destroy(msg);
		}
	}
	if (kk->log_count != kk->log_flushed)
		kl_kafka_flush_log(kk);
}

/*
 * kl_kafka_flush_log
 *		Report the log lines collected since the last flush: errors and
 *		warnings as LOG, the rest as DEBUG1.  Secrets are scrubbed.
 */
void
kl_kafka_flush_log(KlKafka *kk)
{
	int			first = Max(kk->log_flushed, kk->log_count - KL_LOG_RING);

	for (int i = first; i < kk->log_count; i++)
	{
		int			slot = i % KL_LOG_RING;
		char	   *line = kl_scrub_secrets(kk->log_lines[slot], kk->secrets);

		ereport(kk->log_level[slot] <= 4 ? LOG : DEBUG1,
				(errmsg_internal("kafka_lake: librdkafka (server \"%s\"): %s",
								 kk->server_name, line)));
		pfree(line);
	}
	kk->log_flushed = kk->log_count;
}

/*
 * kl_kafka_open
 *		Create a librdkafka handle for a server as seen by the current role:
 *		a consumer (group_id may be NULL for a consumer that never commits)
 *		or a producer.
 */
KlKafka *
kl_kafka_open(const char *server_name, KlKafkaRole role, const char *group_id)
{
	ForeignServer *server = kl_get_server(server_name);
	KlKafka    *kk;
	rd_kafka_conf_t *conf;
	char		errstr[512];
	sigset_t	all;
	sigset_t	saved;
	char		buf[32];

	kk = MemoryContextAllocZero(TopTransactionContext, sizeof(KlKafka));
	kk->server_name = MemoryContextStrdup(TopTransactionContext, server->servername);
	kk->role = role;
	kk->current = -1;
	conf = kl_build_conf(server, GetUserId(), &kk->secrets);
	/* the secrets list must live as long as the handle (its cells are C strings) */
	{
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
		List	   *copy = NIL;
		ListCell   *cell;

		foreach(cell, kk->secrets)
			copy = lappend(copy, pstrdup((const char *) lfirst(cell)));
		kk->secrets = copy;
		MemoryContextSwitchTo(old);
	}

#define KL_SET(name, value) \
	do { \
		if (rd_kafka_conf_set(conf, (name), (value), errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) \
		{ \
			rd_kafka_conf_destroy(conf); \
			ereport(ERROR, \
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE), \
					 errmsg("could not configure librdkafka property \"%s\"", (name)), \
					 errdetail_internal("librdkafka: %s", errstr))); \
		} \
	} while (0)

	KL_SET("log.queue", "true");
	if (role == KL_CONSUMER)
	{
		if (group_id)
			KL_SET("group.id", group_id);
		KL_SET("enable.auto.commit", "false");
		KL_SET("enable.auto.offset.store", "false");
		KL_SET("auto.offset.reset", "error");
		KL_SET("enable.partition.eof", "true");
		/*
		 * The prefetch queue.  librdkafka 2.0.2 stops fetching once the queue
		 * holds queued.min.messages records or queued.max.messages.kbytes,
		 * and resumes only on a 1 s timer: a queue the size of a
		 * batch stalls a second per batch.  So the count limit is set out of
		 * reach and the byte limit, twice kafka_lake.batch_max_bytes, is what
		 * bounds memory: about three times batch_max_bytes in all, with the
		 * batch being built.
		 */
		KL_SET("queued.min.messages", "10000000");
		snprintf(buf, sizeof(buf), "%d",
				 (int) Max(Min((int64) kl_batch_max_bytes * 2 / 1024, 2097151), 1024));
		KL_SET("queued.max.messages.kbytes", buf);
		/* a bounded read knows its target; do not sit in empty fetches */
		KL_SET("fetch.wait.max.ms", "5");
	}
	else
	{
		KL_SET("linger.ms", "0");
		rd_kafka_conf_set_dr_msg_cb(conf, kl_kafka_delivery_cb);
	}
	rd_kafka_conf_set_log_cb(conf, kl_kafka_log_cb);
	rd_kafka_conf_set_error_cb(conf, kl_kafka_error_cb);
	/* librdkafka's opaque: outside PostgreSQL's memory (see kl_kafka_destroy_handle) */
	kk->owner_slot = malloc(2 * sizeof(void *));
	if (kk->owner_slot == NULL)
	{
		rd_kafka_conf_destroy(conf);
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	}
	*kk->owner_slot = kk;
	rd_kafka_conf_set_opaque(conf, kk->owner_slot);

	/* librdkafka's threads must never run PostgreSQL's signal handlers */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	kk->rk = rd_kafka_new(role == KL_CONSUMER ? RD_KAFKA_CONSUMER : RD_KAFKA_PRODUCER,
						  conf, errstr, sizeof(errstr));
	pthread_sigmask(SIG_SETMASK, &saved, NULL);

	if (kk->rk == NULL)
	{
		rd_kafka_conf_destroy(conf);
		free(kk->owner_slot);
		kk->owner_slot = NULL;
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
				 errmsg("could not create a Kafka client for server \"%s\"",
						server->servername),
				 errdetail_internal("librdkafka: %s",
									kl_scrub_secrets(errstr, kk->secrets))));
	}

	/* from here on an ERROR destroys the handle with the resource owner */
	kk->owner = CurrentResourceOwner;
	kk->next = kl_live_handles;
	kl_live_handles = kk;
	if (!kl_release_callback_registered)
	{
		RegisterResourceReleaseCallback(kl_kafka_release_callback, NULL);
		kl_release_callback_registered = true;
	}

	rd_kafka_set_log_queue(kk->rk, NULL);
	if (role == KL_CONSUMER)
		rd_kafka_poll_set_consumer(kk->rk);
	return kk;
}

/*
 * kl_kafka_destroy_thread
 *		Destroy a consumer handle whose commit is still outstanding, in a
 *		thread of its own (see kl_kafka_destroy_handle).
 */
static void
kl_kafka_destroy_thread(void *arg, const volatile bool *cancel)
{
	KlKafka   **owner_slot = (KlKafka **) arg;
	rd_kafka_t *rk = (rd_kafka_t *) owner_slot[1];

	rd_kafka_destroy_flags(rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
	free(owner_slot);
}

/*
 * kl_kafka_destroy_handle
 *		Destroy the librdkafka handle and join its threads.
 *
 *		librdkafka's destroy waits for every commit it has sent to be
 *		answered; against a broker that went down that is librdkafka's own
 *		retry time (about 45 s), deaf to cancel.  So a handle whose commit
 *		was abandoned (deadline, cancel, statement_timeout) is destroyed by
 *		a detached job (kl_job_detach, base/thread_job.c) instead, which
 *		ends when librdkafka gives up; the
 *		backend goes on at once.  Nothing of PostgreSQL's is touched by that
 *		thread: the handle's opaque lives in malloc'd memory and forgets the
 *		KlKafka first, and librdkafka calls no callback of ours by itself
 *		(logs go through log.queue, served only by our polls).
 */
static void
kl_kafka_destroy_handle(KlKafka *kk)
{
	if (kk->rk == NULL)
		return;
	kl_kafka_release_held(kk);
	/* partition queues go before the handle, as librdkafka wants */
	for (int i = 0; i < kk->nparts; i++)
		rd_kafka_queue_destroy((rd_kafka_queue_t *) kk->parts[i].queue);
	kk->nparts = 0;
	kk->current = -1;
	if (kk->queue)
	{
		rd_kafka_queue_destroy(kk->queue);
		kk->queue = NULL;
	}
	*kk->owner_slot = NULL;
	if (kk->role == KL_CONSUMER && kk->commit_pending)
	{
		KlKafka   **arg = kk->owner_slot;

		/* slot 1 of the opaque carries the handle to the thread */
		arg[1] = (KlKafka *) kk->rk;
		if (kl_job_detach(kl_kafka_destroy_thread, arg))
		{
			kk->rk = NULL;
			kk->owner_slot = NULL;
			return;
		}
		/* no thread to spare: wait here, as librdkafka wants */
	}
	if (kk->role == KL_CONSUMER)
		rd_kafka_destroy_flags(kk->rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
	else
	{
		rd_kafka_purge(kk->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
		rd_kafka_destroy(kk->rk);
	}
	kk->rk = NULL;
	free(kk->owner_slot);
	kk->owner_slot = NULL;
}

/*
 * kl_kafka_close
 *		Normal end of a handle's life.
 */
void
kl_kafka_close(KlKafka *kk)
{
	KlKafka   **link;

	if (kk == NULL)
		return;
	if (kk->rk)
		kl_kafka_flush_log(kk);
	for (link = &kl_live_handles; *link; link = &(*link)->next)
	{
		if (*link == kk)
		{
			*link = kk->next;
			break;
		}
	}
	kl_kafka_destroy_handle(kk);
}

/*
 * kl_kafka_release_callback
 *		Destroy the handles of a resource owner that is being released.
 *		During release, CurrentResourceOwner is the owner being released.
 */
static void
kl_kafka_release_callback(ResourceReleasePhase phase, bool isCommit,
						  bool isTopLevel, void *arg)
{
	KlKafka   **link = &kl_live_handles;

	if (phase != RESOURCE_RELEASE_AFTER_LOCKS)
		return;
	while (*link)
	{
		KlKafka    *kk = *link;

		if (kk->owner == CurrentResourceOwner || isTopLevel)
		{
			*link = kk->next;
			kl_kafka_destroy_handle(kk);
		}
		else
			link = &kk->next;
	}
}

/*
 * kl_kafka_error_class
 *		What kind of failure a librdkafka error is.  KL_KERR_UNAVAILABLE are
 *		the errors of a cluster that does not answer (yet): brokers down or
 *		unreachable, no coordinator or leader at the moment, timeouts.  They
 *		are retried until the caller's deadline.
 */
KlKafkaErrorClass
kl_kafka_error_class(rd_kafka_resp_err_t err)
{
	switch (err)
	{
		case RD_KAFKA_RESP_ERR__TRANSPORT:
		case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
		case RD_KAFKA_RESP_ERR__TIMED_OUT:
		case RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE:
		case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT:
		case RD_KAFKA_RESP_ERR__RESOLVE:
		case RD_KAFKA_RESP_ERR__WAIT_COORD:
		case RD_KAFKA_RESP_ERR__WAIT_CACHE:
		case RD_KAFKA_RESP_ERR__NODE_UPDATE:
		case RD_KAFKA_RESP_ERR__UNKNOWN_BROKER:
		case RD_KAFKA_RESP_ERR__RETRY:
		case RD_KAFKA_RESP_ERR__IN_PROGRESS:
		case RD_KAFKA_RESP_ERR__PREV_IN_PROGRESS:
		case RD_KAFKA_RESP_ERR__OUTDATED:
		case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
		case RD_KAFKA_RESP_ERR_BROKER_NOT_AVAILABLE:
		case RD_KAFKA_RESP_ERR_REPLICA_NOT_AVAILABLE:
		case RD_KAFKA_RESP_ERR_NETWORK_EXCEPTION:
		case RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS:
		case RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE:
		case RD_KAFKA_RESP_ERR_NOT_COORDINATOR:
		case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
		case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
		case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS:
		case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
		case RD_KAFKA_RESP_ERR_KAFKA_STORAGE_ERROR:
		case RD_KAFKA_RESP_ERR_FENCED_LEADER_EPOCH:
		case RD_KAFKA_RESP_ERR_UNKNOWN_LEADER_EPOCH:
		case RD_KAFKA_RESP_ERR_OFFSET_NOT_AVAILABLE:
		case RD_KAFKA_RESP_ERR_PREFERRED_LEADER_NOT_AVAILABLE:
		case RD_KAFKA_RESP_ERR_ELIGIBLE_LEADERS_NOT_AVAILABLE:
		case RD_KAFKA_RESP_ERR_LISTENER_NOT_FOUND:
		case RD_KAFKA_RESP_ERR_THROTTLING_QUOTA_EXCEEDED:
		case RD_KAFKA_RESP_ERR_UNSTABLE_OFFSET_COMMIT:
			return KL_KERR_UNAVAILABLE;
		case RD_KAFKA_RESP_ERR__AUTHENTICATION:
		case RD_KAFKA_RESP_ERR__SSL:
		case RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED:
		case RD_KAFKA_RESP_ERR_UNSUPPORTED_SASL_MECHANISM:
		case RD_KAFKA_RESP_ERR_ILLEGAL_SASL_STATE:
		case RD_KAFKA_RESP_ERR_UNACCEPTABLE_CREDENTIAL:
		case RD_KAFKA_RESP_ERR_DELEGATION_TOKEN_EXPIRED:
		case RD_KAFKA_RESP_ERR_DELEGATION_TOKEN_NOT_FOUND:
			return KL_KERR_AUTHENTICATION;
		case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
		case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
		case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
		case RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
		case RD_KAFKA_RESP_ERR_DELEGATION_TOKEN_AUTHORIZATION_FAILED:
			return KL_KERR_AUTHORIZATION;
		case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
		case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
		case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
			return KL_KERR_UNKNOWN_TOPIC;
		default:
			return KL_KERR_OTHER;
	}
}

/*
 * kl_kafka_error
 *		Raise an ERROR for a failed Kafka call, with an SQLSTATE that says
 *		what kind of failure it was and a hint that says what to do.  What
 *		already landed is never lost by a failed Kafka call: land() adds to
 *		the error what it had landed and committed.
 */
void
kl_kafka_error(KlKafka *kk, const char *what, rd_kafka_resp_err_t err)
{
	char	   *detail;

	/*
	 * A call that timed out because the brokers refused the connection says
	 * why they did, if librdkafka told us (a refused SASL handshake, a TLS
	 * failure): that is what the user must fix.
	 */
	if (kl_kafka_error_class(err) == KL_KERR_UNAVAILABLE &&
		kl_kafka_error_class(kk->last_error) == KL_KERR_AUTHENTICATION)
		err = kk->last_error;
	detail = kl_scrub_secrets(rd_kafka_err2str(err), kk->secrets);
	kl_kafka_flush_log(kk);
	switch (kl_kafka_error_class(err))
	{
		case KL_KERR_UNAVAILABLE:
			ereport(ERROR,
					(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
					 errmsg("could not %s: the Kafka cluster of server \"%s\" did not answer",
							what, kk->server_name),
					 errdetail_internal("librdkafka: %s (%s)", detail, rd_kafka_err2name(err)),
					 errhint("Check that the brokers of server \"%s\" are up and reachable from the database server. "
							 "Nothing that already landed is lost; the next call resumes from the committed offset.",
							 kk->server_name)));
			break;
		case KL_KERR_UNKNOWN_TOPIC:
			ereport(ERROR,
					(errcode(ERRCODE_FDW_TABLE_NOT_FOUND),
					 errmsg("could not %s: unknown topic or partition on server \"%s\"",
							what, kk->server_name),
					 errdetail_internal("librdkafka: %s (%s)", detail, rd_kafka_err2name(err)),
					 errhint("Check the topic name of the source and that the topic exists.")));
			break;
		case KL_KERR_AUTHENTICATION:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
					 errmsg("could not %s: the Kafka cluster of server \"%s\" refused the credentials",
							what, kk->server_name),
					 errdetail_internal("librdkafka: %s (%s)", detail, rd_kafka_err2name(err)),
					 errhint("Check the user mapping of the current role for server \"%s\" (SASL or SSL settings).",
							 kk->server_name)));
			break;
		case KL_KERR_AUTHORIZATION:
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("could not %s: the Kafka cluster of server \"%s\" denied the permission",
							what, kk->server_name),
					 errdetail_internal("librdkafka: %s (%s)", detail, rd_kafka_err2name(err)),
					 errhint("Grant the Kafka principal of the current role's user mapping for server \"%s\" access to the topic and the consumer group (Kafka ACLs).",
							 kk->server_name)));
			break;
		case KL_KERR_OTHER:
			ereport(ERROR,
					(errcode(ERRCODE_FDW_ERROR),
					 errmsg("could not %s on server \"%s\"", what, kk->server_name),
					 errdetail_internal("librdkafka: %s (%s)", detail, rd_kafka_err2name(err)),
					 errhint("The Kafka cluster refused the request. Nothing that already landed is lost; "
							 "the next call resumes from the committed offset and reuses what is durable.")));
	}
	pg_unreachable();
}

/*
 * kl_ms_left
 *		Milliseconds from now to a deadline, 0 when it has passed.
 */
static int
kl_ms_left(TimestampTz deadline)
{
	TimestampTz now = GetCurrentTimestamp();

	if (now >= deadline)
		return 0;
	return (int) Min((deadline - now) / 1000, INT_MAX);
}

/*
 * kl_attempt_ms
 *		Timeout of the next attempt of a blocking librdkafka call: 100 ms,
 *		doubling up to 1 s, so that a slow broker is waited for while
 *		CHECK_FOR_INTERRUPTS still runs at least every second; never beyond
 *		the deadline (but at least 1 ms, so that every call is tried once).
 */
static int
kl_attempt_ms(int *attempt, TimestampTz deadline)
{
	int			ms = Min(100 << Min(*attempt, 4), 1000);

	(*attempt)++;
	return Max(Min(ms, kl_ms_left(deadline)), 1);
}

/*
 * kl_kafka_partition_count
 *		Wait, interruptibly and until the deadline, for the cluster to answer
 *		a metadata request for the topic, and return the topic's partition
 *		count.  Requesting metadata synchronously first also makes the first
 *		fetch start at once.
 */
int
kl_kafka_partition_count(KlKafka *kk, const char *topic, TimestampTz deadline)
{
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(kk->rk, topic, NULL);
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_resp_err_t err;
	int			count = -1;
	int			attempt = 0;

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		kl_kafka_serve(kk);
		err = rd_kafka_metadata(kk->rk, 0, rkt, &md, kl_attempt_ms(&attempt, deadline));
		if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
		{
			if (md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR)
			{
				count = md->topics[0].partition_cnt;
				rd_kafka_metadata_destroy(md);
				break;
			}
			err = md->topic_cnt == 1 ? md->topics[0].err : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
			rd_kafka_metadata_destroy(md);
			if (err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
				err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC)
			{
				rd_kafka_topic_destroy(rkt);
				kl_kafka_flush_log(kk);
				ereport(ERROR,
						(errcode(ERRCODE_FDW_TABLE_NOT_FOUND),
						 errmsg("topic \"%s\" does not exist on server \"%s\"",
								topic, kk->server_name),
						 errhint("Create the topic, or correct the source with kafka_lake.drop_source and kafka_lake.create_source.")));
			}
		}
		if (kl_kafka_error_class(err) != KL_KERR_UNAVAILABLE ||
			GetCurrentTimestamp() >= deadline)
		{
			rd_kafka_topic_destroy(rkt);
			kl_kafka_error(kk, "read topic metadata", err);
		}
	}
	rd_kafka_topic_destroy(rkt);
	return count;
}

/*
 * kl_kafka_cluster_id
 *		The cluster id (palloc'd), or an ERROR if the cluster does not answer
 *		before the deadline.
 */
char *
kl_kafka_cluster_id(KlKafka *kk, TimestampTz deadline)
{
	int			attempt = 0;

	for (;;)
	{
		char	   *id;

		CHECK_FOR_INTERRUPTS();
		kl_kafka_serve(kk);
		id = rd_kafka_clusterid(kk->rk, kl_attempt_ms(&attempt, deadline));
		if (id != NULL)
		{
			char	   *result = pstrdup(id);

			rd_kafka_mem_free(kk->rk, id);
			return result;
		}
		if (GetCurrentTimestamp() >= deadline)
			kl_kafka_error(kk, "read the cluster id", RD_KAFKA_RESP_ERR__TIMED_OUT);
	}
}

/*
 * kl_kafka_watermarks
 *		Low and high watermark of a partition, asked of the broker.
 */
void
kl_kafka_watermarks(KlKafka *kk, const char *topic, int32 partition,
					int64 *low, int64 *high, TimestampTz deadline)
{
	int			attempt = 0;

	for (;;)
	{
		rd_kafka_resp_err_t err;

		CHECK_FOR_INTERRUPTS();
		kl_kafka_serve(kk);
		err = rd_kafka_query_watermark_offsets(kk->rk, topic, partition, low, high,
											   kl_attempt_ms(&attempt, deadline));
		if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
			return;
		if (kl_kafka_error_class(err) != KL_KERR_UNAVAILABLE ||
			GetCurrentTimestamp() >= deadline)
			kl_kafka_error(kk, "read the watermarks", err);
	}
}

/*
 * kl_kafka_list_offsets
 *		One ListOffsets round trip for partitions 0..n-1 of a topic, each
 *		asked for `query`: RD_KAFKA_OFFSET_BEGINNING (the low watermark),
 *		RD_KAFKA_OFFSET_END (the high watermark) or a record timestamp in
 *		milliseconds (the earliest offset whose record's timestamp is at or
 *		after it; -1 where the broker has none).  Answers go to out[0..n-1].
 *		Retried until the deadline while the cluster does not answer.
 */
static void
kl_kafka_list_offsets(KlKafka *kk, const char *topic, int n, int64 query, int64 *out,
					  TimestampTz deadline, const char *what)
{
	rd_kafka_topic_partition_list_t *parts = NULL;
	rd_kafka_resp_err_t err;
	int			attempt = 0;

	for (;;)
	{
		if (parts != NULL)
			rd_kafka_topic_partition_list_destroy(parts);
		parts = rd_kafka_topic_partition_list_new(n);
		for (int p = 0; p < n; p++)
			rd_kafka_topic_partition_list_add(parts, topic, p)->offset = query;
		CHECK_FOR_INTERRUPTS();
		kl_kafka_serve(kk);
		err = rd_kafka_offsets_for_times(kk->rk, parts, kl_attempt_ms(&attempt, deadline));
		if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
		{
			for (int i = 0; i < parts->cnt && err == RD_KAFKA_RESP_ERR_NO_ERROR; i++)
				err = parts->elems[i].err;
		}
		if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
			break;
		if (kl_kafka_error_class(err) != KL_KERR_UNAVAILABLE ||
			GetCurrentTimestamp() >= deadline)
		{
			rd_kafka_topic_partition_list_destroy(parts);
			kl_kafka_error(kk, what, err);
		}
	}
	for (int i = 0; i < parts->cnt; i++)
	{
		int32		p = parts->elems[i].partition;

		if (p >= 0 && p < n)
			out[p] = parts->elems[i].offset;
	}
	rd_kafka_topic_partition_list_destroy(parts);
}

/*
 * kl_kafka_all_watermarks
 *		Low and high watermarks of partitions 0..n-1 of a topic, in two
 *		ListOffsets round trips for all of them (asking partition by
 *		partition costs a round trip and a poll interval each).  Both
 *		passes share the deadline.
 */
void
kl_kafka_all_watermarks(KlKafka *kk, const char *topic, int n, int64 *low, int64 *high,
						TimestampTz deadline)
{
	/* ListOffsets reads -2 as "earliest" and -1 as "latest" */
	kl_kafka_list_offsets(kk, topic, n, RD_KAFKA_OFFSET_BEGINNING, low, deadline,
						  "read the watermarks");
	kl_kafka_list_offsets(kk, topic, n, RD_KAFKA_OFFSET_END, high, deadline,
						  "read the watermarks");
}

/*
 * kl_kafka_first_record_at
 *		Read the first record of a partition at or after an offset (offsets
 *		may have gaps: compaction, transaction markers): its offset and
 *		timestamp (-1 when the broker gave none).  False when the partition
 *		ends before such a record.  The consumer must not be reading
 *		anything else; it is unassigned again before return.
 */
static bool
kl_kafka_first_record_at(KlKafka *kk, const char *topic, int32 partition, int64 offset,
						 int64 *found, int64 *timestamp_ms, TimestampTz deadline)
{
	bool		result = false;

	kl_kafka_assign(kk, topic, partition, offset);
	for (;;)
	{
		rd_kafka_message_t *msg;

		CHECK_FOR_INTERRUPTS();
		if (GetCurrentTimestamp() >= deadline)
		{
			kl_kafka_unassign(kk);
			kl_kafka_error(kk, "read a record to find an offset by time",
						   RD_KAFKA_RESP_ERR__TIMED_OUT);
		}
		msg = kl_kafka_poll(kk, Max(Min(100, kl_ms_left(deadline)), 1));
		if (msg == NULL)
			continue;
		if (msg->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
		{
			rd_kafka_message_destroy(msg);
			break;
		}
		if (msg->err != RD_KAFKA_RESP_ERR_NO_ERROR)
		{
			rd_kafka_resp_err_t err = msg->err;

			rd_kafka_message_destroy(msg);
			kl_kafka_unassign(kk);
			kl_kafka_error(kk, "read a record to find an offset by time", err);
		}
		if (msg->partition == partition && msg->offset >= offset)
		{
			rd_kafka_timestamp_type_t type;

			*found = msg->offset;
			*timestamp_ms = rd_kafka_message_timestamp(msg, &type);
			rd_kafka_message_destroy(msg);
			result = true;
			break;
		}
		rd_kafka_message_destroy(msg);
	}
	kl_kafka_unassign(kk);
	return result;
}

/*
 * kl_kafka_offsets_for_times
 *		For partitions 0..n-1 of a topic: the earliest offset whose record's
 *		timestamp is at or after timestamp_ms, or the high watermark when no
 *		record is (so [result, high) is what lies at or after the time).
 *		low and high are the partitions' watermarks, read by the caller.
 *
 *		The broker's own time index answers first, for all partitions in one
 *		round trip (ListOffsets by time).  An answer "no such record" is
 *		checked against the partition's last record: a broker that keeps no
 *		time index (librdkafka's mock cluster is one) answers that for every
 *		time.  When the last record is at or after the time after all, the
 *		partition is searched by reading records (binary search over
 *		[low, high), a few fetches per step), which assumes timestamps that
 *		do not decrease along the partition, as the broker's index does.
 *		Consumer handles only; the consumer must not be reading anything.
 */
void
kl_kafka_offsets_for_times(KlKafka *kk, const char *topic, int n, int64 timestamp_ms,
						   const int64 *low, const int64 *high, int64 *offsets,
						   TimestampTz deadline)
{
	kl_kafka_list_offsets(kk, topic, n, timestamp_ms, offsets, deadline,
						  "look up offsets by time");
	for (int p = 0; p < n; p++)
	{
		int64		found;
		int64		ts;
		int64		lo;
		int64		hi;

		if (offsets[p] >= 0)
		{
			offsets[p] = Min(Max(offsets[p], low[p]), high[p]);
			continue;
		}
		offsets[p] = high[p];
		if (high[p] <= low[p])
			continue;
		/* is the broker's "none" true?  Look at the last record. */
		if (!kl_kafka_first_record_at(kk, topic, p, high[p] - 1, &found, &ts, deadline) ||
			ts < timestamp_ms)
			continue;
		lo = low[p];
		hi = found;				/* a record at or after the time */
		while (lo < hi)
		{
			int64		mid = lo + (hi - lo) / 2;

			if (!kl_kafka_first_record_at(kk, topic, p, mid, &found, &ts, deadline))
				break;			/* cannot happen below a known record */
			if (ts >= timestamp_ms)
				hi = found;
			else
				lo = found + 1;
		}
		offsets[p] = hi;
	}
}

/*
 * kl_kafka_committed_range
 *		The consumer group's committed offsets of partitions first..first+n-1
 *		of a topic, into offsets[0..n-1]; RD_KAFKA_OFFSET_INVALID where the
 *		group has none.
 */
static void
kl_kafka_committed_range(KlKafka *kk, const char *topic, int32 first, int n, int64 *offsets,
						 TimestampTz deadline)
{
	rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(n);
	rd_kafka_resp_err_t err;
	int			attempt = 0;

	for (int i = 0; i < n; i++)
		rd_kafka_topic_partition_list_add(parts, topic, first + i);

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		kl_kafka_serve(kk);
		err = rd_kafka_committed(kk->rk, parts, kl_attempt_ms(&attempt, deadline));
		for (int i = 0; i < parts->cnt && err == RD_KAFKA_RESP_ERR_NO_ERROR; i++)
			err = parts->elems[i].err;
		if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
			break;
		if (kl_kafka_error_class(err) != KL_KERR_UNAVAILABLE ||
			GetCurrentTimestamp() >= deadline)
		{
			rd_kafka_topic_partition_list_destroy(parts);
			kl_kafka_error(kk, "read the consumer group's committed offsets", err);
		}
	}
	for (int i = 0; i < parts->cnt; i++)
	{
		rd_kafka_topic_partition_t *tp = &parts->elems[i];

		if (tp->partition >= first && tp->partition < first + n)
			offsets[tp->partition - first] = tp->offset >= 0 ? tp->offset : RD_KAFKA_OFFSET_INVALID;
	}
	rd_kafka_topic_partition_list_destroy(parts);
}

/*
 * kl_kafka_committed
 *		The consumer group's committed offsets of partitions 0..n-1 of a
 *		topic; RD_KAFKA_OFFSET_INVALID where the group has none.
 */
void
kl_kafka_committed(KlKafka *kk, const char *topic, int n, int64 *offsets, TimestampTz deadline)
{
	kl_kafka_committed_range(kk, topic, 0, n, offsets, deadline);
}

/*
 * kl_kafka_committed_one
 *		The consumer group's committed offset of one partition, read now
 *		(-1 when the group has none).
 */
int64
kl_kafka_committed_one(KlKafka *kk, const char *topic, int32 partition, TimestampTz deadline)
{
	int64		offset;

	kl_kafka_committed_range(kk, topic, partition, 1, &offset, deadline);
	return offset >= 0 ? offset : -1;
}

/*
 * kl_kafka_commit
 *		Commit one partition's next offset to the consumer group and wait,
 *		until the deadline, for the coordinator's answer.
 *
 *		rd_kafka_commit(..., async = 0) cannot be used: it waits on a
 *		condition variable until librdkafka gives up (about 45 s against a
 *		broker that went down), deaf to cancel and statement_timeout.  The
 *		commit is sent asynchronously instead, its result delivered to the
 *		handle's own queue, which is polled in 100 ms slices.
 */
void
kl_kafka_commit(KlKafka *kk, const char *topic, int32 partition, int64 next_offset,
				TimestampTz deadline)
{
	rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
	rd_kafka_resp_err_t err;

	if (kk->queue == NULL)
		kk->queue = rd_kafka_queue_new(kk->rk);
	rd_kafka_topic_partition_list_add(parts, topic, partition)->offset = next_offset;
	err = rd_kafka_commit_queue(kk->rk, parts, kk->queue, NULL, NULL);
	rd_kafka_topic_partition_list_destroy(parts);
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
		kl_kafka_error(kk, "commit the consumer group's offset", err);
	kk->commit_pending = true;

	for (;;)
	{
		rd_kafka_event_t *ev;

		CHECK_FOR_INTERRUPTS();
		ev = rd_kafka_queue_poll(kk->queue, Max(Min(100, kl_ms_left(deadline)), 1));
		if (kk->log_count != kk->log_flushed)
			kl_kafka_flush_log(kk);
		if (ev != NULL)
		{
			if (rd_kafka_event_type(ev) == RD_KAFKA_EVENT_OFFSET_COMMIT)
			{
				const rd_kafka_topic_partition_list_t *result;

				err = rd_kafka_event_error(ev);
				result = rd_kafka_event_topic_partition_list(ev);
				if (err == RD_KAFKA_RESP_ERR_NO_ERROR && result != NULL && result->cnt > 0)
					err = result->elems[0].err;
				rd_kafka_event_destroy(ev);
				kk->commit_pending = false;
				break;
			}
			rd_kafka_event_destroy(ev);
			continue;
		}
		if (GetCurrentTimestamp() >= deadline)
		{
			err = RD_KAFKA_RESP_ERR__TIMED_OUT;
			break;
		}
	}
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
		kl_kafka_error(kk, "commit the consumer group's offset", err);
}

/*
 * READING A PARTITION, AND THE NEXT ONES AHEAD
 *
 * land() reads its partitions one after another.  A partition just assigned
 * sends its first fetch only then, and its first records come a round trip
 * or two later (about 2 ms on this machine's test broker): for a topic of
 * many small partitions that wait is a third of the landing.  So the
 * consumer may also assign the next partitions ahead of time
 * (kl_kafka_read_ahead), each with a queue of its own, no longer forwarded
 * to the consumer queue: its records wait there, fetched, until it is the
 * partition read (kl_kafka_assign at the same offset), and no window of
 * another partition ever sees them.  Every assignment is incremental
 * (rd_kafka_incremental_assign), so assigning one partition does not stop
 * the fetches of the others.  The caller bounds what is read ahead (land.c).
 */

/*
 * kl_kafka_add_part
 *		Assign a partition at an offset, with its own queue; its index in
 *		kk->parts, or -1 when there is no room or no queue for it.
 */
static int
kl_kafka_add_part(KlKafka *kk, const char *topic, int32 partition, int64 offset)
{
	rd_kafka_topic_partition_list_t *list;
	rd_kafka_queue_t *q;
	rd_kafka_error_t *error;
	KlKafkaPart *part;

	if (kk->nparts >= KL_KAFKA_AHEAD + 1)
		return -1;
	q = rd_kafka_queue_get_partition(kk->rk, topic, partition);
	if (q == NULL)
		return -1;
	/* before the first fetch: none of its records reaches the consumer queue */
	rd_kafka_queue_forward(q, NULL);
	list = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(list, topic, partition)->offset = offset;
	error = rd_kafka_incremental_assign(kk->rk, list);
	rd_kafka_topic_partition_list_destroy(list);
	if (error != NULL)
	{
		rd_kafka_resp_err_t err = rd_kafka_error_code(error);

		rd_kafka_error_destroy(error);
		rd_kafka_queue_destroy(q);
		kl_kafka_error(kk, "assign the partition", err);
	}
	part = &kk->parts[kk->nparts];
	part->topic = MemoryContextStrdup(TopTransactionContext, topic);
	part->partition = partition;
	part->offset = offset;
	part->queue = q;
	kk->assigned = true;
	return kk->nparts++;
}

/*
 * kl_kafka_drop_part
 *		Unassign one of kk->parts; its queue forwards to the consumer queue
 *		again, as an unassigned partition's does.
 */
static void
kl_kafka_drop_part(KlKafka *kk, int i)
{
	KlKafkaPart *part = &kk->parts[i];
	rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(1);
	rd_kafka_error_t *error;
	rd_kafka_queue_t *consumer;

	rd_kafka_topic_partition_list_add(list, part->topic, part->partition);
	error = rd_kafka_incremental_unassign(kk->rk, list);
	rd_kafka_topic_partition_list_destroy(list);
	if (error != NULL)
		rd_kafka_error_destroy(error);	/* not assigned: nothing to stop */
	consumer = rd_kafka_queue_get_consumer(kk->rk);
	if (consumer != NULL)
	{
		rd_kafka_queue_forward(part->queue, consumer);
		rd_kafka_queue_destroy(consumer);
	}
	rd_kafka_queue_destroy(part->queue);
	pfree(part->topic);
	if (kk->current == i)
		kk->current = -1;
	else if (kk->current > i)
		kk->current--;
	memmove(&kk->parts[i], &kk->parts[i + 1], sizeof(KlKafkaPart) * (kk->nparts - i - 1));
	kk->nparts--;
	kk->assigned = (kk->nparts > 0);
}

/*
 * kl_kafka_find_part
 *		The index of a partition in kk->parts, or -1.
 */
static int
kl_kafka_find_part(KlKafka *kk, const char *topic, int32 partition)
{
	for (int i = 0; i < kk->nparts; i++)
		if (kk->parts[i].partition == partition && strcmp(kk->parts[i].topic, topic) == 0)
			return i;
	return -1;
}

/*
 * kl_kafka_assign
 *		Start reading one partition at an offset: kl_kafka_poll returns its
 *		records.  A partition read ahead at that offset keeps what it
 *		fetched; at another, it is assigned again.
 */
void
kl_kafka_assign(KlKafka *kk, const char *topic, int32 partition, int64 offset)
{
	int			i = kl_kafka_find_part(kk, topic, partition);

	if (i >= 0 && kk->parts[i].offset != offset)
	{
		kl_kafka_drop_part(kk, i);
		i = -1;
	}
	if (i < 0 && kk->nparts >= KL_KAFKA_AHEAD + 1)
		kl_kafka_drop_part(kk, kk->nparts - 1);	/* the farthest ahead */
	if (i < 0)
		i = kl_kafka_add_part(kk, topic, partition, offset);
	if (i < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("partition %d of topic \"%s\" is not known to the consumer", partition, topic),
				 errhint("The topic's metadata may be stale: call the function again.")));
	kk->current = i;
}

/*
 * kl_kafka_read_ahead
 *		Assign a partition that will be read next, at the offset it will
 *		probably be read from, so that its records are fetched meanwhile.
 *		false when it is assigned already or there is no room.
 */
bool
kl_kafka_read_ahead(KlKafka *kk, const char *topic, int32 partition, int64 offset)
{
	if (kl_kafka_find_part(kk, topic, partition) >= 0)
		return false;
	return kl_kafka_add_part(kk, topic, partition, offset) >= 0;
}

/*
 * kl_kafka_forget_ahead
 *		Unassign the partitions read ahead that will not be read: those of
 *		another topic, or below a partition (the caller went past them).
 */
void
kl_kafka_forget_ahead(KlKafka *kk, const char *topic, int32 below)
{
	for (int i = kk->nparts - 1; i >= 0; i--)
		if (i != kk->current &&
			(strcmp(kk->parts[i].topic, topic) != 0 || kk->parts[i].partition < below))
			kl_kafka_drop_part(kk, i);
}

/*
 * kl_kafka_unassign
 *		Stop reading the current partition (those read ahead go on).
 */
void
kl_kafka_unassign(KlKafka *kk)
{
	if (kk->current >= 0)
		kl_kafka_drop_part(kk, kk->current);
	kk->current = -1;
}

/*
 * kl_kafka_unassign_all
 *		Stop reading every partition.
 */
void
kl_kafka_unassign_all(KlKafka *kk)
{
	while (kk->nparts > 0)
		kl_kafka_drop_part(kk, kk->nparts - 1);
	kk->current = -1;
}

/*
 * kl_kafka_poll
 *		Wait up to timeout_ms for the next message.  Returns NULL on timeout,
 *		a message otherwise (the caller destroys it); partition EOF is
 *		returned as a message with err = RD_KAFKA_RESP_ERR__PARTITION_EOF.
 *		Other errors are returned too, for the caller to judge.
 */
rd_kafka_message_t *
kl_kafka_poll(KlKafka *kk, int timeout_ms)
{
	rd_kafka_message_t *msg;

	if (kk->current >= 0)
	{
		/* the partition's own queue; the consumer queue's errors too */
		msg = rd_kafka_consume_queue((rd_kafka_queue_t *) kk->parts[kk->current].queue, timeout_ms);
		if (msg == NULL)
		{
			msg = rd_kafka_consumer_poll(kk->rk, 0);
			/*
			 * No record of the partition read comes this way: one here is
			 * of a partition no longer assigned (its queue forwards to the
			 * consumer queue again), left over.
			 */
			if (msg != NULL && msg->err == RD_KAFKA_RESP_ERR_NO_ERROR)
			{
				rd_kafka_message_destroy(msg);
				msg = NULL;
			}
		}
	}
	else
		msg = rd_kafka_consumer_poll(kk->rk, timeout_ms);

	if (kk->log_count != kk->log_flushed)
		kl_kafka_flush_log(kk);
	return msg;
}

/*
 * kl_kafka_hold
 *		Keep a polled message (its key and value are used in place) until
 *		kl_kafka_release_held; the handle destroys it if an ERROR comes
 *		first, since librdkafka must get its messages back before the
 *		handle goes.
 */
void
kl_kafka_hold(KlKafka *kk, rd_kafka_message_t *msg)
{
	if (kk->nheld == kk->held_cap)
	{
		int			cap = Max(kk->held_cap * 2, 1024);

		kk->held = kk->held ?
			repalloc(kk->held, sizeof(rd_kafka_message_t *) * cap) :
			MemoryContextAlloc(TopTransactionContext, sizeof(rd_kafka_message_t *) * cap);
		kk->held_cap = cap;
	}
	kk->held[kk->nheld++] = msg;
}

/*
 * kl_kafka_release_held
 *		Give the held messages back to librdkafka.
 */
void
kl_kafka_release_held(KlKafka *kk)
{
	for (int i = 0; i < kk->nheld; i++)
		rd_kafka_message_destroy(kk->held[i]);
	kk->nheld = 0;
}

/*
 * kl_kafka_produce_one
 *		Send one record and wait for its delivery report; returns the offset.
 */
static int64
kl_kafka_produce_one(KlKafka *kk, const char *topic, const char *value, size_t value_len,
					 const char *key, size_t key_len, int32 partition, TimestampTz deadline)
{
	rd_kafka_resp_err_t err;

	kk->delivered = false;
	kk->delivery_err = RD_KAFKA_RESP_ERR_NO_ERROR;
	err = rd_kafka_producev(kk->rk,
							RD_KAFKA_V_TOPIC(topic),
							RD_KAFKA_V_PARTITION(partition),
							RD_KAFKA_V_VALUE((void *) value, value_len),
							RD_KAFKA_V_KEY((void *) key, key_len),
							RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
							RD_KAFKA_V_END);
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
		kl_kafka_error(kk, "send the record", err);

	while (!kk->delivered)
	{
		CHECK_FOR_INTERRUPTS();
		rd_kafka_poll(kk->rk, Max(Min(50, kl_ms_left(deadline)), 1));
		kl_kafka_flush_log(kk);
		if (!kk->delivered && GetCurrentTimestamp() >= deadline)
			kl_kafka_error(kk, "send the record", RD_KAFKA_RESP_ERR__TIMED_OUT);
	}
	if (kk->delivery_err != RD_KAFKA_RESP_ERR_NO_ERROR)
		kl_kafka_error(kk, "send the record", kk->delivery_err);
	return kk->delivery_offset;
}

/*
 * kl_kafka_delivery_cb
 *		Delivery report: note the result for kl_kafka_produce_one.
 */
static void
kl_kafka_delivery_cb(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque)
{
	KlKafka    *kk = opaque ? *(KlKafka **) opaque : NULL;

	if (kk == NULL)
		return;
	kk->delivered = true;
	kk->delivery_err = msg->err;
	kk->delivery_offset = msg->offset;
}

/*
 * kl_timeout_ms
 *		An interval argument as milliseconds, refused when not positive.
 */
int
kl_timeout_ms(Interval *iv, const char *argname)
{
	int64		usecs = iv->time + (int64) iv->day * USECS_PER_DAY +
		(int64) iv->month * 30 * USECS_PER_DAY;

	if (usecs <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be positive", argname),
				 errhint("For example: %s => '5 s'.", argname)));
	if (usecs / 1000 > INT_MAX)
		return INT_MAX;
	return (int) Max(usecs / 1000, 1);
}

/*
 * kafka_lake_produce
 *		produce(server, topic, value, key, partition, timeout): send one
 *		record and return its offset.
 */
Datum
kafka_lake_produce(PG_FUNCTION_ARGS)
{
	char	   *server;
	char	   *topic;
	bytea	   *value = NULL;
	bytea	   *key = NULL;
	int32		partition = RD_KAFKA_PARTITION_UA;
	int			timeout_ms = 10000;
	TimestampTz deadline;
	KlKafka    *kk;
	int64		offset;

	kl_check_not_null(fcinfo, 0, "server", "Name a foreign server of the kafka_lake wrapper.");
	kl_check_not_null(fcinfo, 1, "topic", "Name the Kafka topic to send the record to.");
	server = text_to_cstring(PG_GETARG_TEXT_PP(0));
	topic = text_to_cstring(PG_GETARG_TEXT_PP(1));
	kl_check_topic_name(topic);
	if (!PG_ARGISNULL(2))
		value = PG_GETARG_BYTEA_PP(2);
	if (!PG_ARGISNULL(3))
		key = PG_GETARG_BYTEA_PP(3);
	if (!PG_ARGISNULL(4))
	{
		partition = PG_GETARG_INT32(4);
		if (partition < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("partition must not be negative")));
	}
	if (!PG_ARGISNULL(5))
		timeout_ms = kl_timeout_ms(PG_GETARG_INTERVAL_P(5), "timeout");

	kl_check_server_usage(kl_get_server(server));
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);
	kk = kl_kafka_open(server, KL_PRODUCER, NULL);
	offset = kl_kafka_produce_one(kk, topic,
								  value ? VARDATA_ANY(value) : NULL,
								  value ? VARSIZE_ANY_EXHDR(value) : 0,
								  key ? VARDATA_ANY(key) : NULL,
								  key ? VARSIZE_ANY_EXHDR(key) : 0,
								  partition, deadline);
	kl_kafka_close(kk);
	PG_RETURN_INT64(offset);
}

/*
 * kafka_lake_lag
 *		lag(source, timeout): per partition the source owns, the group's
 *		committed offset, the high watermark and their difference, read
 *		from the broker.
 */
Datum
kafka_lake_lag(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KlSource   *src;
	KlKafka    *kk;
	int			timeout_ms = 10000;
	TimestampTz deadline;
	int			nparts;
	int64	   *committed;
	int64	   *lows;
	int64	   *highs;

	kl_check_not_null(fcinfo, 0, "source", NULL);
	if (!PG_ARGISNULL(1))
		timeout_ms = kl_timeout_ms(PG_GETARG_INTERVAL_P(1), "timeout");
	src = kl_source_lookup(text_to_cstring(PG_GETARG_TEXT_PP(0)));

	kl_init_materialized_srf(fcinfo);
	/* one deadline for every Kafka call of this function */
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);
	kk = kl_kafka_open(src->server, KL_CONSUMER, src->group_id);
	for (int t = 0; t < src->ntopics; t++)
	{
		const char *topic = src->topics[t];

		nparts = kl_kafka_partition_count(kk, topic, deadline);
		committed = palloc(sizeof(int64) * nparts);
		lows = palloc(sizeof(int64) * nparts);
		highs = palloc(sizeof(int64) * nparts);
		kl_kafka_committed(kk, topic, nparts, committed, deadline);
		kl_kafka_all_watermarks(kk, topic, nparts, lows, highs, deadline);
		for (int p = 0; p < nparts; p++)
		{
			Datum		values[5];
			bool		nulls[5] = {0};
			int64		low = lows[p],
						high = highs[p];

			/* another server's partition (set_partitions) is its lag */
			if (!kl_source_owns(src, p))
				continue;
			values[0] = CStringGetTextDatum(topic);
			values[1] = Int32GetDatum(p);
			if (committed[p] >= 0)
			{
				values[2] = Int64GetDatum(committed[p]);
				values[4] = Int64GetDatum(Max(high - committed[p], 0));
			}
			else
			{
				/* no commit yet: everything still on the broker is lag */
				nulls[2] = true;
				values[4] = Int64GetDatum(high - low);
			}
			values[3] = Int64GetDatum(high);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	kl_kafka_close(kk);
	return (Datum) 0;
}
