/*-------------------------------------------------------------------------
 *
 * kafka_lake_broker.c
 *	  Test and demo Kafka broker for kafka_lake: librdkafka's mock cluster
 *	  served over real TCP on 127.0.0.1, a control client for fault
 *	  injection, a fast producer of seed-style machine events (JSON or
 *	  Avro), and a producer of one record of any bytes and headers.
 *
 * No Kafka server exists on the machines this project is built and tested
 * on.  librdkafka ships a mock cluster (rdkafka_mock.h) that speaks the real
 * wire protocol, keeps topics, consumer groups and committed offsets in
 * memory, and can inject faults.  This program wraps it so that any client
 * (the extension inside a PostgreSQL backend, kcat, a test script) can use
 * it like a real broker.  One binary, four modes:
 *
 *	serve	run the mock cluster until SIGTERM/SIGINT or "shutdown"
 *	ctl		send one control command to a running server
 *	fill	produce N deterministic machine_event_v1 records, fast, as JSON
 *			or as Avro in Confluent's wire format (--avro-schema-id)
 *	send	produce one record: value, key and headers given in hex
 *
 * Design decisions
 *
 * Control channel.  The mock cluster lives inside this process and can only
 * be steered through its C API, so tests need a way to reach the process.
 * A UNIX domain socket (DIR/control.sock) is used: it needs no port (no
 * clash with the brokers' ports, nothing to discover), it is protected by
 * file permissions of DIR, it is removed with the directory, and a stale
 * one left by a killed server is detected by a refused connect() and simply
 * replaced.  The protocol is one command per line, one reply line per
 * command ("ok [data]" or "error <message>"), so `echo ... | nc -U` works
 * too.  Commands are served one connection at a time by the main thread,
 * the only thread that touches the current cluster.
 *
 * Readiness.  DIR/bootstrap is written (write .tmp, rename) only once the
 * brokers listen, every topic exists and the control socket accepts, so a
 * harness can wait for that file.  It holds the bootstrap.servers string
 * without a trailing newline.  `serve --detach` forks, waits for the same
 * point and prints the bootstrap string, so scripts need no polling.
 *
 * recreate and replace.  The mock has no DeleteTopics support, so "the
 * topics were deleted and recreated" is simulated by replacing the whole
 * cluster in-process with a new one holding the same topics (same partition
 * counts, learnt from a Metadata request so that auto-created topics come
 * back too).  Data, committed offsets, injected errors, RTTs and down
 * brokers are all gone.  Two properties of a real topic recreate do not
 * come for free and are enforced here:
 *
 *	- Same address.  The mock binds its listeners to 127.0.0.1 port 0, so a
 *	  new cluster normally gets new ports.  This program defines bind(),
 *	  accept() and pipe() itself; librdkafka's calls resolve to them (the
 *	  executable's symbols come first in the dynamic symbol lookup).  While a
 *	  cluster is being created, bind() of a loopback socket to port 0 is
 *	  redirected to the port the same broker had before (or to --port),
 *	  retried while the old listener is closing, and left to the kernel only
 *	  if the port stays taken.  Everything else passes through unchanged.
 *
 *	- Same cluster id.  librdkafka 2.0.2 names a mock cluster
 *	  "mockCluster%lx" after its allocation address ((intptr_t)mcluster >> 2),
 *	  so a new cluster may or may not get the old id, as malloc pleases.  The
 *	  id is the first member of the (opaque) cluster struct, a char[32].  At
 *	  startup the program checks that the bytes there are exactly the id a
 *	  client sees; only then does recreate write the old id into the new
 *	  cluster when it differs, and replace write a fresh id when the new one
 *	  was used before.  Without that check passing, the command reports an
 *	  error rather than a wrong id.
 *
 *	  A gate closes the window in which a client could see a half-built
 *	  cluster: while a cluster is being (re)built, accept() on a broker
 *	  socket accepts and at once closes the connection, so a client whose
 *	  address did not change just retries and meets the new cluster only
 *	  with its final id and all its topics.
 *
 *	  The old cluster is destroyed by a background thread: its listeners
 *	  close within milliseconds, but librdkafka's teardown then often waits
 *	  a further second for an internal thread, which nobody needs to wait for.
 *
 * Prompt mock calls.  librdkafka 2.0.2's mock thread sometimes sleeps a
 * full second before serving a control call (a lost wake-up, described at
 * "Wake-up pokes" below), so every command would take 0 to 1 s.  A helper
 * thread pokes the mock's wake-up pipe while a call is in progress.
 *
 * The mock keeps only about 5 MiB (and at most 100,000 message sets) per
 * partition and silently drops the oldest data beyond that, so "fill"
 * compresses with lz4 by default and large fills spread over partitions.
 * When a client names an unknown topic, the mock auto-creates it with 4
 * partitions; it implements Metadata only up to v2, so a client cannot ask
 * it not to.  Create topics up front (--topic, "create").
 *
 * IDENTIFICATION
 *	  test/broker/kafka_lake_broker.c
 *
 *-------------------------------------------------------------------------
 */
#define _DEFAULT_SOURCE

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#define KLB_MAX_BROKERS			16
#define KLB_MAX_PARTITIONS		100000
#define KLB_EXIT_USAGE			64	/* bad command line (sysexits EX_USAGE) */

#define MOCK_ID_PREFIX			"mockCluster"
#define MOCK_ID_FIELD_SIZE		32	/* char id[32] in librdkafka 2.0.2 */

#define CTL_LINE_MAX			1024	/* longest control command line */
#define CTL_IDLE_TIMEOUT_MS		30000	/* drop a silent control client */
#define CTL_DEFAULT_TIMEOUT_S	120 /* ctl: wait this long for a reply */
#define PROBE_TIMEOUT_MS		5000	/* clusterid / metadata probes */
#define PIN_RETRY_MS			5000	/* wait for an old listener to close */

/*
 * DEFAULT_INJECTED_ERROR is pushed by "errors API COUNT" when no code is
 * given.  Measured on librdkafka 2.0.2: REQUEST_TIMED_OUT,
 * COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
 * and UNKNOWN_TOPIC_OR_PART on OffsetCommit are retried inside librdkafka
 * and the commit succeeds; permanent errors are returned by
 * rd_kafka_commit().  INVALID_COMMIT_OFFSET_SIZE is permanent, concerns
 * only the commit, and does not touch group membership.
 */
#define DEFAULT_INJECTED_ERROR	RD_KAFKA_RESP_ERR_INVALID_COMMIT_OFFSET_SIZE

static const char *progname = "kafka_lake_broker";
static bool verbose = false;	/* --verbose: our notes and librdkafka logs */
static int	ready_fd = -1;		/* serve --detach: pipe to waiting parent */


/* ----------------------------------------------------------------
 *		Messages and small helpers
 * ----------------------------------------------------------------
 */

static double monotonic_seconds(void);
static void note(const char *fmt,...) __attribute__((format(printf, 1, 2)));
static void warn(const char *fmt,...) __attribute__((format(printf, 1, 2)));
static void die(const char *fmt,...) __attribute__((format(printf, 1, 2), noreturn));
static void usage_error(const char *fmt,...) __attribute__((format(printf, 1, 2), noreturn));

/*
 * note / print a progress message, only with --verbose
 */
static void
note(const char *fmt,...)
{
	va_list		ap;

	if (!verbose)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "%s: [%.3f] ", progname, monotonic_seconds());
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/*
 * warn / print a warning that the user should see in any case
 */
static void
warn(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s: warning: ", progname);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/*
 * die / print an error and exit 1
 *
 * A detached server's parent is waiting on ready_fd: tell it too.
 */
static void
die(const char *fmt,...)
{
	va_list		ap;
	char		msg[1024];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	fprintf(stderr, "%s: %s\n", progname, msg);
	if (ready_fd >= 0)
	{
		dprintf(ready_fd, "error %s\n", msg);
		close(ready_fd);
		ready_fd = -1;
	}
	exit(1);
}

/*
 * usage_error / complain about the command line and exit KLB_EXIT_USAGE
 */
static void
usage_error(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s: ", progname);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	fprintf(stderr, "Try \"%s --help\" for more information.\n", progname);
	exit(KLB_EXIT_USAGE);
}

/*
 * usage / print the command line reference
 */
static void
usage(FILE *out)
{
	fprintf(out,
			"%s is kafka_lake's test broker: librdkafka's mock Kafka cluster on\n"
			"127.0.0.1, controlled through a UNIX socket, plus a fast event producer\n"
			"and a producer of single records.\n"
			"\n"
			"Usage:\n"
			"  %s serve --dir DIR [--brokers N] [--topic NAME:PARTITIONS]...\n"
			"        [--port PORT] [--detach] [--verbose]\n"
			"  %s ctl --dir DIR [--timeout SECONDS] COMMAND [ARGS...]\n"
			"  %s fill --bootstrap HOST:PORT --topic T --count N [--partitions P]\n"
			"        [--date YYYY-MM-DD] [--start K] [--machines M] [--bad-every B]\n"
			"        [--timestamp event|now] [--compression CODEC] [-X PROP=VALUE]...\n"
			"        [--avro-schema-id N] [--timeout SECONDS] [--verbose]\n"
			"  %s send --bootstrap HOST:PORT --topic T [--partition P] --value-hex HEX\n"
			"        [--key-hex HEX] [--header NAME=HEX]... [--timeout SECONDS] [--verbose]\n"
			"\n"
			"serve options:\n"
			"  --dir DIR            state directory: bootstrap, pid, control.sock\n"
			"  --brokers N          number of brokers, ids 1..N (default 1, max %d)\n"
			"  --topic NAME:P       create topic NAME with P partitions (repeatable)\n"
			"  --port PORT          brokers listen on PORT..PORT+N-1 (default: any)\n"
			"  --detach             run in the background; print the bootstrap string\n"
			"                       once ready; logs go to DIR/broker.log\n"
			"  --verbose            show progress and librdkafka logs on stderr\n"
			"\n"
			"fill options:\n"
			"  --count N            records to produce, event numbers K..K+N-1\n"
			"  --start K            first event number (default 1)\n"
			"  --partitions P       round-robin over partitions 0..P-1 (default: all)\n"
			"  --date YYYY-MM-DD    business date (default 2026-06-29)\n"
			"  --machines M         machine-001..machine-M (default 10)\n"
			"  --bad-every B        every event number divisible by B is cut in half\n"
			"                       (invalid JSON, or a truncated Avro datum)\n"
			"  --timestamp event    record timestamp = event_time (default), or: now\n"
			"  --compression CODEC  none, gzip, snappy, lz4 (default), zstd\n"
			"  --avro-schema-id N   values in Confluent's wire format: byte 0, N (4 bytes,\n"
			"                       big-endian), the Avro datum of the same 13 fields\n"
			"                       (test/fixtures/avro/cases.jsonl, \"machine event\")\n"
			"  -X PROP=VALUE        any librdkafka producer property\n"
			"  The topic must exist.  Same arguments, same records (keys, values,\n"
			"  timestamps, partitions).\n"
			"\n"
			"send options (one record; waits for it, prints its offset on stdout):\n"
			"  --partition P        partition P (default: librdkafka's partitioner)\n"
			"  --value-hex HEX      the value's bytes in hex (\"\": empty)\n"
			"  --key-hex HEX        the key's bytes in hex (\"\": empty; default: no key)\n"
			"  --header NAME=HEX    a header, in order (repeatable; NAME= : empty value)\n"
			"  --timeout SECONDS    give up after this long (default 30)\n"
			"  The topic must exist.\n"
			"\n"
			"Control commands (ctl), one reply each, \"ok [data]\" or \"error MESSAGE\":\n"
			"  ping | bootstrap | clusterid | help\n"
			"  create TOPIC PARTITIONS\n"
			"  down BROKER_ID | up BROKER_ID        (-1 = all brokers)\n"
			"  rtt BROKER_ID MS\n"
			"  errors API COUNT [ERROR_CODE]        API: name or key, e.g. OffsetCommit, 8\n"
			"                                       default code: %s (%d)\n"
			"  clear API\n"
			"  recreate    new empty cluster, same topics, same ports, SAME cluster id\n"
			"  replace     new empty cluster, same topics, same ports, NEW cluster id\n"
			"  shutdown\n"
			"\n"
			"ctl exits 0 on ok (printing the data, if any), 1 on error, 2 when it\n"
			"cannot reach the server.  fill and send exit 1 when a record is not\n"
			"delivered.  Bad command lines exit %d.\n",
			progname, progname, progname, progname, progname, KLB_MAX_BROKERS,
			rd_kafka_err2name(DEFAULT_INJECTED_ERROR),
			(int) DEFAULT_INJECTED_ERROR, KLB_EXIT_USAGE);
}

/*
 * parse_long / parse a whole decimal integer within [min, max]
 *
 * Returns false (and leaves *result alone) on junk, overflow or range.
 */
