/* http_get.c — a minimal HTTP/1.0 GET client for tests/cli/test_serve.sh, so
 * the test needs no curl. Usage: http_get PORT PATH [HOST_HEADER]
 * Prints the status code on the first line, then the body; exit 0 when a
 * response came, 1 when none did (connection refused, timeout). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct timeval tv = {20, 0};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)atoi(argv[1]));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(s, (struct sockaddr *)&a, sizeof a) != 0)
        return 1;
    char req[8192];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n\r\n", argv[2],
                     argc > 3 ? argv[3] : "127.0.0.1");
    if (n < 0 || (size_t)n >= sizeof req || write(s, req, (size_t)n) != n)
        return 1;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (len == cap && !(buf = realloc(buf, cap *= 2)))
            return 1;
        ssize_t r = read(s, buf + len, cap - len);
        if (r < 0)
            return 1;
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(s);
    int code = 0;
    if (len < 12 || sscanf(buf, "HTTP/%*d.%*d %d", &code) != 1)
        return 1;
    char *body = NULL;
    for (size_t i = 0; i + 3 < len; i++)
        if (memcmp(buf + i, "\r\n\r\n", 4) == 0) {
            body = buf + i + 4;
            break;
        }
    printf("%d\n", code);
    if (body)
        fwrite(body, 1, len - (size_t)(body - buf), stdout);
    free(buf);
    return 0;
}
