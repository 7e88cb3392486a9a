/*-------------------------------------------------------------------------
 *
 * limit.c
 *	  The physical-limit baseline of bench/land.sh: what this machine can do
 *	  at the least to land a topic durably, with librdkafka and no
 *	  PostgreSQL.  It consumes every partition of a topic from its beginning
 *	  to its end (as land() does, one consumer, every partition assigned)
 *	  with the consumer queue of the tuned kcat (the fastest setting measured
 *	  on this kind of machine) and, per partition, writes batches of at most
 *	  --batch records as the
 *	  landing must at the least: a staging directory, one JSONL file of the
 *	  records' lines ({"offset": o, "partition": p, "value": <the value>}),
 *	  its SHA-256, the file and the directory fsynced, the directory renamed
 *	  into place and its parent fsynced.  No contract, no catalog, no
 *	  manifest, no group commit: land() does all of that on top, so the
 *	  ratio land / limit says how much of land()'s time is beyond the
 *	  physical minimum.
 *
 *	  limit --bootstrap HOST:PORT --topic T --out DIR [--batch N]
 *
 *	  Prints "records bytes seconds" on stdout.  Values must be JSON text
 *	  (the bench's are); nothing is checked.
 *
 * IDENTIFICATION
 *	  bench/limit.c
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <openssl/evp.h>

/* One partition's batch being filled */
typedef struct Batch
{
	char	   *buf;
	size_t		len;
	size_t		cap;
	int			records;
	int64_t		first;
	int64_t		high;			/* the partition's end */
	int64_t		next;			/* the next offset to read */
	int			done;
} Batch;