static bool
parse_long(const char *s, long min, long max, long *result)
{
	char	   *end;
	long		v;

	if (s == NULL || *s == '\0')
		return false;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return false;
	*result = v;
	return true;
}

/*
 * option_long / parse_long for a command line option, or a usage error
 */
static long
option_long(const char *opt, const char *value, long min, long max)
{
	long		v;

	if (!parse_long(value, min, max, &v))
		usage_error("invalid value \"%s\" for %s: expected an integer from %ld to %ld",
					value ? value : "", opt, min, max);
	return v;
}

/*
 * valid_topic_name / Kafka's rule: [A-Za-z0-9._-]{1,249}, not "." or ".."
 */
static bool
valid_topic_name(const char *name)
{
	size_t		len = strlen(name);

	if (len < 1 || len > 249 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return false;
	for (const char *p = name; *p; p++)
	{
		if (!isalnum((unsigned char) *p) && *p != '.' && *p != '_' && *p != '-')
			return false;
	}
	return true;
}

/*
 * write_all / write the whole buffer, retrying on EINTR and short writes
 */
static bool
write_all(int fd, const char *buf, size_t len)
{
	while (len > 0)
	{
		ssize_t		n = write(fd, buf, len);

		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			return false;
		}
		buf += n;
		len -= (size_t) n;
	}
	return true;
}

/*
 * write_file_atomic / replace PATH with CONTENT: write PATH.tmp, fsync,
 * rename
 *
 * Readers either see the old file, no file, or the complete new one.
 */
static bool
write_file_atomic(const char *path, const char *content, char *errbuf, size_t errsize)
{
	char		tmp[PATH_MAX];
	int			fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
	{
		snprintf(errbuf, errsize, "could not create \"%.400s\": %s", tmp, strerror(errno));
		return false;
	}
	if (!write_all(fd, content, strlen(content)) || fsync(fd) != 0)
	{
		snprintf(errbuf, errsize, "could not write \"%.400s\": %s", tmp, strerror(errno));
		close(fd);
		unlink(tmp);
		return false;
	}
	close(fd);
	if (rename(tmp, path) != 0)
	{
		snprintf(errbuf, errsize, "could not rename \"%.400s\" to \"%.400s\": %s",
				 tmp, path, strerror(errno));
		unlink(tmp);
		return false;
	}
	return true;
}

/*
 * monotonic_seconds / a clock for measuring durations
 */
static double
monotonic_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}


/* ----------------------------------------------------------------
 *		librdkafka glue shared by all modes
 * ----------------------------------------------------------------
 */

/*
 * rdkafka_log_cb / librdkafka's log callback: print with --verbose, else
 * drop
 *
 * Called from librdkafka's threads; stdio locks each call.
 */
static void
rdkafka_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
	if (!verbose)
		return;
	fprintf(stderr, "%s: rdkafka %d %s %s: %s\n",
			progname, level, rd_kafka_name(rk), fac, buf);
}

/*
 * conf_set_or_die / set one librdkafka property; a bad one is fatal
 */
static void
conf_set_or_die(rd_kafka_conf_t *conf, const char *name, const char *value)
{
	char		errstr[512];

	if (rd_kafka_conf_set(conf, name, value, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
		die("invalid librdkafka property %s=%s: %s", name, value, errstr);
}

/*
 * probe_client_new / a short-lived client handle for asking the cluster
 * what a client would see (cluster id, metadata)
 *
 * A fresh handle every time, so nothing cached from a previous cluster can
 * leak into the answer.
 */
static rd_kafka_t *
probe_client_new(const char *bootstraps, char *errbuf, size_t errsize)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_t *rk;

	rd_kafka_conf_set_log_cb(conf, rdkafka_log_cb);
	if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstraps, errbuf, errsize) != RD_KAFKA_CONF_OK ||
		rd_kafka_conf_set(conf, "client.id", "kafka_lake_broker-probe", errbuf, errsize) != RD_KAFKA_CONF_OK ||
		rd_kafka_conf_set(conf, "allow.auto.create.topics", "false", errbuf, errsize) != RD_KAFKA_CONF_OK)
	{
		rd_kafka_conf_destroy(conf);
		return NULL;
	}
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errbuf, errsize);
	if (rk == NULL)
		rd_kafka_conf_destroy(conf);
	return rk;
}


/* ----------------------------------------------------------------
 *		Socket interposition: pinned ports and the accept gate
 *
 * The definitions of bind(), accept() and pipe() below replace libc's for
 * the whole process, librdkafka's mock included.  Outside a cluster
 * (re)build they pass straight through to the kernel.
 * ----------------------------------------------------------------
 */

static pthread_mutex_t pin_mutex = PTHREAD_MUTEX_INITIALIZER;
static int	pin_ports[KLB_MAX_BROKERS];	/* ports for the next mock listeners */
static int	pin_count = 0;		/* how many pin_ports are valid */
static int	pin_next = 0;		/* next pin_ports entry to hand out */
static int	pin_misses = 0;		/* pinned binds that failed (port taken) */
static int	pin_retry_ms = 0;	/* keep trying a taken pinned port this long */
static int	gate_closed = 0;	/* refuse mock connections while building */
static int	gate_refused = 0;	/* connections refused by the gate */
static int	control_listen_fd = -1;	/* our own socket, never gated */

/*
 * pins_set / make the next COUNT mock listeners bind to PORTS, in order,
 * waiting up to RETRY_MS for a port still held by a closing listener
 */
static void
pins_set(const int *ports, int count, int retry_ms)
{
	pthread_mutex_lock(&pin_mutex);
	pin_retry_ms = retry_ms;
	for (int i = 0; i < count; i++)
		pin_ports[i] = ports[i];
	pin_count = count;
	pin_next = 0;
	pin_misses = 0;
	pthread_mutex_unlock(&pin_mutex);
}

/*
 * pins_clear / stop redirecting binds; returns how many pinned binds failed
 */
static int
pins_clear(void)
{
	int			misses;

	pthread_mutex_lock(&pin_mutex);
	pin_count = 0;
	pin_next = 0;
	misses = pin_misses;
	pthread_mutex_unlock(&pin_mutex);
	return misses;
}

/*
 * gate_set / open or close the accept gate
 */
static void
gate_set(bool closed)
{
	__atomic_store_n(&gate_closed, closed ? 1 : 0, __ATOMIC_SEQ_CST);
}

/*
 * bind / libc's bind(), except that a loopback AF_INET socket asking for
 * port 0 gets the next pinned port, if any
 *
 * librdkafka's mock binds each broker listener to 127.0.0.1:0.  If the
 * pinned port cannot be had (EADDRINUSE, still after the retry time), fall
 * back to the kernel's choice rather than failing: a failed bind inside
 * rd_kafka_mock_cluster_new() aborts the process in librdkafka 2.0.2
 * (measured: an assertion in its error path).
 */
int
bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	if (addr != NULL && addr->sa_family == AF_INET &&
		len >= (socklen_t) sizeof(struct sockaddr_in))
	{
		struct sockaddr_in sin;
		int			port = 0;
		int			retry_ms = 0;

		memcpy(&sin, addr, sizeof(sin));
		if (sin.sin_port == 0 && sin.sin_addr.s_addr == htonl(INADDR_LOOPBACK))
		{
			pthread_mutex_lock(&pin_mutex);
			if (pin_next < pin_count)
			{
				port = pin_ports[pin_next++];
				retry_ms = pin_retry_ms;
			}
			pthread_mutex_unlock(&pin_mutex);
		}
		if (port > 0)
		{
			sin.sin_port = htons((uint16_t) port);
			for (int waited = 0;; waited += 2)
			{
				struct timespec ts = {0, 2 * 1000 * 1000L};

				if (syscall(SYS_bind, fd, (const struct sockaddr *) &sin, sizeof(sin)) == 0)
					return 0;
				if (errno != EADDRINUSE || waited >= retry_ms)
					break;
				nanosleep(&ts, NULL);
			}
			pthread_mutex_lock(&pin_mutex);
			pin_misses++;
			pthread_mutex_unlock(&pin_mutex);
		}
	}
	return (int) syscall(SYS_bind, fd, addr, len);
}

/*
 * accept / libc's accept(), except that while the gate is closed a new
 * connection to a mock broker is accepted and closed at once
 *
 * The client sees a broker that dropped the connection and retries after
 * its reconnect backoff.  librdkafka logs the failed accept (visible with
 * --verbose) and carries on.
 */
int
accept(int fd, struct sockaddr *restrict addr, socklen_t *restrict len)
{
	int			s;

#ifdef SYS_accept4
	s = (int) syscall(SYS_accept4, fd, addr, len, 0);
#else
	s = (int) syscall(SYS_accept, fd, addr, len);
#endif
	if (s >= 0 && fd != control_listen_fd &&
		__atomic_load_n(&gate_closed, __ATOMIC_SEQ_CST))
	{
		close(s);
		__atomic_add_fetch(&gate_refused, 1, __ATOMIC_SEQ_CST);
		errno = ECONNABORTED;
		return -1;
	}
	return s;
}


/*
 * Wake-up pokes.  Every mock API call but the error stacks is an "op" that
 * the mock thread serves after a byte on its wake-up pipe interrupts its
 * poll().  With librdkafka 2.0.2 single commands sometimes took exactly
 * 1 s (the mock thread's poll timeout) and recreates of 20 topics up to
 * 7 s.  The likely cause is a lost wake-up: the mock thread serves op A,
 * the caller enqueues op B and writes B's byte, then the mock thread drains
 * the pipe for A's wake-up, B's byte included, and sleeps with B waiting.
 * Whatever the cause, extra wake-ups cure it.  So pipe()
 * calls made by the main thread inside rd_kafka_mock_cluster_new() are
 * captured (a dup() of the write end, so the descriptor stays ours even
 * after librdkafka closes its copy), and while a mock call is in progress
 * a helper thread writes a byte to them every WAKE_POKE_US.  Spurious
 * wake-ups are harmless: the mock thread drains the pipe and polls again.
 */
#define WAKE_MAX_FDS	16
#define WAKE_POKE_US	2000

static pthread_mutex_t wake_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake_cond = PTHREAD_COND_INITIALIZER;
static int	wake_fds[WAKE_MAX_FDS];	/* our dups of the wake-up pipes */
static int	wake_fd_gen[WAKE_MAX_FDS];	/* cluster generation of each */
static int	wake_nfds = 0;
static int	wake_generation = 0;	/* generation being captured */
static int	wake_inflight = 0;	/* mock calls in progress */
static int	wake_capturing = 0;	/* capture pipes made by wake_thread */
static pthread_t wake_capture_thread;	/* the thread creating a cluster */

/*
 * pipe / libc's pipe(), plus capture of the mock cluster's wake-up pipe
 */
int
pipe(int fds[2])
{
	int			rc = (int) syscall(SYS_pipe2, fds, 0);

	if (rc == 0 && __atomic_load_n(&wake_capturing, __ATOMIC_SEQ_CST) &&
		pthread_equal(pthread_self(), wake_capture_thread))
	{
		pthread_mutex_lock(&wake_mutex);
		if (wake_nfds < WAKE_MAX_FDS)
		{
			int			fd = fcntl(fds[1], F_DUPFD_CLOEXEC, 0);

			if (fd >= 0)
			{
				wake_fd_gen[wake_nfds] = wake_generation;
				wake_fds[wake_nfds++] = fd;
			}
		}
		pthread_mutex_unlock(&wake_mutex);
	}
	return rc;
}

/*
 * wake_capture / start or stop capturing the calling thread's pipes, as
 * belonging to cluster GENERATION
 */
static void
wake_capture(bool on, int generation)
{
	if (on)
	{
		wake_capture_thread = pthread_self();
		pthread_mutex_lock(&wake_mutex);
		wake_generation = generation;
		pthread_mutex_unlock(&wake_mutex);
	}
	__atomic_store_n(&wake_capturing, on ? 1 : 0, __ATOMIC_SEQ_CST);
}

/*
 * wake_release / forget the pipes of cluster GENERATION, which is gone
 */
static void
wake_release(int generation)
{
	int			kept = 0;

	pthread_mutex_lock(&wake_mutex);
	for (int i = 0; i < wake_nfds; i++)
	{
		if (wake_fd_gen[i] == generation)
			close(wake_fds[i]);
		else
		{
			wake_fds[kept] = wake_fds[i];
			wake_fd_gen[kept] = wake_fd_gen[i];
			kept++;
		}
	}
	wake_nfds = kept;
	pthread_mutex_unlock(&wake_mutex);
}

/*
 * wake_begin / wake_end / bracket calls into the mock cluster
 */
static void
wake_begin(void)
{
	pthread_mutex_lock(&wake_mutex);
	wake_inflight++;
	pthread_cond_signal(&wake_cond);
	pthread_mutex_unlock(&wake_mutex);
}

