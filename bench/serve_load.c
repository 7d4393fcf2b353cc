/* serve_load.c — a load generator for bench/serve.sh: N requests at once to
 * a 'vramfit serve' on loopback (each its own connection, all released
 * together), each with a deadline; prints the status counts and the latency
 * percentiles. Usage: serve_load PORT N PATH [PATH...] (paths taken in turn). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_CLIENTS 1000
#define DEADLINE_S 90

typedef struct client {
    const char *path;
    unsigned short port;
    int status;     /* HTTP status, 0 = no answer */
    double ms;
} client;

static pthread_barrier_t start;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *run(void *arg)
{
    client *c = arg;
    pthread_barrier_wait(&start);
    double t0 = now_ms();
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct timeval tv = {DEADLINE_S, 0};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(c->port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    char req[2048], buf[65536];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", c->path);
    if (s >= 0 && n > 0 && (size_t)n < sizeof req && connect(s, (struct sockaddr *)&a, sizeof a) == 0 &&
        write(s, req, (size_t)n) == n) {
        size_t got = 0;
        ssize_t r;
        while ((r = read(s, buf + got, got < 64 ? sizeof buf - got : sizeof buf - 64)) > 0)
            got = got < 64 ? got + (size_t)r : 64; /* keep the status line, drain the rest */
        if (got >= 12)
            sscanf(buf, "HTTP/%*d.%*d %d", &c->status);
    }
    if (s >= 0)
        close(s);
    c->ms = now_ms() - t0;
    return NULL;
}

static int by_ms(const void *x, const void *y)
{
    double a = ((const client *)x)->ms, b = ((const client *)y)->ms;
    return a < b ? -1 : a > b;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    int port = atoi(argv[1]), n = atoi(argv[2]);
    if (port <= 0 || port > 65535 || n < 1 || n > MAX_CLIENTS)
        return 2;
    static client cs[MAX_CLIENTS];
    static pthread_t th[MAX_CLIENTS];
    pthread_barrier_init(&start, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++) {
        cs[i] = (client){argv[3 + i % (argc - 3)], (unsigned short)port, 0, 0};
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setstacksize(&at, 256 * 1024);
        if (pthread_create(&th[i], &at, run, &cs[i]) != 0)
            return 1;
        pthread_attr_destroy(&at);
    }
    double t0 = now_ms();
    pthread_barrier_wait(&start);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    double wall = now_ms() - t0;
    int ok = 0, busy = 0, other = 0;
    for (int i = 0; i < n; i++)
        ok += cs[i].status == 200, busy += cs[i].status == 503, other += cs[i].status != 200 && cs[i].status != 503;
    qsort(cs, (size_t)n, sizeof cs[0], by_ms);
    printf("requests %d at once: %d answered 200, %d busy (503), %d failed; wall %.0f ms\n", n, ok, busy, other, wall);
    printf("latency p50 %.0f ms, p99 %.0f ms, max %.0f ms\n", cs[n / 2].ms, cs[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1].ms,
           cs[n - 1].ms);
    return other || busy ? 1 : 0;
}