static void
die(const char *what)
{
	fprintf(stderr, "limit: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
append(Batch *b, const char *s, size_t n)
{
	if (b->len + n > b->cap)
	{
		b->cap = (b->len + n) * 2;
		if ((b->buf = realloc(b->buf, b->cap)) == NULL)
			die("realloc");
	}
	memcpy(b->buf + b->len, s, n);
	b->len += n;
}

static void
fsync_path(const char *path)
{
	int			fd = open(path, O_RDONLY);

	if (fd < 0 || fsync(fd) != 0 || close(fd) != 0)
		die(path);
}

/* the batch to disk, durably, the way a landing must */
static void
flush(const char *out, int32_t partition, Batch *b)
{
	char		part[4096];
	char		stage[4200];
	char		final[4200];
	char		file[4300];
	unsigned char digest[32];
	char		hex[65];
	unsigned int dlen;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int			fd;
	size_t		off = 0;

	if (b->records == 0)
		return;
	snprintf(part, sizeof(part), "%s/partition=%d", out, partition);
	if (mkdir(part, 0700) != 0 && errno != EEXIST)
		die(part);
	snprintf(stage, sizeof(stage), "%s/.staging-%020" PRId64, part, b->first);
	snprintf(final, sizeof(final), "%s/batch=%020" PRId64, part, b->first);
	if (mkdir(stage, 0700) != 0)
		die(stage);
	snprintf(file, sizeof(file), "%s/accepted.jsonl", stage);
	if ((fd = open(file, O_WRONLY | O_CREAT | O_EXCL, 0600)) < 0)
		die(file);
	while (off < b->len)
	{
		ssize_t		w = write(fd, b->buf + off, b->len - off);

		if (w < 0)
			die(file);
		off += (size_t) w;
	}
	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1 ||
		EVP_DigestUpdate(ctx, b->buf, b->len) != 1 ||
		EVP_DigestFinal_ex(ctx, digest, &dlen) != 1)
		die("sha256");
	EVP_MD_CTX_free(ctx);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", digest[i]);
	if (fsync(fd) != 0 || close(fd) != 0)
		die(file);
	fsync_path(stage);
	if (rename(stage, final) != 0)
		die(final);
	fsync_path(part);
	b->len = 0;
	b->records = 0;
}

int
main(int argc, char **argv)
{
	const char *bootstrap = NULL;
	const char *topic = NULL;
	const char *out = NULL;
	int			batch = 50000;
	char		errstr[512];
	rd_kafka_conf_t *conf;
	rd_kafka_t *rk;
	const rd_kafka_metadata_t *md;
	rd_kafka_topic_t *rkt;
	rd_kafka_topic_partition_list_t *assign;
	Batch	   *batches;
	int			nparts = 0;
	int			open_parts;
	int64_t		records = 0;
	int64_t		bytes = 0;
	double		t0;

	for (int i = 1; i + 1 < argc; i += 2)
	{
		if (strcmp(argv[i], "--bootstrap") == 0)
			bootstrap = argv[i + 1];
		else if (strcmp(argv[i], "--topic") == 0)
			topic = argv[i + 1];
		else if (strcmp(argv[i], "--out") == 0)
			out = argv[i + 1];
		else if (strcmp(argv[i], "--batch") == 0)
			batch = atoi(argv[i + 1]);
	}
	if (!bootstrap || !topic || !out || batch <= 0)
	{
		fprintf(stderr, "usage: limit --bootstrap HOST:PORT --topic T --out DIR [--batch N]\n");
		return 2;
	}
	if (mkdir(out, 0700) != 0 && errno != EEXIST)
		die(out);

	t0 = now();
	conf = rd_kafka_conf_new();
	if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK ||
		rd_kafka_conf_set(conf, "group.id", "kafka_lake_bench_limit", errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK ||
		rd_kafka_conf_set(conf, "enable.auto.commit", "false", errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK ||
		rd_kafka_conf_set(conf, "enable.partition.eof", "true", errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK ||
		/* the queue of the tuned kcat of bench/land.sh: the fastest consumer measured here */
		rd_kafka_conf_set(conf, "queued.min.messages", "2000000", errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK ||
		rd_kafka_conf_set(conf, "queued.max.messages.kbytes", "1048576", errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
	{
		fprintf(stderr, "limit: %s\n", errstr);
		return 1;
	}
	if ((rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr))) == NULL)
	{
		fprintf(stderr, "limit: %s\n", errstr);
		return 1;
	}
	rkt = rd_kafka_topic_new(rk, topic, NULL);
	if (rd_kafka_metadata(rk, 0, rkt, &md, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR || md->topic_cnt != 1)
	{
		fprintf(stderr, "limit: no metadata for topic %s\n", topic);
		return 1;
	}
	nparts = md->topics[0].partition_cnt;
	batches = calloc(nparts, sizeof(Batch));
	assign = rd_kafka_topic_partition_list_new(nparts);
	open_parts = 0;
	for (int p = 0; p < nparts; p++)
	{
		int64_t		low;

		if (rd_kafka_query_watermark_offsets(rk, topic, p, &low, &batches[p].high, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR)
		{
			fprintf(stderr, "limit: no watermarks for partition %d\n", p);
			return 1;
		}
		batches[p].next = batches[p].first = low;
		if (low >= batches[p].high)
			batches[p].done = 1;
		else
		{
			rd_kafka_topic_partition_list_add(assign, topic, p)->offset = low;
			open_parts++;
		}
	}
	rd_kafka_metadata_destroy(md);
	rd_kafka_topic_destroy(rkt);
	if (rd_kafka_assign(rk, assign) != RD_KAFKA_RESP_ERR_NO_ERROR)
	{
		fprintf(stderr, "limit: assign failed\n");
		return 1;
	}
	rd_kafka_topic_partition_list_destroy(assign);

	while (open_parts > 0)
	{
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 1000);
		Batch	   *b;
		char		head[96];
		int			n;

		if (m == NULL)
			continue;
		if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
		{
			b = &batches[m->partition];
			if (!b->done && b->next >= b->high)
			{
				flush(out, m->partition, b);
				b->done = 1;
				open_parts--;
			}
			rd_kafka_message_destroy(m);
			continue;
		}
		if (m->err)
		{
			fprintf(stderr, "limit: %s\n", rd_kafka_message_errstr(m));
			return 1;
		}
		b = &batches[m->partition];
		if (b->records == 0)
			b->first = m->offset;
		n = snprintf(head, sizeof(head), "{\"offset\": %" PRId64 ", \"partition\": %d, \"value\": ",
					 m->offset, m->partition);
		append(b, head, n);
		append(b, m->payload ? m->payload : "null", m->payload ? m->len : 4);
		append(b, "}\n", 2);
		b->records++;
		b->next = m->offset + 1;
		records++;
		bytes += m->len;
		if (b->records >= batch)
			flush(out, m->partition, b);
		if (!b->done && b->next >= b->high)
		{
			flush(out, m->partition, b);
			b->done = 1;
			open_parts--;
		}
		rd_kafka_message_destroy(m);
	}
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
	printf("%" PRId64 " %" PRId64 " %.3f\n", records, bytes, now() - t0);
	return 0;
}