static void
wake_end(void)
{
	pthread_mutex_lock(&wake_mutex);
	wake_inflight--;
	pthread_mutex_unlock(&wake_mutex);
}

/*
 * wake_poker_main / the helper thread: poke while mock calls are running
 *
 * The pipes are non-blocking (librdkafka makes them so): a full pipe, or
 * one whose reader is gone (EPIPE, SIGPIPE ignored), just fails the write.
 */
static void *
wake_poker_main(void *arg)
{
	(void) arg;
	for (;;)
	{
		struct timespec ts = {0, WAKE_POKE_US * 1000L};

		pthread_mutex_lock(&wake_mutex);
		while (wake_inflight == 0)
			pthread_cond_wait(&wake_cond, &wake_mutex);
		for (int i = 0; i < wake_nfds; i++)
		{
			if (write(wake_fds[i], "", 1) < 0)
			{
				/* EAGAIN, EPIPE: nothing to do */
			}
		}
		pthread_mutex_unlock(&wake_mutex);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/*
 * wake_start_poker / start the helper thread with all signals blocked, so
 * that SIGTERM and friends go to the main thread
 */
static void
wake_start_poker(void)
{
	sigset_t	all;
	sigset_t	old;
	pthread_t	thread;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&thread, NULL, wake_poker_main, NULL) != 0)
		die("could not start a thread: %s", strerror(errno));
	pthread_detach(thread);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}


/* ----------------------------------------------------------------
 *		Protocol names: API keys and error codes
 * ----------------------------------------------------------------
 */

typedef struct ApiName
{
	const char *name;			/* Kafka protocol request name */
	int			key;			/* its ApiKey */
} ApiName;

static const ApiName api_names[] = {
	{"Produce", 0}, {"Fetch", 1}, {"ListOffsets", 2}, {"Metadata", 3},
	{"OffsetCommit", 8}, {"OffsetFetch", 9}, {"FindCoordinator", 10},
	{"JoinGroup", 11}, {"Heartbeat", 12}, {"LeaveGroup", 13},
	{"SyncGroup", 14}, {"DescribeGroups", 15}, {"ListGroups", 16},
	{"SaslHandshake", 17}, {"ApiVersion", 18}, {"ApiVersions", 18},
	{"CreateTopics", 19}, {"DeleteTopics", 20}, {"DeleteRecords", 21},
	{"InitProducerId", 22}, {"OffsetForLeaderEpoch", 23},
	{"AddPartitionsToTxn", 24}, {"AddOffsetsToTxn", 25}, {"EndTxn", 26},
	{"TxnOffsetCommit", 28}, {"DescribeConfigs", 32}, {"AlterConfigs", 33},
	{"SaslAuthenticate", 36}, {"CreatePartitions", 37},
	{"DeleteGroups", 42}, {"OffsetDelete", 47},
	{NULL, 0}
};

/*
 * parse_api_key / an API given by name (case-insensitive) or by number
 */
static bool
parse_api_key(const char *s, int16_t *key)
{
	long		v;

	if (parse_long(s, 0, 127, &v))
	{
		*key = (int16_t) v;
		return true;
	}
	for (const ApiName *a = api_names; a->name; a++)
	{
		if (strcasecmp(a->name, s) == 0)
		{
			*key = (int16_t) a->key;
			return true;
		}
	}
	return false;
}

/*
 * parse_error_code / an error code given by number or by librdkafka's name
 * ("REQUEST_TIMED_OUT", optionally with the "RD_KAFKA_RESP_ERR_" prefix,
 * any case)
 */
static bool
parse_error_code(const char *s, rd_kafka_resp_err_t *err)
{
	const struct rd_kafka_err_desc *descs;
	size_t		cnt;
	long		v;

	if (parse_long(s, -200, 1000, &v))
	{
		*err = (rd_kafka_resp_err_t) v;
		return true;
	}
	if (strncasecmp(s, "RD_KAFKA_RESP_ERR_", 18) == 0)
		s += 18;
	rd_kafka_get_err_descs(&descs, &cnt);
	for (size_t i = 0; i < cnt; i++)
	{
		if (descs[i].name != NULL && strcasecmp(descs[i].name, s) == 0)
		{
			*err = descs[i].code;
			return true;
		}
	}
	return false;
}


/* ----------------------------------------------------------------
 *		serve: the mock cluster and its control socket
 * ----------------------------------------------------------------
 */

typedef struct TopicSpec
{
	char	   *name;			/* topic name */
	int			partitions;		/* partition count to (re)create */
} TopicSpec;

typedef struct ServeState
{
	/* configuration */
	const char *dir;			/* --dir */
	int			broker_cnt;		/* --brokers */
	int			base_port;		/* --port, 0 = kernel's choice */
	bool		detach;			/* --detach */
	int			dir_fd;			/* DIR, flock()ed while we run */

	/* files */
	char		sock_path[sizeof(((struct sockaddr_un *) 0)->sun_path)];
	char		bootstrap_path[PATH_MAX];	/* DIR/bootstrap */
	char		pid_path[PATH_MAX];	/* DIR/pid */
	char		log_path[PATH_MAX];	/* DIR/broker.log (--detach) */

	/* the cluster */
	rd_kafka_t *host_rk;		/* owns the current cluster */
	rd_kafka_mock_cluster_t *mcluster;	/* the current cluster */
	pthread_t	retire_thread;	/* destroying the previous cluster */
	bool		retiring;		/* retire_thread needs a join */
	char	   *bootstraps;		/* its bootstrap.servers string */
	int			ports[KLB_MAX_BROKERS];	/* its listener ports, by broker */
	char		cluster_id[64];	/* its id as clients see it */
	bool		id_patchable;	/* cluster id layout verified at startup */
	int			generation;		/* clusters created so far */

	TopicSpec  *topics;			/* topics to recreate */
	int			ntopics;
	int			topics_alloc;

	char	  **used_ids;		/* every cluster id this server has shown */
	int			nused_ids;

	/* control */
	int			listen_fd;		/* control.sock */
	bool		shutdown_requested;	/* "shutdown" received */
} ServeState;

static int	signal_pipe[2] = {-1, -1};	/* written by the signal handler */
static volatile sig_atomic_t got_signal = 0;

/*
 * topics_set / remember topic NAME with PARTITIONS (add or update)
 */
static void
topics_set(ServeState *st, const char *name, int partitions)
{
	for (int i = 0; i < st->ntopics; i++)
	{
		if (strcmp(st->topics[i].name, name) == 0)
		{
			st->topics[i].partitions = partitions;
			return;
		}
	}
	if (st->ntopics == st->topics_alloc)
	{
		st->topics_alloc = st->topics_alloc ? st->topics_alloc * 2 : 8;
		st->topics = realloc(st->topics, sizeof(TopicSpec) * st->topics_alloc);
		if (st->topics == NULL)
			die("out of memory");
	}
	st->topics[st->ntopics].name = strdup(name);
	st->topics[st->ntopics].partitions = partitions;
	if (st->topics[st->ntopics].name == NULL)
		die("out of memory");
	st->ntopics++;
}

/*
 * ids_remember / add ID to the list of ids this server has used
 */
static void
ids_remember(ServeState *st, const char *id)
{
	for (int i = 0; i < st->nused_ids; i++)
	{
		if (strcmp(st->used_ids[i], id) == 0)
			return;
	}
	st->used_ids = realloc(st->used_ids, sizeof(char *) * (st->nused_ids + 1));
	if (st->used_ids == NULL || (st->used_ids[st->nused_ids] = strdup(id)) == NULL)
		die("out of memory");
	st->nused_ids++;
}

/*
 * ids_used / has this server already shown cluster id ID?
 */
static bool
ids_used(const ServeState *st, const char *id)
{
	for (int i = 0; i < st->nused_ids; i++)
	{
		if (strcmp(st->used_ids[i], id) == 0)
			return true;
	}
	return false;
}

/*
 * cluster_id_peek / read the id stored at the start of the opaque mock
 * cluster struct
 *
 * Returns false unless the bytes there look exactly like a librdkafka
 * 2.0.2 mock id: "mockCluster" followed by a NUL-terminated string inside
 * the 32-byte field.  Whether that really is what clients see is checked
 * once at startup (serve_verify_id_layout).
 */
static bool
cluster_id_peek(rd_kafka_mock_cluster_t *mc, char *buf, size_t size)
{
	const char *p = (const char *) mc;
	size_t		len;

	if (mc == NULL || malloc_usable_size(mc) < MOCK_ID_FIELD_SIZE)
		return false;
	if (memcmp(p, MOCK_ID_PREFIX, strlen(MOCK_ID_PREFIX)) != 0)
		return false;
	len = strnlen(p, MOCK_ID_FIELD_SIZE);
	if (len >= MOCK_ID_FIELD_SIZE || len >= size)
		return false;
	memcpy(buf, p, len + 1);
	return true;
}

/*
 * cluster_id_patch / overwrite the mock cluster's id with ID
 *
 * Only called while the accept gate is closed, before any client has been
 * served by this cluster, so the mock thread is not reading the field.
 */
static bool
cluster_id_patch(rd_kafka_mock_cluster_t *mc, const char *id)
{
	char		current[MOCK_ID_FIELD_SIZE];

	if (strlen(id) >= MOCK_ID_FIELD_SIZE || !cluster_id_peek(mc, current, sizeof(current)))
		return false;
	memcpy((char *) mc, id, strlen(id) + 1);
	return true;
}

/*
 * cluster_id_probe / the cluster id as a brand-new client sees it
 */
static bool
cluster_id_probe(const char *bootstraps, char *buf, size_t size, char *errbuf, size_t errsize)
{
	rd_kafka_t *rk;
	char	   *id;

	rk = probe_client_new(bootstraps, errbuf, errsize);
	if (rk == NULL)
		return false;
	id = rd_kafka_clusterid(rk, PROBE_TIMEOUT_MS);
	rd_kafka_destroy(rk);
	if (id == NULL)
	{
		snprintf(errbuf, errsize, "no cluster id from %s within %d ms (brokers down?)",
				 bootstraps, PROBE_TIMEOUT_MS);
		return false;
	}
	snprintf(buf, size, "%s", id);
	rd_kafka_mem_free(NULL, id);
	return true;
}

/*
 * discover_topics / learn every topic of the running cluster (auto-created
 * ones too) with its partition count, so that recreate brings all back
 *
 * Best effort: if the cluster does not answer (brokers down), the topics
 * known from --topic and "create" are used.
 */
static void
discover_topics(ServeState *st)
{
	char		errstr[512];
	rd_kafka_t *rk;
	const struct rd_kafka_metadata *md;
	rd_kafka_resp_err_t err;

	rk = probe_client_new(st->bootstraps, errstr, sizeof(errstr));
	if (rk == NULL)
	{
		warn("could not list topics: %s", errstr);
		return;
	}
	err = rd_kafka_metadata(rk, 1, NULL, &md, PROBE_TIMEOUT_MS);
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
	{
		warn("could not list topics (%s); recreating the %d known topic(s)",
			 rd_kafka_err2str(err), st->ntopics);
		rd_kafka_destroy(rk);
		return;
	}
	for (int i = 0; i < md->topic_cnt; i++)
	{
		if (md->topics[i].err == RD_KAFKA_RESP_ERR_NO_ERROR && md->topics[i].partition_cnt > 0)
			topics_set(st, md->topics[i].topic, md->topics[i].partition_cnt);
	}
	rd_kafka_metadata_destroy(md);
	rd_kafka_destroy(rk);
}

/*
 * parse_ports / fill st->ports from the bootstrap string "h:p,h:p,..."
 */
static bool
parse_ports(ServeState *st)
{
	const char *p = st->bootstraps;

	for (int i = 0; i < st->broker_cnt; i++)
	{
		const char *comma = strchr(p, ',');
		const char *colon = NULL;
		long		port;
		char		num[16];
		size_t		len;

		for (const char *q = p; *q && (comma == NULL || q < comma); q++)
		{
			if (*q == ':')
				colon = q;
		}
		if (colon == NULL)
			return false;
		len = (size_t) ((comma ? comma : colon + strlen(colon)) - (colon + 1));
		if (len == 0 || len >= sizeof(num))
			return false;
		memcpy(num, colon + 1, len);
		num[len] = '\0';
		if (!parse_long(num, 1, 65535, &port))
			return false;
		st->ports[i] = (int) port;
		if (comma == NULL)
			return i == st->broker_cnt - 1;
		p = comma + 1;
	}
	return false;
}

/*
 * create_topics / create every remembered topic in the current cluster
 */
