/*
 * bench_s3_put.c — a low-CPU HTTP/1.1 client for bench_s3.py: the same
 * requests as its Python client (presigned targets made by the script), so
 * that the client's own CPU on the shared cores weighs less in the figure.
 *
 *   bench_s3_put PUT|GET PORT THREADS SIZE FILE
 *
 * FILE: one request target per line ("/bucket/key?X-Amz-..."), sent to
 * 127.0.0.1:PORT.  THREADS threads, one keep-alive connection each, take
 * the lines round-robin (thread t: lines t, t + THREADS, ...).  PUT sends
 * SIZE bytes of one buffer (pseudo-random, made once) with one send() per
 * request after the header; GET reads and drops the body, checking that it
 * is SIZE bytes.  Every answer must be 200.  Prints one line:
 *   "ops N seconds S mib_per_s M errors E"
 * and exits 0 when E is 0, 1 otherwise (2: bad usage or no connection).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TARGETS_MAX 100000u
#define THREADS_MAX 64u

static char **targets;
static uint32_t ntargets, nthreads;
static uint16_t port;
static size_t size;
static char *body;
static int is_put;
static uint32_t errors;

static int send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Read one response: status and body length (the body is read and
 * dropped).  0, or -1 on a transport or framing error. */
static int read_resp(int fd, char *buf, size_t cap, int *status,
		     size_t *blen)
{
	size_t have = 0, hl = 0, cl = 0, got;
	char *e = NULL, *h;

	while (e == NULL) {
		ssize_t r;

		if (have == cap)
			return -1;
		r = recv(fd, buf + have, cap - have, 0);
		if (r <= 0)
			return -1;
		have += (size_t)r;
		e = memmem(buf, have, "\r\n\r\n", 4);
	}
	hl = (size_t)(e - buf) + 4;
	*e = 0;
	if (sscanf(buf, "HTTP/1.%*c %d", status) != 1)
		return -1;
	for (h = strstr(buf, "\r\n"); h != NULL; h = strstr(h + 2, "\r\n"))
		if (strncasecmp(h + 2, "Content-Length:", 15) == 0)
			cl = strtoull(h + 17, NULL, 10);
	got = have - hl;
	while (got < cl) {
		size_t want = cl - got < cap ? cl - got : cap;
		ssize_t r = recv(fd, buf, want, 0);

		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	*blen = cl;
	return 0;
}

static int connect_lo(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void *worker(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;
	size_t cap = 256u << 10;
	char *buf = malloc(cap), hdr[4096];
	int fd = connect_lo();

	if (buf == NULL || fd < 0) {
		__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
		free(buf);
		return NULL;
	}
	for (uint32_t i = t; i < ntargets; i += nthreads) {
		int n, status = 0;
		size_t blen = 0;

		if (is_put)
			n = snprintf(hdr, sizeof hdr, "PUT %s HTTP/1.1\r\n"
				     "Host: 127.0.0.1:%u\r\nContent-Length: "
				     "%zu\r\n\r\n", targets[i], port, size);
		else
			n = snprintf(hdr, sizeof hdr, "GET %s HTTP/1.1\r\n"
				     "Host: 127.0.0.1:%u\r\n\r\n",
				     targets[i], port);
		if (n <= 0 || (size_t)n >= sizeof hdr ||
		    send_all(fd, hdr, (size_t)n) != 0 ||
		    (is_put && send_all(fd, body, size) != 0) ||
		    read_resp(fd, buf, cap, &status, &blen) != 0 ||
		    status != 200 || (!is_put && blen != size)) {
			__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
			close(fd);
			fd = connect_lo();
			if (fd < 0)
				break;
		}
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[THREADS_MAX];
	struct timespec t0, t1;
	char line[8192];
	FILE *f;
	double s;

	if (argc != 6 || (strcmp(argv[1], "PUT") && strcmp(argv[1], "GET"))) {
		fprintf(stderr, "usage: bench_s3_put PUT|GET PORT THREADS "
			"SIZE FILE\n");
		return 2;
	}
	is_put = strcmp(argv[1], "PUT") == 0;
	port = (uint16_t)atoi(argv[2]);
	nthreads = (uint32_t)atoi(argv[3]);
	size = strtoull(argv[4], NULL, 10);
	if (nthreads == 0 || nthreads > THREADS_MAX || port == 0) {
		fprintf(stderr, "bench_s3_put: THREADS 1..%u, PORT not 0\n",
			THREADS_MAX);
		return 2;
	}
	f = fopen(argv[5], "r");
	targets = calloc(TARGETS_MAX, sizeof *targets);
	body = malloc(size ? size : 1);
	if (f == NULL || targets == NULL || body == NULL) {
		fprintf(stderr, "bench_s3_put: %s: %s\n", argv[5],
			strerror(errno));
		return 2;
	}
	for (size_t i = 0; i < size; i++)
		body[i] = (char)((i * 2654435761u) >> 13);
	while (ntargets < TARGETS_MAX && fgets(line, sizeof line, f) != NULL) {
		line[strcspn(line, "\r\n")] = 0;
		if (line[0] != 0)
			targets[ntargets++] = strdup(line);
	}
	fclose(f);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint32_t t = 0; t < nthreads; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)t))
			return 2;
	for (uint32_t t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("ops %u seconds %.3f mib_per_s %.1f errors %u\n", ntargets, s,
	       (double)ntargets * (double)size / s / 1048576.0, errors);
	for (uint32_t i = 0; i < ntargets; i++)
		free(targets[i]);
	free(targets);
	free(body);
	return errors ? 1 : 0;
}