static bool
create_topics(ServeState *st, char *errbuf, size_t errsize)
{
	for (int i = 0; i < st->ntopics; i++)
	{
		rd_kafka_resp_err_t err;

		err = rd_kafka_mock_topic_create(st->mcluster, st->topics[i].name,
										 st->topics[i].partitions, 1);
		if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
		{
			snprintf(errbuf, errsize, "could not create topic \"%s\" with %d partition(s): %s",
					 st->topics[i].name, st->topics[i].partitions, rd_kafka_err2str(err));
			return false;
		}
		note("created topic %s with %d partition(s)", st->topics[i].name, st->topics[i].partitions);
	}
	return true;
}

/*
 * write_bootstrap_file / publish the current bootstrap string in
 * DIR/bootstrap
 */
static bool
write_bootstrap_file(ServeState *st, char *errbuf, size_t errsize)
{
	return write_file_atomic(st->bootstrap_path, st->bootstraps, errbuf, errsize);
}

typedef enum ClusterStart
{
	CLUSTER_FIRST,				/* server startup */
	CLUSTER_RECREATE,			/* same ports, same id, empty */
	CLUSTER_REPLACE				/* same ports, new id, empty */
} ClusterStart;

/*
 * host_rk_new / a client handle to own one mock cluster
 *
 * It never connects anywhere itself.  Each cluster gets its own, so that an
 * old cluster can be torn down in the background without sharing anything
 * with its successor.
 */
static rd_kafka_t *
host_rk_new(void)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	char		errbuf[512];
	rd_kafka_t *rk;

	rd_kafka_conf_set_log_cb(conf, rdkafka_log_cb);
	conf_set_or_die(conf, "client.id", "kafka_lake_broker-host");
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errbuf, sizeof(errbuf));
	if (rk == NULL)
		die("could not create librdkafka handle: %s", errbuf);
	return rk;
}

typedef struct Retiree
{
	rd_kafka_t *host_rk;		/* the retired cluster's owner */
	rd_kafka_mock_cluster_t *mcluster;	/* the retired cluster */
	int			generation;		/* its number, for wake_release */
} Retiree;

/*
 * retire_main / thread body: destroy a retired cluster and its handle
 *
 * rd_kafka_mock_cluster_destroy() closes the listeners within
 * milliseconds, but then often waits a full second for librdkafka's
 * internal broker thread to notice that it should exit.  Nobody needs to
 * wait for that second, so it happens here.
 */
static void *
retire_main(void *arg)
{
	Retiree    *r = (Retiree *) arg;

	wake_begin();
	rd_kafka_mock_cluster_destroy(r->mcluster);
	wake_end();
	wake_release(r->generation);
	rd_kafka_destroy(r->host_rk);
	free(r);
	return NULL;
}

/*
 * retire_wait / wait until the previously retired cluster is gone
 */
static void
retire_wait(ServeState *st)
{
	if (st->retiring)
	{
		pthread_join(st->retire_thread, NULL);
		st->retiring = false;
	}
}

/*
 * retire_start / hand the current cluster to a background thread for
 * destruction
 */
static void
retire_start(ServeState *st)
{
	Retiree    *r = malloc(sizeof(Retiree));
	sigset_t	all;
	sigset_t	old;

	if (r == NULL)
		die("out of memory");
	retire_wait(st);
	r->host_rk = st->host_rk;
	r->mcluster = st->mcluster;
	r->generation = st->generation;
	st->host_rk = NULL;
	st->mcluster = NULL;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&st->retire_thread, NULL, retire_main, r) != 0)
		die("could not start a thread: %s", strerror(errno));
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	st->retiring = true;
}

/*
 * cluster_build_guts / create the (next) mock cluster with its topics
 *
 * For CLUSTER_RECREATE and CLUSTER_REPLACE the current cluster is retired
 * first and its ports are pinned for the new one.  The accept gate stays
 * closed until the cluster has its final id and all its topics.  Returns
 * false with a message if the result is not what was asked for; the server
 * then still has a working cluster, unless *fatal is set.
 */
static bool
cluster_build_guts(ServeState *st, ClusterStart how, bool *fatal, char *errbuf, size_t errsize)
{
	char		old_id[64];
	char		new_id[64];
	int			old_ports[KLB_MAX_BROKERS];
	int			misses;
	bool		ok = true;

	*fatal = false;
	snprintf(old_id, sizeof(old_id), "%s", st->cluster_id);
	memcpy(old_ports, st->ports, sizeof(old_ports));

	gate_set(true);

	if (how == CLUSTER_FIRST)
	{
		if (st->base_port > 0)
		{
			int			ports[KLB_MAX_BROKERS];

			for (int i = 0; i < st->broker_cnt; i++)
				ports[i] = st->base_port + i;
			pins_set(ports, st->broker_cnt, 0);
		}
	}
	else
	{
		/* the old listeners close early in the teardown: wait for them */
		pins_set(old_ports, st->broker_cnt, PIN_RETRY_MS);
		retire_start(st);

		/*
		 * Without the verified id layout, the best chance of the same id is
		 * the same memory block: let the old cluster free it first.
		 */
		if (!st->id_patchable)
			retire_wait(st);
	}

	st->host_rk = host_rk_new();
	wake_capture(true, st->generation + 1);
	st->mcluster = rd_kafka_mock_cluster_new(st->host_rk, st->broker_cnt);
	wake_capture(false, 0);
	misses = pins_clear();

	if (st->mcluster == NULL)
	{
		gate_set(false);
		*fatal = true;
		snprintf(errbuf, errsize, "rd_kafka_mock_cluster_new() failed (run with --verbose for librdkafka's reason)");
		return false;
	}
	st->generation++;

	free(st->bootstraps);
	st->bootstraps = strdup(rd_kafka_mock_cluster_bootstraps(st->mcluster));
	if (st->bootstraps == NULL)
		die("out of memory");
	if (!parse_ports(st))
	{
		gate_set(false);
		*fatal = true;
		snprintf(errbuf, errsize, "unexpected bootstrap string from the mock cluster: \"%s\"",
				 st->bootstraps);
		return false;
	}

	if (misses > 0)
	{
		if (how == CLUSTER_FIRST)
		{
			gate_set(false);
			*fatal = true;
			snprintf(errbuf, errsize, "port(s) %d..%d not free (got %s)",
					 st->base_port, st->base_port + st->broker_cnt - 1, st->bootstraps);
			return false;
		}
		warn("%d of the old port(s) were taken; the cluster now listens on %s",
			 misses, st->bootstraps);
	}

	/* Settle the cluster id while no client can talk to the cluster. */
	if (!cluster_id_peek(st->mcluster, new_id, sizeof(new_id)))
		new_id[0] = '\0';
	if (how == CLUSTER_RECREATE && st->id_patchable && strcmp(new_id, old_id) != 0)
	{
		note("new cluster came up as %s; restoring id %s", new_id, old_id);
		if (cluster_id_patch(st->mcluster, old_id))
			snprintf(new_id, sizeof(new_id), "%s", old_id);
	}
	else if (how == CLUSTER_REPLACE && st->id_patchable && ids_used(st, new_id))
	{
		unsigned long salt = (unsigned long) st->generation;
		char		fresh[MOCK_ID_FIELD_SIZE];

		/* librdkafka's format, a value no earlier cluster has shown */
		do
		{
			snprintf(fresh, sizeof(fresh), MOCK_ID_PREFIX "%lx",
					 (unsigned long) ((uintptr_t) st->mcluster >> 2) ^ (salt << 44));
			salt++;
		} while (ids_used(st, fresh));
		note("new cluster came up as %s, an id used before; renaming it %s", new_id, fresh);
		if (cluster_id_patch(st->mcluster, fresh))
			snprintf(new_id, sizeof(new_id), "%s", fresh);
	}

	if (!create_topics(st, errbuf, errsize))
		ok = false;

	gate_set(false);

	/* Without the verified layout, ask a client what it sees. */
	if (!st->id_patchable || new_id[0] == '\0')
	{
		char		probe_err[512];

		if (!cluster_id_probe(st->bootstraps, new_id, sizeof(new_id), probe_err, sizeof(probe_err)))
		{
			new_id[0] = '\0';
			warn("%s", probe_err);
		}
	}
	snprintf(st->cluster_id, sizeof(st->cluster_id), "%s", new_id);

	if (ok && how == CLUSTER_RECREATE && strcmp(new_id, old_id) != 0)
	{
		snprintf(errbuf, errsize, "cluster recreated, but its id changed from %s to %s (this librdkafka's mock layout is not the one this program knows)",
				 old_id, new_id[0] ? new_id : "(unknown)");
		ok = false;
	}
	if (ok && how == CLUSTER_REPLACE && ids_used(st, new_id))
	{
		snprintf(errbuf, errsize, "cluster replaced, but it kept a used id %s (this librdkafka's mock layout is not the one this program knows)",
				 new_id);
		ok = false;
	}
	if (new_id[0] != '\0')
		ids_remember(st, new_id);

	if (how != CLUSTER_FIRST)
	{
		char		ferr[512];

		if (!write_bootstrap_file(st, ferr, sizeof(ferr)))
		{
			warn("%s", ferr);
			if (ok)
				snprintf(errbuf, errsize, "%s", ferr);
			ok = false;
		}
	}

	if (__atomic_exchange_n(&gate_refused, 0, __ATOMIC_SEQ_CST) > 0)
		note("refused early connection(s) while the cluster was being built");
	note("cluster %d (%s) listening on %s", st->generation, st->cluster_id, st->bootstraps);
	return ok;
}

/*
 * cluster_build / cluster_build_guts with the mock thread kept awake
 */
static bool
cluster_build(ServeState *st, ClusterStart how, bool *fatal, char *errbuf, size_t errsize)
{
	bool		ok;

	wake_begin();
	ok = cluster_build_guts(st, how, fatal, errbuf, errsize);
	wake_end();
	return ok;
}

/*
 * serve_verify_id_layout / check once that the bytes cluster_id_peek reads
 * are the id a client sees; only then may recreate/replace write them
 */
static void
serve_verify_id_layout(ServeState *st)
{
	char		peeked[64];
	char		seen[64];
	char		errstr[512];

	st->id_patchable = false;
	if (!cluster_id_probe(st->bootstraps, seen, sizeof(seen), errstr, sizeof(errstr)))
	{
		warn("could not verify the cluster id: %s", errstr);
		return;
	}
	snprintf(st->cluster_id, sizeof(st->cluster_id), "%s", seen);
	ids_remember(st, seen);
	if (!cluster_id_peek(st->mcluster, peeked, sizeof(peeked)) || strcmp(peeked, seen) != 0)
	{
		warn("this librdkafka's mock cluster layout is unknown; recreate cannot guarantee the same cluster id");
		return;
	}
	st->id_patchable = true;
}

/*
 * reply / format a control reply line into buf
 */
static void reply(char *buf, size_t size, const char *fmt,...) __attribute__((format(printf, 3, 4)));

static void
reply(char *buf, size_t size, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
}

/*
 * parse_broker_id / "-1" (all brokers) or 1..broker_cnt
 */
static bool
parse_broker_id(const ServeState *st, const char *s, int32_t *id)
{
	long		v;

	if (!parse_long(s, -1, st->broker_cnt, &v) || v == 0)
		return false;
	*id = (int32_t) v;
	return true;
}

/*
 * serve_command / execute one control command line and format its reply
 */
static void
serve_command(ServeState *st, char *line, char *out, size_t outsize)
{
	char	   *argv[8];
	int			argc = 0;
	char	   *save = NULL;
	char	   *tok;
	const char *cmd;
	rd_kafka_resp_err_t err;
	char		errbuf[1024];

	for (tok = strtok_r(line, " \t\r", &save); tok && argc < 8;
		 tok = strtok_r(NULL, " \t\r", &save))
		argv[argc++] = tok;
	if (tok != NULL)
	{
		reply(out, outsize, "error too many arguments");
		return;
	}
	if (argc == 0)
	{
		out[0] = '\0';
		return;
	}
	cmd = argv[0];
	note("control: %s%s%s%s%s", cmd, argc > 1 ? " " : "", argc > 1 ? argv[1] : "",
		 argc > 2 ? " " : "", argc > 2 ? argv[2] : "");

#define EXPECT_ARGS(min, max, synopsis) \
	do { \
		if (argc - 1 < (min) || argc - 1 > (max)) \
		{ \
			reply(out, outsize, "error usage: %s", synopsis); \
			return; \
		} \
	} while (0)

	if (strcasecmp(cmd, "ping") == 0)
	{
		EXPECT_ARGS(0, 0, "ping");
		reply(out, outsize, "ok");
	}
	else if (strcasecmp(cmd, "help") == 0)
	{
		EXPECT_ARGS(0, 0, "help");
		reply(out, outsize, "ok commands: ping bootstrap clusterid create down up rtt errors clear recreate replace shutdown");
	}
	else if (strcasecmp(cmd, "bootstrap") == 0)
	{
		EXPECT_ARGS(0, 0, "bootstrap");
		reply(out, outsize, "ok %s", st->bootstraps);
	}
	else if (strcasecmp(cmd, "clusterid") == 0)
	{
		char		id[256];

		EXPECT_ARGS(0, 0, "clusterid");
		if (cluster_id_probe(st->bootstraps, id, sizeof(id), errbuf, sizeof(errbuf)))
			reply(out, outsize, "ok %s", id);
		else
			reply(out, outsize, "error %s", errbuf);
	}
	else if (strcasecmp(cmd, "create") == 0)
	{
		long		partitions;

		EXPECT_ARGS(2, 2, "create TOPIC PARTITIONS");
		if (!valid_topic_name(argv[1]))
		{
			reply(out, outsize, "error invalid topic name \"%s\": use 1 to 249 of [A-Za-z0-9._-]", argv[1]);
			return;
		}
		if (!parse_long(argv[2], 1, KLB_MAX_PARTITIONS, &partitions))
		{
			reply(out, outsize, "error invalid partition count \"%s\": expected 1 to %d",
				  argv[2], KLB_MAX_PARTITIONS);
			return;
		}
		err = rd_kafka_mock_topic_create(st->mcluster, argv[1], (int) partitions, 1);
		if (err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
			reply(out, outsize, "error topic \"%s\" already exists", argv[1]);
		else if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
			reply(out, outsize, "error could not create topic \"%s\": %s", argv[1], rd_kafka_err2str(err));
		else
		{
			topics_set(st, argv[1], (int) partitions);
			reply(out, outsize, "ok");
		}
	}
	else if (strcasecmp(cmd, "down") == 0 || strcasecmp(cmd, "up") == 0)
	{
		int32_t		id;
		bool		down = strcasecmp(cmd, "down") == 0;

		EXPECT_ARGS(1, 1, down ? "down BROKER_ID" : "up BROKER_ID");
		if (!parse_broker_id(st, argv[1], &id))
		{
			reply(out, outsize, "error invalid broker id \"%s\": expected 1 to %d, or -1 for all",
				  argv[1], st->broker_cnt);
			return;
		}
		err = down ? rd_kafka_mock_broker_set_down(st->mcluster, id)
			: rd_kafka_mock_broker_set_up(st->mcluster, id);
		if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
			reply(out, outsize, "error %s", rd_kafka_err2str(err));
		else
			reply(out, outsize, "ok");
	}
	else if (strcasecmp(cmd, "rtt") == 0)
	{
		int32_t		id;
		long		ms;

		EXPECT_ARGS(2, 2, "rtt BROKER_ID MS");
		if (!parse_broker_id(st, argv[1], &id))
		{
			reply(out, outsize, "error invalid broker id \"%s\": expected 1 to %d, or -1 for all",
				  argv[1], st->broker_cnt);
			return;
		}
		if (!parse_long(argv[2], 0, 3600 * 1000, &ms))
		{
			reply(out, outsize, "error invalid rtt \"%s\": expected milliseconds from 0 to 3600000", argv[2]);
			return;
		}
		err = rd_kafka_mock_broker_set_rtt(st->mcluster, id, (int) ms);
		if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
			reply(out, outsize, "error %s", rd_kafka_err2str(err));
		else
			reply(out, outsize, "ok");
	}
	else if (strcasecmp(cmd, "errors") == 0)
	{
		int16_t		key;
		long		count;
		rd_kafka_resp_err_t code = DEFAULT_INJECTED_ERROR;
		rd_kafka_resp_err_t *codes;

		EXPECT_ARGS(2, 3, "errors API COUNT [ERROR_CODE]");
		if (!parse_api_key(argv[1], &key))
		{
			reply(out, outsize, "error unknown API \"%s\": use a name such as OffsetCommit or a number", argv[1]);
			return;
		}
		if (!parse_long(argv[2], 1, 1000000, &count))
		{
			reply(out, outsize, "error invalid count \"%s\": expected 1 to 1000000", argv[2]);
			return;
		}
		if (argc == 4 && !parse_error_code(argv[3], &code))
		{
			reply(out, outsize, "error unknown error code \"%s\": use a number or a name such as REQUEST_TIMED_OUT", argv[3]);
			return;
		}
		codes = malloc(sizeof(*codes) * (size_t) count);
		if (codes == NULL)
		{
			reply(out, outsize, "error out of memory");
			return;
		}
		for (long i = 0; i < count; i++)
			codes[i] = code;
		rd_kafka_mock_push_request_errors_array(st->mcluster, key, (size_t) count, codes);
		free(codes);
		reply(out, outsize, "ok");
	}
	else if (strcasecmp(cmd, "clear") == 0)
	{
		int16_t		key;

		EXPECT_ARGS(1, 1, "clear API");
		if (!parse_api_key(argv[1], &key))
		{
			reply(out, outsize, "error unknown API \"%s\": use a name such as OffsetCommit or a number", argv[1]);
			return;
		}
		rd_kafka_mock_clear_request_errors(st->mcluster, key);
		reply(out, outsize, "ok");
	}
	else if (strcasecmp(cmd, "recreate") == 0 || strcasecmp(cmd, "replace") == 0)
	{
		bool		same = strcasecmp(cmd, "recreate") == 0;
		bool		fatal;

		EXPECT_ARGS(0, 0, same ? "recreate" : "replace");
		discover_topics(st);
		note("%d topic(s) to recreate", st->ntopics);
		if (cluster_build(st, same ? CLUSTER_RECREATE : CLUSTER_REPLACE, &fatal,
						  errbuf, sizeof(errbuf)))
			reply(out, outsize, "ok %s", st->bootstraps);
		else
		{
			reply(out, outsize, "error %s", errbuf);
			if (fatal)
			{
				warn("%s; shutting down", errbuf);
				st->shutdown_requested = true;
			}
		}
	}
	else if (strcasecmp(cmd, "shutdown") == 0)
	{
		EXPECT_ARGS(0, 0, "shutdown");
		st->shutdown_requested = true;
		reply(out, outsize, "ok");
	}
	else
		reply(out, outsize, "error unknown command \"%s\" (try \"help\")", cmd);

#undef EXPECT_ARGS
}

/*
 * serve_connection / read command lines from one control client and answer
 * each as soon as it is complete
 *
 * Ends at EOF, after "shutdown", on a signal, or when the client stays
 * silent for CTL_IDLE_TIMEOUT_MS.
 */
static void
serve_connection(ServeState *st, int fd)
{
	char		buf[CTL_LINE_MAX + 1];
	size_t		len = 0;
	char		out[2048];

	for (;;)
	{
		struct pollfd pfd[2];
		ssize_t		n;
		char	   *nl;
		int			rc;

		pfd[0].fd = fd;
		pfd[0].events = POLLIN;
		pfd[1].fd = signal_pipe[0];
		pfd[1].events = POLLIN;
		rc = poll(pfd, 2, CTL_IDLE_TIMEOUT_MS);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0 || (pfd[1].revents & POLLIN))
			break;

		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			break;
		if (n == 0)
		{
			/* a last line without a newline still counts */
			if (len > 0)
			{
				buf[len] = '\0';
				wake_begin();
				serve_command(st, buf, out, sizeof(out) - 1);
				wake_end();
				if (out[0] != '\0')
				{
					strcat(out, "\n");
					write_all(fd, out, strlen(out));
				}
			}
			break;
		}
		len += (size_t) n;

		while (!st->shutdown_requested && (nl = memchr(buf, '\n', len)) != NULL)
		{
			size_t		linelen = (size_t) (nl - buf);

			*nl = '\0';
			wake_begin();
			serve_command(st, buf, out, sizeof(out) - 1);
			wake_end();
			if (out[0] != '\0')
			{
				strcat(out, "\n");
				write_all(fd, out, strlen(out));
			}
			memmove(buf, nl + 1, len - linelen - 1);
			len -= linelen + 1;
		}
		if (st->shutdown_requested)
			break;
		if (len == sizeof(buf) - 1)
		{
			snprintf(out, sizeof(out), "error command line longer than %d bytes\n", CTL_LINE_MAX);
			write_all(fd, out, strlen(out));
			break;
		}
	}
	close(fd);
}

/*
 * handle_signal / SIGTERM, SIGINT, SIGHUP: ask the main loop to stop
 */
static void
handle_signal(int signo)
{
	int			save_errno = errno;
	char		c = (char) signo;

	got_signal = signo;
	if (signal_pipe[1] >= 0 && write(signal_pipe[1], &c, 1) < 0)
	{
		/* nothing to do: the flag is set */
	}
	errno = save_errno;
}

/*
 * setup_signals / self-pipe and handlers, so poll() wakes up on a signal
 */
static void
setup_signals(void)
{
	struct sigaction sa;

	if (pipe(signal_pipe) != 0)
		die("could not create pipe: %s", strerror(errno));
	for (int i = 0; i < 2; i++)
	{
		fcntl(signal_pipe[i], F_SETFL, fcntl(signal_pipe[i], F_GETFL) | O_NONBLOCK);
		fcntl(signal_pipe[i], F_SETFD, FD_CLOEXEC);
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handle_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

/*
 * control_socket_alive / is a server answering on PATH?
 *
 * A refused connection or a missing file means the socket is stale (left
 * by a killed server) and may be replaced.
 */
static bool
control_socket_alive(const char *path)
{
	struct sockaddr_un sun;
	int			fd;
	bool		alive;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0)
		return false;
	alive = connect(fd, (struct sockaddr *) &sun, sizeof(sun)) == 0;
	close(fd);
	return alive;
}

/*
 * open_control_socket / bind and listen on DIR/control.sock
 *
 * The socket is made connectable by every user (0666): DIR's permissions
 * decide who can reach it, so for example the PostgreSQL server's OS user
 * can inject faults through COPY ... FROM PROGRAM.
 */
static int
open_control_socket(ServeState *st)
{
	struct sockaddr_un sun;
	int			fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", st->sock_path);

	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0)
		die("could not create control socket: %s", strerror(errno));
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	unlink(st->sock_path);		/* stale: checked by control_socket_alive */
	if (bind(fd, (struct sockaddr *) &sun, sizeof(sun)) != 0)
		die("could not bind control socket \"%s\": %s", st->sock_path, strerror(errno));
	if (chmod(st->sock_path, 0666) != 0)
		warn("could not chmod \"%s\": %s", st->sock_path, strerror(errno));
	if (listen(fd, 16) != 0)
		die("could not listen on control socket \"%s\": %s", st->sock_path, strerror(errno));
	control_listen_fd = fd;
	return fd;
}

/*
 * serve_detach / fork into the background and let the parent wait until
 * the server is ready (or failed), then report and exit
 *
 * Returns in the child only.  The parent prints the bootstrap string on
 * stdout and exits 0, or prints the child's error and exits 1.
 */
static void
serve_detach(ServeState *st)
{
	int			fds[2];
	pid_t		pid;
	int			fd;

	if (pipe(fds) != 0)
		die("could not create pipe: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("could not fork: %s", strerror(errno));
	if (pid > 0)
	{
		char		msg[2048];
		size_t		len = 0;
		ssize_t		n;

		close(fds[1]);
		while (len < sizeof(msg) - 1 &&
			   ((n = read(fds[0], msg + len, sizeof(msg) - 1 - len)) > 0 ||
				(n < 0 && errno == EINTR)))
		{
			if (n > 0)
				len += (size_t) n;
		}
		msg[len] = '\0';
		if (len > 0 && msg[len - 1] == '\n')
			msg[len - 1] = '\0';
		if (strncmp(msg, "ok ", 3) == 0)
		{
			printf("%s\n", msg + 3);
			exit(0);
		}
		if (strncmp(msg, "error ", 6) == 0)
			fprintf(stderr, "%s: %s\n", progname, msg + 6);
		else
		{
			int			status;

			waitpid(pid, &status, WNOHANG);
			fprintf(stderr, "%s: server exited during startup; see %s\n",
					progname, st->log_path);
		}
		exit(1);
	}

	/* child */
	close(fds[0]);
	fcntl(fds[1], F_SETFD, FD_CLOEXEC);
	ready_fd = fds[1];
	if (setsid() < 0)
		warn("setsid failed: %s", strerror(errno));
	fd = open("/dev/null", O_RDONLY);
	if (fd >= 0)
	{
		dup2(fd, STDIN_FILENO);
		close(fd);
	}
	fd = open(st->log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd < 0)
		die("could not open \"%s\": %s", st->log_path, strerror(errno));
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	close(fd);
}

/*
 * serve_main / the "serve" mode
 */
static int
serve_main(int argc, char **argv)
{
	ServeState	st;
	char		errbuf[1024];
	char		content[64];
	bool		fatal;
	struct stat stbuf;
	int			i;

	memset(&st, 0, sizeof(st));
	st.broker_cnt = 1;
	st.listen_fd = -1;
	st.dir_fd = -1;

	for (i = 0; i < argc; i++)
	{
		const char *a = argv[i];
		const char *v = (i + 1 < argc) ? argv[i + 1] : NULL;

		if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0)
			verbose = true;
		else if (strcmp(a, "--detach") == 0)
			st.detach = true;
		else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
		{
			usage(stdout);
			return 0;
		}
		else if (v == NULL)
			usage_error("serve: unknown or incomplete option \"%s\"", a);
		else if (strcmp(a, "--dir") == 0)
			st.dir = argv[++i];
		else if (strcmp(a, "--brokers") == 0)
			st.broker_cnt = (int) option_long(a, argv[++i], 1, KLB_MAX_BROKERS);
		else if (strcmp(a, "--port") == 0)
			st.base_port = (int) option_long(a, argv[++i], 1, 65535);
		else if (strcmp(a, "--topic") == 0)
		{
			char	   *spec = strdup(argv[++i]);
			char	   *colon = spec ? strrchr(spec, ':') : NULL;
			long		parts;

			if (colon == NULL)
				usage_error("invalid --topic \"%s\": expected NAME:PARTITIONS", argv[i]);
			*colon = '\0';
			if (!valid_topic_name(spec))
				usage_error("invalid topic name \"%s\": use 1 to 249 of [A-Za-z0-9._-]", spec);
			if (!parse_long(colon + 1, 1, KLB_MAX_PARTITIONS, &parts))
				usage_error("invalid partition count in --topic \"%s\": expected 1 to %d",
							argv[i], KLB_MAX_PARTITIONS);
			topics_set(&st, spec, (int) parts);
			free(spec);
		}
		else
			usage_error("serve: unknown option \"%s\"", a);
	}
	if (st.dir == NULL)
		usage_error("serve: --dir is required");
	if (st.base_port > 0 && st.base_port + st.broker_cnt - 1 > 65535)
		usage_error("serve: --port %d leaves no room for %d brokers", st.base_port, st.broker_cnt);

	/* state directory and file names */
	if (stat(st.dir, &stbuf) != 0)
	{
		if (errno != ENOENT || mkdir(st.dir, 0755) != 0)
			die("could not use directory \"%s\": %s", st.dir, strerror(errno));
	}
	else if (!S_ISDIR(stbuf.st_mode))
		die("\"%s\" is not a directory", st.dir);
	if ((size_t) snprintf(st.sock_path, sizeof(st.sock_path), "%s/control.sock", st.dir) >= sizeof(st.sock_path))
		die("directory path \"%s\" is too long for a UNIX socket (max %zu bytes); use a shorter --dir",
			st.dir, sizeof(st.sock_path) - strlen("/control.sock") - 1);
	snprintf(st.bootstrap_path, sizeof(st.bootstrap_path), "%s/bootstrap", st.dir);
	snprintf(st.pid_path, sizeof(st.pid_path), "%s/pid", st.dir);
	snprintf(st.log_path, sizeof(st.log_path), "%s/broker.log", st.dir);

	/*
	 * One server per directory: hold an exclusive lock on the directory
	 * itself for the whole run (a --detach child inherits it).  A live
	 * control.sock without the lock would be a foreign server: refuse too.
	 */
	st.dir_fd = open(st.dir, O_RDONLY | O_DIRECTORY);
	if (st.dir_fd < 0)
		die("could not open directory \"%s\": %s", st.dir, strerror(errno));
	fcntl(st.dir_fd, F_SETFD, FD_CLOEXEC);
	if (flock(st.dir_fd, LOCK_EX | LOCK_NB) != 0)
		die("another server is already running in \"%s\"", st.dir);
	if (control_socket_alive(st.sock_path))
		die("a server is already running in \"%s\" (control.sock answers)", st.dir);

	if (st.detach)
		serve_detach(&st);

	/* from here on, nobody may mistake leftovers for a ready server */
	unlink(st.bootstrap_path);
	snprintf(content, sizeof(content), "%ld\n", (long) getpid());
	if (!write_file_atomic(st.pid_path, content, errbuf, sizeof(errbuf)))
		die("%s", errbuf);

	setup_signals();
	wake_start_poker();

	if (!cluster_build(&st, CLUSTER_FIRST, &fatal, errbuf, sizeof(errbuf)))
		die("could not start the mock cluster: %s", errbuf);
	serve_verify_id_layout(&st);

	st.listen_fd = open_control_socket(&st);
	if (!write_bootstrap_file(&st, errbuf, sizeof(errbuf)))
		die("%s", errbuf);

	note("ready: %d broker(s) on %s, cluster id %s, control socket %s",
		 st.broker_cnt, st.bootstraps, st.cluster_id, st.sock_path);
	if (ready_fd >= 0)
	{
		dprintf(ready_fd, "ok %s\n", st.bootstraps);
		close(ready_fd);
		ready_fd = -1;
	}

	while (!st.shutdown_requested && !got_signal)
	{
		struct pollfd pfd[2];
		int			rc;

		pfd[0].fd = st.listen_fd;
		pfd[0].events = POLLIN;
		pfd[1].fd = signal_pipe[0];
		pfd[1].events = POLLIN;
		rc = poll(pfd, 2, -1);
		if (rc < 0)
		{
			if (errno == EINTR)
				continue;
			die("poll failed: %s", strerror(errno));
		}
		if (pfd[1].revents & POLLIN)
			break;
		if (pfd[0].revents & POLLIN)
		{
			int			fd = accept(st.listen_fd, NULL, NULL);

			if (fd >= 0)
				serve_connection(&st, fd);
		}
	}

	if (got_signal)
		note("received signal %d, shutting down", (int) got_signal);
	else
		note("shutdown requested");

	close(st.listen_fd);
	unlink(st.sock_path);
	unlink(st.bootstrap_path);
	unlink(st.pid_path);
	retire_start(&st);
	retire_wait(&st);
	note("stopped");
	return 0;
}


/* ----------------------------------------------------------------
 *		ctl: send one command to a running server
 * ----------------------------------------------------------------
 */

/*
 * ctl_main / the "ctl" mode
 *
 * Exit status: 0 ok, 1 error reply (or no reply), 2 cannot connect.
 */
static int
ctl_main(int argc, char **argv)
{
	const char *dir = NULL;
	long		timeout_s = CTL_DEFAULT_TIMEOUT_S;
	char		line[CTL_LINE_MAX + 2];
	size_t		len = 0;
	struct sockaddr_un sun;
	char		resp[4096];
	size_t		rlen = 0;
	double		deadline;
	int			fd;
	int			i;

	for (i = 0; i < argc; i++)
	{
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
		{
			usage(stdout);
			return 0;
		}
		else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc)
		{
			timeout_s = option_long("--timeout", argv[i + 1], 1, 86400);
			i++;
		}
		else if (strncmp(argv[i], "--", 2) == 0)
			usage_error("ctl: unknown or incomplete option \"%s\"", argv[i]);
		else
			break;
	}
	if (dir == NULL)
		usage_error("ctl: --dir is required");
	if (i >= argc)
		usage_error("ctl: no command given (try: ctl --dir DIR help)");

	for (; i < argc; i++)
	{
		size_t		alen = strlen(argv[i]);

		if (alen == 0 || strpbrk(argv[i], " \t\r\n") != NULL)
			usage_error("ctl: invalid argument \"%s\": arguments are single words", argv[i]);
		if (len + alen + 2 > sizeof(line) - 1)
			usage_error("ctl: command too long");
		if (len > 0)
			line[len++] = ' ';
		memcpy(line + len, argv[i], alen);
		len += alen;
	}
	line[len++] = '\n';
	line[len] = '\0';

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if ((size_t) snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/control.sock", dir) >= sizeof(sun.sun_path))
		usage_error("ctl: directory path \"%s\" is too long for a UNIX socket", dir);

	signal(SIGPIPE, SIG_IGN);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *) &sun, sizeof(sun)) != 0)
	{
		fprintf(stderr, "%s: could not connect to \"%s\": %s (is the server running?)\n",
				progname, sun.sun_path, strerror(errno));
		return 2;
	}
	if (!write_all(fd, line, len))
	{
		fprintf(stderr, "%s: could not send command: %s\n", progname, strerror(errno));
		return 2;
	}
	shutdown(fd, SHUT_WR);

	/* read the one reply line */
	deadline = monotonic_seconds() + (double) timeout_s;
	while (rlen < sizeof(resp) - 1 && memchr(resp, '\n', rlen) == NULL)
	{
		struct pollfd pfd;
		int			left = (int) ((deadline - monotonic_seconds()) * 1000.0);
		ssize_t		n;

		if (left <= 0)
		{
			fprintf(stderr, "%s: no reply within %ld s\n", progname, timeout_s);
			return 1;
		}
		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, left) < 0 && errno != EINTR)
			break;
		n = read(fd, resp + rlen, sizeof(resp) - 1 - rlen);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		rlen += (size_t) n;
	}
	close(fd);
	resp[rlen] = '\0';
	resp[strcspn(resp, "\r\n")] = '\0';

	if (strcmp(resp, "ok") == 0)
		return 0;
	if (strncmp(resp, "ok ", 3) == 0)
	{
		printf("%s\n", resp + 3);
		return 0;
	}
	if (strncmp(resp, "error ", 6) == 0)
	{
		fprintf(stderr, "%s: %s\n", progname, resp + 6);
		return 1;
	}
	fprintf(stderr, "%s: %s\n", progname,
			rlen == 0 ? "the server closed the connection without a reply" : resp);
	return 1;
}


/* ----------------------------------------------------------------
 *		Producers (fill and send): the topic check
 * ----------------------------------------------------------------
 */

/*
 * topic_partitions_or_die / the partition count of TOPIC, which must exist
 *
 * The mock would auto-create a topic unknown to it with 4 partitions as soon
 * as a producer names it, so both producers ask first, with a Metadata
 * request for all topics (which creates nothing).
 */
static int
topic_partitions_or_die(rd_kafka_t *rk, const char *bootstrap, const char *topic,
						int timeout_ms)
{
	const struct rd_kafka_metadata *md;
	rd_kafka_resp_err_t err;
	int			partitions = -1;

	err = rd_kafka_metadata(rk, 1, NULL, &md, timeout_ms);
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
		die("could not read metadata from %s: %s", bootstrap, rd_kafka_err2str(err));
	for (int t = 0; t < md->topic_cnt; t++)
	{
		if (strcmp(md->topics[t].topic, topic) == 0 && md->topics[t].err == RD_KAFKA_RESP_ERR_NO_ERROR)
			partitions = md->topics[t].partition_cnt;
	}
	rd_kafka_metadata_destroy(md);
	if (partitions <= 0)
		die("topic \"%s\" does not exist on %s; create it first, e.g. with \"%s ctl --dir DIR create %s PARTITIONS\"",
			topic, bootstrap, progname, topic);
	return partitions;
}


/* ----------------------------------------------------------------
 *		fill: a fast producer of deterministic machine events
 *
 * An event is a function of its number alone (machine_event_make), written
 * either as one machine_event_v1 JSON object (machine_event_json) or, with
 * --avro-schema-id, as an Avro datum in Confluent's wire format
 * (machine_event_avro).  The Avro writer schema is the "machine event" case
 * of test/fixtures/avro/cases.jsonl (test/avro/generate.js), the same 13
 * fields in the same order:
 *
 *	event_id string, schema_version int,
 *	event_time long (timestamp-millis), business_date int (date),
 *	plant_id, line_id, work_order_id, machine_id, product_code, operation
 *	strings, units_produced, defect_count, cycle_time_ms ints
 *
 * so a JSON and an Avro fill with the same arguments hold the same events
 * under the same keys, partitions and offsets.
 * ----------------------------------------------------------------
 */

static const char *const operations[] = {
	"assembly", "inspection", "packaging", "welding", "machining", "calibration"
};

typedef struct FillState
{
	long		delivered;		/* delivery reports without error */
	long		failed;			/* delivery reports with an error */
	char		first_error[256];	/* text of the first failure */
} FillState;

typedef struct FillDate
{
	const char *date;			/* business date, YYYY-MM-DD */
	char		compact[9];		/* the same, YYYYMMDD (in event_ids) */
	long		day_epoch;		/* the same, days since 1970-01-01 */
} FillDate;

typedef struct MachineEvent
{
	long		seq;			/* event number: event_id, work order, time */
	char		machine_id[32]; /* machine-NNN, also the record key */
	int			line;			/* line-NN */
	char		product;		/* prd-X */
	const char *operation;		/* one of operations[] */
	int			units;			/* units_produced */
	int			defects;		/* defect_count, <= units */
	int			cycle_ms;		/* cycle_time_ms */
	long		secs;			/* event time, seconds after local midnight */
	long		work_order;		/* wo-NNNNNN */
	int64_t		time_ms;		/* event time, ms since the epoch (UTC) */
} MachineEvent;

/*
 * mix64 / a fixed 64-bit mixing function (splitmix64's finaliser), so each
 * event's attributes depend only on its sequence number
 */
static uint64_t
mix64(uint64_t x)
{
	x += UINT64_C(0x9E3779B97F4A7C15);
	x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
	return x ^ (x >> 31);
}

/*
 * days_from_civil / days since 1970-01-01 of a proleptic Gregorian date
 */
static long
days_from_civil(long y, long m, long d)
{
	long		era;
	long		yoe;
	long		doy;
	long		doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/*
 * parse_date / YYYY-MM-DD, a real calendar date
 */
static bool
parse_date(const char *s, int *y, int *m, int *d)
{
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	if (strlen(s) != 10 || s[4] != '-' || s[7] != '-')
		return false;
	for (int i = 0; i < 10; i++)
	{
		if (i != 4 && i != 7 && !isdigit((unsigned char) s[i]))
			return false;
	}
	*y = atoi(s);
	*m = atoi(s + 5);
	*d = atoi(s + 8);
	if (*y < 1970 || *m < 1 || *m > 12 || *d < 1 || *d > mdays[*m - 1])
		return false;
	if (*m == 2 && *d == 29 && !((*y % 4 == 0 && *y % 100 != 0) || *y % 400 == 0))
		return false;
	return true;
}

/*
 * fill_dr_cb / delivery report: count successes and failures
 */
static void
fill_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque)
{
	FillState  *fs = (FillState *) opaque;

	(void) rk;
	if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR)
		fs->delivered++;
	else
	{
		if (fs->failed++ == 0)
			snprintf(fs->first_error, sizeof(fs->first_error), "%s", rd_kafka_err2str(msg->err));
	}
}

/*
 * machine_event_make / the attributes of event number SEQ
 *
 * Every attribute is a function of SEQ (and the date and machine count)
 * alone, so the same arguments always give the same bytes.  Event times
 * run from 08:00:00 (+09:00) one second per event, wrapping after 12 h so
 * they stay within the business date.
 */
static void
machine_event_make(MachineEvent *ev, long seq, const FillDate *fd, int machines)
{
	uint64_t	h = mix64((uint64_t) seq);
	int			machine = 1 + (int) (h % (uint64_t) machines);

	ev->seq = seq;
	ev->line = 1 + (machine - 1) % 4;
	ev->product = (char) ('a' + (int) ((h >> 16) % 5));
	ev->operation = operations[(h >> 24) % 6];
	ev->units = (int) ((h >> 32) % 101);
	ev->defects = (int) ((h >> 40) % (uint64_t) (ev->units / 10 + 2));
	ev->cycle_ms = 2000 + (int) ((h >> 48) % 6000);
	ev->secs = 8 * 3600 + seq % (12 * 3600);
	ev->work_order = 1 + (seq - 1) / 100;
	if (ev->defects > ev->units)
		ev->defects = ev->units;
	snprintf(ev->machine_id, sizeof(ev->machine_id), "machine-%03d", machine);
	ev->time_ms = ((int64_t) fd->day_epoch * 86400 + ev->secs - 9 * 3600) * 1000;
}

/*
 * machine_event_json / EV as one machine_event_v1 JSON object in BUF;
 * returns its length
 */
static int
machine_event_json(char *buf, size_t size, const MachineEvent *ev, const FillDate *fd)
{
	return snprintf(buf, size,
					"{\"event_id\":\"evt-%s-%06ld\",\"schema_version\":1,"
					"\"event_time\":\"%sT%02ld:%02ld:%02ld+09:00\",\"business_date\":\"%s\","
					"\"plant_id\":\"plant-01\",\"line_id\":\"line-%02d\","
					"\"work_order_id\":\"wo-%06ld\",\"machine_id\":\"%s\","
					"\"product_code\":\"prd-%c\",\"operation\":\"%s\","
					"\"units_produced\":%d,\"defect_count\":%d,\"cycle_time_ms\":%d}",
					fd->compact, ev->seq,
					fd->date, ev->secs / 3600, (ev->secs / 60) % 60, ev->secs % 60, fd->date,
					ev->line, ev->work_order, ev->machine_id, ev->product, ev->operation,
					ev->units, ev->defects, ev->cycle_ms);
}

/*
 * avro_put_long / V as an Avro int or long (zigzag, then base-128 varint,
 * low group first) at P; returns the bytes written (at most 10)
 */
static size_t
avro_put_long(unsigned char *p, int64_t v)
{
	uint64_t	z = ((uint64_t) v << 1) ^ (uint64_t) (v >> 63);
	size_t		n = 0;

	while (z >= 0x80)
	{
		p[n++] = (unsigned char) (z | 0x80);
		z >>= 7;
	}
	p[n++] = (unsigned char) z;
	return n;
}

/*
 * avro_put_string / S as an Avro string (its length as a long, then its
 * bytes) at P; returns the bytes written
 */
static size_t
avro_put_string(unsigned char *p, const char *s)
{
	size_t		len = strlen(s);
	size_t		n = avro_put_long(p, (int64_t) len);

	memcpy(p + n, s, len);
	return n + len;
}

/*
 * machine_event_avro / EV in Confluent's wire format into BUF: the magic
 * byte 0, SCHEMA_ID as 4 bytes big-endian, then the Avro binary datum of
 * the "machine event" writer schema (the field order of the block comment
 * above); returns its length
 *
 * Every string is at most 32 bytes and every number at most 10, so the
 * datum stays far below FILL_VALUE_MAX.
 */
static int
machine_event_avro(unsigned char *buf, uint32_t schema_id, const MachineEvent *ev,
				   const FillDate *fd)
{
	char		s[64];
	size_t		n = 0;

	buf[n++] = 0;
	buf[n++] = (unsigned char) (schema_id >> 24);
	buf[n++] = (unsigned char) (schema_id >> 16);
	buf[n++] = (unsigned char) (schema_id >> 8);
	buf[n++] = (unsigned char) schema_id;

	snprintf(s, sizeof(s), "evt-%s-%06ld", fd->compact, ev->seq);
	n += avro_put_string(buf + n, s);	/* event_id */
	n += avro_put_long(buf + n, 1); /* schema_version */
	n += avro_put_long(buf + n, ev->time_ms);	/* event_time */
	n += avro_put_long(buf + n, fd->day_epoch); /* business_date */
	n += avro_put_string(buf + n, "plant-01");	/* plant_id */
	snprintf(s, sizeof(s), "line-%02d", ev->line);
	n += avro_put_string(buf + n, s);	/* line_id */
	snprintf(s, sizeof(s), "wo-%06ld", ev->work_order);
	n += avro_put_string(buf + n, s);	/* work_order_id */
	n += avro_put_string(buf + n, ev->machine_id);	/* machine_id */
	snprintf(s, sizeof(s), "prd-%c", ev->product);
	n += avro_put_string(buf + n, s);	/* product_code */
	n += avro_put_string(buf + n, ev->operation);	/* operation */
	n += avro_put_long(buf + n, ev->units); /* units_produced */
	n += avro_put_long(buf + n, ev->defects);	/* defect_count */
	n += avro_put_long(buf + n, ev->cycle_ms);	/* cycle_time_ms */
	return (int) n;
}

#define FILL_VALUE_MAX	1024	/* room for one event's value, either form */

/*
 * fill_main / the "fill" mode
 */
static int
fill_main(int argc, char **argv)
{
	const char *bootstrap = NULL;
	const char *topic = NULL;
	const char *compression = "lz4";
	const char *timestamps = "event";
	long		count = -1;
	long		partitions = 0;
	long		start = 1;
	long		machines = 10;
	long		bad_every = 0;
	long		timeout_s = 300;
	long		avro_schema_id = -1;	/* -1: JSON values */
	char	  **props = NULL;
	int			nprops = 0;
	FillDate	fd;
	int			y, m, d;
	rd_kafka_conf_t *conf;
	rd_kafka_t *rk;
	rd_kafka_topic_t *rkt;
	rd_kafka_resp_err_t err;
	char		errstr[512];
	FillState	fs;
	int			topic_partitions;
	double		t0, t1;
	bool		use_event_time;
	char		value[FILL_VALUE_MAX];
	int			i;

	fd.date = "2026-06-29";
	for (i = 0; i < argc; i++)
	{
		const char *a = argv[i];
		const char *v = (i + 1 < argc) ? argv[i + 1] : NULL;

		if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0)
		{
			verbose = true;
			continue;
		}
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
		{
			usage(stdout);
			return 0;
		}
		if (v == NULL)
			usage_error("fill: unknown or incomplete option \"%s\"", a);
		i++;
		if (strcmp(a, "--bootstrap") == 0 || strcmp(a, "-b") == 0)
			bootstrap = v;
		else if (strcmp(a, "--topic") == 0 || strcmp(a, "-t") == 0)
			topic = v;
		else if (strcmp(a, "--count") == 0)
			count = option_long(a, v, 0, 1000000000L);
		else if (strcmp(a, "--partitions") == 0)
			partitions = option_long(a, v, 1, KLB_MAX_PARTITIONS);
		else if (strcmp(a, "--date") == 0)
			fd.date = v;
		else if (strcmp(a, "--start") == 0)
			start = option_long(a, v, 1, 100000000000L);
		else if (strcmp(a, "--machines") == 0)
			machines = option_long(a, v, 1, 999);
		else if (strcmp(a, "--bad-every") == 0)
			bad_every = option_long(a, v, 0, 1000000000L);
		else if (strcmp(a, "--timeout") == 0)
			timeout_s = option_long(a, v, 1, 86400);
		else if (strcmp(a, "--compression") == 0)
			compression = v;
		else if (strcmp(a, "--timestamp") == 0)
			timestamps = v;
		else if (strcmp(a, "--avro-schema-id") == 0)
			avro_schema_id = option_long(a, v, 0, INT32_MAX);
		else if (strcmp(a, "-X") == 0)
		{
			if (strchr(v, '=') == NULL)
				usage_error("fill: -X expects PROPERTY=VALUE, got \"%s\"", v);
			props = realloc(props, sizeof(char *) * (nprops + 1));
			if (props == NULL)
				die("out of memory");
			props[nprops++] = (char *) v;
		}
		else
			usage_error("fill: unknown option \"%s\"", a);
	}
	if (bootstrap == NULL)
		usage_error("fill: --bootstrap is required");
	if (topic == NULL)
		usage_error("fill: --topic is required");
	if (count < 0)
		usage_error("fill: --count is required");
	if (!valid_topic_name(topic))
		usage_error("fill: invalid topic name \"%s\"", topic);
	if (!parse_date(fd.date, &y, &m, &d))
		usage_error("fill: invalid --date \"%s\": expected YYYY-MM-DD", fd.date);
	if (strcmp(timestamps, "event") != 0 && strcmp(timestamps, "now") != 0)
		usage_error("fill: invalid --timestamp \"%s\": expected event or now", timestamps);
	use_event_time = strcmp(timestamps, "event") == 0;
	/* YYYYMMDD, from the validated YYYY-MM-DD */
	memcpy(fd.compact, fd.date, 4);
	memcpy(fd.compact + 4, fd.date + 5, 2);
	memcpy(fd.compact + 6, fd.date + 8, 2);
	fd.compact[8] = '\0';
	fd.day_epoch = days_from_civil(y, m, d);

	memset(&fs, 0, sizeof(fs));
	conf = rd_kafka_conf_new();
	rd_kafka_conf_set_log_cb(conf, rdkafka_log_cb);
	rd_kafka_conf_set_dr_msg_cb(conf, fill_dr_cb);
	rd_kafka_conf_set_opaque(conf, &fs);
	conf_set_or_die(conf, "bootstrap.servers", bootstrap);
	conf_set_or_die(conf, "client.id", "kafka_lake_broker-fill");
	conf_set_or_die(conf, "allow.auto.create.topics", "false");
	conf_set_or_die(conf, "linger.ms", "20");
	conf_set_or_die(conf, "batch.num.messages", "10000");
	conf_set_or_die(conf, "batch.size", "1000000");
	conf_set_or_die(conf, "queue.buffering.max.messages", "2000000");
	conf_set_or_die(conf, "queue.buffering.max.kbytes", "2097152");
	conf_set_or_die(conf, "compression.codec", compression);
	for (int p = 0; p < nprops; p++)
	{
		char	   *eq = strchr(props[p], '=');
		char		name[256];

		snprintf(name, sizeof(name), "%.*s", (int) (eq - props[p]), props[p]);
		conf_set_or_die(conf, name, eq + 1);
	}
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
	if (rk == NULL)
		die("could not create producer: %s", errstr);

	topic_partitions = topic_partitions_or_die(rk, bootstrap, topic, 10000);
	if (partitions == 0)
		partitions = topic_partitions;
	else if (partitions > topic_partitions)
		die("topic \"%s\" has %d partition(s), fewer than --partitions %ld",
			topic, topic_partitions, partitions);

	rkt = rd_kafka_topic_new(rk, topic, NULL);
	if (rkt == NULL)
		die("could not create topic handle: %s", rd_kafka_err2str(rd_kafka_last_error()));

	t0 = monotonic_seconds();
	for (long n = start; n < start + count; n++)
	{
		int32_t		partition = (int32_t) ((n - 1) % partitions);
		MachineEvent ev;
		int			len;

		machine_event_make(&ev, n, &fd, (int) machines);
		if (avro_schema_id >= 0)
			len = machine_event_avro((unsigned char *) value, (uint32_t) avro_schema_id, &ev, &fd);
		else
			len = machine_event_json(value, sizeof(value), &ev, &fd);
		if (bad_every > 0 && n % bad_every == 0)
			len /= 2;			/* truncated: not a valid value */

		for (;;)
		{
			err = rd_kafka_producev(rk,
									RD_KAFKA_V_RKT(rkt),
									RD_KAFKA_V_PARTITION(partition),
									RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
									RD_KAFKA_V_VALUE(value, (size_t) len),
									RD_KAFKA_V_KEY(ev.machine_id, strlen(ev.machine_id)),
									RD_KAFKA_V_TIMESTAMP(use_event_time ? ev.time_ms : 0),
									RD_KAFKA_V_END);
			if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
				break;
			rd_kafka_poll(rk, 10);
		}
		if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
			die("could not produce record %ld to %s [%d]: %s",
				n, topic, (int) partition, rd_kafka_err2str(err));
		if ((n & 0x3fff) == 0)
			rd_kafka_poll(rk, 0);
	}

	/* wait for every delivery report */
	{
		double		deadline = monotonic_seconds() + (double) timeout_s;

		while (rd_kafka_outq_len(rk) > 0 && monotonic_seconds() < deadline)
			rd_kafka_flush(rk, 100);
	}
	rd_kafka_poll(rk, 0);
	t1 = monotonic_seconds();

	if (rd_kafka_outq_len(rk) > 0)
	{
		fprintf(stderr, "%s: %d record(s) still undelivered after %ld s\n",
				progname, rd_kafka_outq_len(rk), timeout_s);
		fs.failed += rd_kafka_outq_len(rk);
	}
	rd_kafka_topic_destroy(rkt);
	rd_kafka_destroy(rk);

	note("%ld records in %.2f s (%.0f records/s), %ld partition(s), compression %s, %s",
		 fs.delivered, t1 - t0, (t1 > t0) ? (double) fs.delivered / (t1 - t0) : 0.0,
		 partitions, compression, avro_schema_id >= 0 ? "Avro" : "JSON");
	if (fs.failed > 0)
	{
		fprintf(stderr, "%s: %ld of %ld record(s) failed; first error: %s\n",
				progname, fs.failed, count, fs.first_error[0] ? fs.first_error : "timed out");
		fprintf(stderr, "produced %ld records\n", fs.delivered);
		return 1;
	}
	fprintf(stderr, "produced %ld records\n", fs.delivered);
	return 0;
}


/* ----------------------------------------------------------------
 *		send: one record of any bytes, key and headers
 *
 * kafka_lake.produce() sets a value, a key and a partition, never headers;
 * tests of what a landing does with headers (and with values no SQL string
 * holds) produce with this.  Everything is given in hex, so any bytes pass
 * through a shell unchanged; an empty hex string is empty bytes, which Kafka
 * tells from a missing (null) key or header value.
 * ----------------------------------------------------------------
 */

#define SEND_MAX_HEADERS	64

typedef struct SendHeader
{
	char	   *name;			/* header name, NUL-terminated */
	unsigned char *value;		/* its bytes (never NULL: empty is "") */
	size_t		len;			/* their length */
} SendHeader;

typedef struct SendState
{
	bool		delivered;		/* the delivery report came */
	rd_kafka_resp_err_t err;	/* its error, or NO_ERROR */
	int64_t		offset;			/* the record's offset */
	int32_t		partition;		/* the partition it went to */
} SendState;

/*
 * hex_decode_or_usage / the bytes of the hex string HEX (either case, no
 * separators) for option OPT, in malloc'ed memory that is never NULL;
 * junk or an odd length is a usage error
 */
static unsigned char *
hex_decode_or_usage(const char *opt, const char *hex, size_t *len)
{
	size_t		hlen = strlen(hex);
	unsigned char *out;

	if (hlen % 2 != 0)
		usage_error("send: invalid hex for %s: odd number of digits (%zu)", opt, hlen);
	out = malloc(hlen / 2 + 1);
	if (out == NULL)
		die("out of memory");
	for (size_t i = 0; i < hlen; i += 2)
	{
		int			hi,
					lo;

		if (!isxdigit((unsigned char) hex[i]) || !isxdigit((unsigned char) hex[i + 1]))
			usage_error("send: invalid hex for %s: \"%c%c\" at digit %zu",
						opt, hex[i], hex[i + 1], i + 1);
		hi = isdigit((unsigned char) hex[i]) ? hex[i] - '0' : (tolower((unsigned char) hex[i]) - 'a' + 10);
		lo = isdigit((unsigned char) hex[i + 1]) ? hex[i + 1] - '0' : (tolower((unsigned char) hex[i + 1]) - 'a' + 10);
		out[i / 2] = (unsigned char) (hi * 16 + lo);
	}
	*len = hlen / 2;
	return out;
}

/*
 * send_dr_cb / delivery report of the one record
 */
static void
send_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque)
{
	SendState  *ss = (SendState *) opaque;

	(void) rk;
	ss->delivered = true;
	ss->err = msg->err;
	ss->offset = msg->offset;
	ss->partition = msg->partition;
}

/*
 * send_main / the "send" mode: produce one record, wait for its delivery,
 * print its offset
 */
static int
send_main(int argc, char **argv)
{
	const char *bootstrap = NULL;
	const char *topic = NULL;
	long		partition = -1; /* -1: librdkafka's partitioner */
	long		timeout_s = 30;
	unsigned char *value = NULL;
	size_t		value_len = 0;
	unsigned char *key = NULL;	/* NULL: no key (null) */
	size_t		key_len = 0;
	SendHeader	headers[SEND_MAX_HEADERS];
	int			nheaders = 0;
	rd_kafka_conf_t *conf;
	rd_kafka_t *rk;
	rd_kafka_headers_t *hdrs = NULL;
	rd_kafka_resp_err_t err;
	char		errstr[512];
	char		tmo[32];
	SendState	ss;
	int			topic_partitions;
	double		deadline;
	int			i;

	for (i = 0; i < argc; i++)
	{
		const char *a = argv[i];
		const char *v = (i + 1 < argc) ? argv[i + 1] : NULL;

		if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0)
		{
			verbose = true;
			continue;
		}
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
		{
			usage(stdout);
			return 0;
		}
		if (v == NULL)
			usage_error("send: unknown or incomplete option \"%s\"", a);
		i++;
		if (strcmp(a, "--bootstrap") == 0 || strcmp(a, "-b") == 0)
			bootstrap = v;
		else if (strcmp(a, "--topic") == 0 || strcmp(a, "-t") == 0)
			topic = v;
		else if (strcmp(a, "--partition") == 0 || strcmp(a, "-p") == 0)
			partition = option_long(a, v, 0, KLB_MAX_PARTITIONS - 1);
		else if (strcmp(a, "--timeout") == 0)
			timeout_s = option_long(a, v, 1, 86400);
		else if (strcmp(a, "--value-hex") == 0)
		{
			if (value != NULL)
				usage_error("send: --value-hex given twice");
			value = hex_decode_or_usage(a, v, &value_len);
		}
		else if (strcmp(a, "--key-hex") == 0)
		{
			if (key != NULL)
				usage_error("send: --key-hex given twice");
			key = hex_decode_or_usage(a, v, &key_len);
		}
		else if (strcmp(a, "--header") == 0)
		{
			const char *eq = strchr(v, '=');

			if (eq == NULL || eq == v)
				usage_error("send: --header expects NAME=HEX with a non-empty NAME, got \"%s\"", v);
			if (nheaders >= SEND_MAX_HEADERS)
				usage_error("send: more than %d headers", SEND_MAX_HEADERS);
			headers[nheaders].name = strndup(v, (size_t) (eq - v));
			if (headers[nheaders].name == NULL)
				die("out of memory");
			headers[nheaders].value = hex_decode_or_usage("--header", eq + 1, &headers[nheaders].len);
			nheaders++;
		}
		else
			usage_error("send: unknown option \"%s\"", a);
	}
	if (bootstrap == NULL)
		usage_error("send: --bootstrap is required");
	if (topic == NULL)
		usage_error("send: --topic is required");
	if (value == NULL)
		usage_error("send: --value-hex is required (an empty string for an empty value)");
	if (!valid_topic_name(topic))
		usage_error("send: invalid topic name \"%s\"", topic);

	memset(&ss, 0, sizeof(ss));
	conf = rd_kafka_conf_new();
	rd_kafka_conf_set_log_cb(conf, rdkafka_log_cb);
	rd_kafka_conf_set_dr_msg_cb(conf, send_dr_cb);
	rd_kafka_conf_set_opaque(conf, &ss);
	conf_set_or_die(conf, "bootstrap.servers", bootstrap);
	conf_set_or_die(conf, "client.id", "kafka_lake_broker-send");
	conf_set_or_die(conf, "allow.auto.create.topics", "false");
	conf_set_or_die(conf, "linger.ms", "0");
	/* librdkafka gives up within --timeout and says why in the report */
	snprintf(tmo, sizeof(tmo), "%ld", timeout_s * 1000);
	conf_set_or_die(conf, "message.timeout.ms", tmo);
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
	if (rk == NULL)
		die("could not create producer: %s", errstr);

	topic_partitions = topic_partitions_or_die(rk, bootstrap, topic, (int) (timeout_s * 1000));
	if (partition >= topic_partitions)
		die("topic \"%s\" has %d partition(s): there is no partition %ld",
			topic, topic_partitions, partition);

	if (nheaders > 0)
	{
		hdrs = rd_kafka_headers_new((size_t) nheaders);
		for (int h = 0; h < nheaders; h++)
			rd_kafka_header_add(hdrs, headers[h].name, -1, headers[h].value,
								(ssize_t) headers[h].len);
	}
	/* a non-NULL pointer of length 0 is an empty value or key, not a null one */
	err = rd_kafka_producev(rk,
							RD_KAFKA_V_TOPIC(topic),
							RD_KAFKA_V_PARTITION(partition >= 0 ? (int32_t) partition : RD_KAFKA_PARTITION_UA),
							RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
							RD_KAFKA_V_VALUE(value, value_len),
							RD_KAFKA_V_KEY(key, key_len),
							RD_KAFKA_V_HEADERS(hdrs),
							RD_KAFKA_V_END);
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
	{
		if (hdrs != NULL)
			rd_kafka_headers_destroy(hdrs); /* not taken over on failure */
		die("could not produce to %s: %s", topic, rd_kafka_err2str(err));
	}

	/* message.timeout.ms reports a failure by then; a second more for the report */
	deadline = monotonic_seconds() + (double) timeout_s + 1.0;
	while (!ss.delivered && monotonic_seconds() < deadline)
		rd_kafka_poll(rk, 100);
	if (!ss.delivered)
		die("no delivery report for the record to %s within %ld s", topic, timeout_s);
	if (ss.err != RD_KAFKA_RESP_ERR_NO_ERROR)
		die("the record to %s was not delivered: %s", topic, rd_kafka_err2str(ss.err));
	note("delivered to %s [%d] at offset %" PRId64, topic, (int) ss.partition, ss.offset);
	printf("%" PRId64 "\n", ss.offset);
	fflush(stdout);

	rd_kafka_destroy(rk);
	free(value);
	free(key);
	for (int h = 0; h < nheaders; h++)
	{
		free(headers[h].name);
		free(headers[h].value);
	}
	return 0;
}


/* ----------------------------------------------------------------
 *		main
 * ----------------------------------------------------------------
 */

int
main(int argc, char **argv)
{
	const char *slash;

	if (argc > 0 && argv[0] != NULL && (slash = strrchr(argv[0], '/')) != NULL)
		progname = slash + 1;
	else if (argc > 0 && argv[0] != NULL)
		progname = argv[0];

	if (argc < 2)
		usage_error("no mode given: serve, ctl, fill or send");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
		strcmp(argv[1], "help") == 0)
	{
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "serve") == 0)
		return serve_main(argc - 2, argv + 2);
	if (strcmp(argv[1], "ctl") == 0)
		return ctl_main(argc - 2, argv + 2);
	if (strcmp(argv[1], "fill") == 0)
		return fill_main(argc - 2, argv + 2);
	if (strcmp(argv[1], "send") == 0)
		return send_main(argc - 2, argv + 2);
	usage_error("unknown mode \"%s\": expected serve, ctl, fill or send", argv[1]);
}
