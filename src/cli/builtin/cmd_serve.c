/* cmd_serve.c — vramfit serve: the calculator as a local web page.
 *
 * libmicrohttpd answers with a thread per connection; the main thread waits for
 * SIGINT or SIGTERM (blocked everywhere, taken with sigwait) and then stops
 * the daemon, which closes every connection. */
#include "serve/serve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void help(void)
{
    printf("usage: vramfit serve [--addr HOST:PORT] [--models-dir DIR] [--hub] [--jobs N]\n\n"
           "Serves the calculator as a local web page: every knob of estimate and fit, the\n"
           "answer beside them (verdict, memory per GPU, breakdown), memory against context and\n"
           "batch, which GPUs fit and how many, and the launch command, for the embedded catalog\n"
           "(files under --models-dir, Hub ids with --hub); models found as you type; what runs\n"
           "on a GPU (?gpu=G, no model: models --fits); two setups side by side (b.KNOB=VALUE).\n"
           "The page's URL is its state: each input is a query parameter named as the CLI's\n"
           "long option.\n"
           "It calls\n"
           "  GET /api/estimate?model=M&OPTION=VALUE...   GET /api/fit?...   GET /api/plan?...&emit=E\n"
           "  GET /api/sweep?...&over=context|batch      GET /api/inspect?model=M\n"
           "  GET /api/models?OPTION=VALUE...   GET /api/gpus   GET /api/params (what each\n"
           "  endpoint takes)\n"
           "each answering with what the command prints with --json (errors: {\"error\", \"exit\"}\n"
           "with the command's one-line message). Ctrl-C (SIGINT) or SIGTERM stops it.\n\n"
           "  --addr HOST:PORT  where to listen (default 127.0.0.1:8080; port 0 picks a free\n"
           "                    one; [::1]:PORT for IPv6). Anything but loopback lets anyone\n"
           "                    who can reach it use the calculator\n"
           "  --models-dir DIR  model files the page may name, as paths inside DIR (symbolic\n"
           "                    links followed and checked); without it, catalog models only\n"
           "  --hub             the page may name Hugging Face Hub ids too (org/name,\n"
           "                    hf://org/name[@rev][:QUANT]): the local HF cache, vramfit's\n"
           "                    cache, else the Hub, headers only (HF_ENDPOINT, HF_TOKEN, as\n"
           "                    the CLI); HF_HUB_OFFLINE=1 in the server's environment: the\n"
           "                    caches only. Each Hub request gives up after %d s\n"
           "  --jobs N          commands run at once (default: the CPUs, at least 2); the\n"
           "                    others wait, %d s at most\n",
           VF_SERVE_HUB_TIMEOUT_S, VF_SERVE_QUEUE_S);
}

/* "HOST:PORT", "[V6]:PORT" → a socket address. */
static bool parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
    char host[256], port[16];
    const char *colon;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':' || (size_t)(close - s - 1) >= sizeof host)
            return false;
        memcpy(host, s + 1, (size_t)(close - s - 1));
        host[close - s - 1] = '\0';
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon || (size_t)(colon - s) >= sizeof host)
            return false;
        memcpy(host, s, (size_t)(colon - s));
        host[colon - s] = '\0';
    }
    if (strlen(colon + 1) >= sizeof port || !colon[1])
        return false;
    strcpy(port, colon + 1);
    for (const char *p = port; *p; p++)
        if (*p < '0' || *p > '9')
            return false;
    if (atol(port) > 65535)
        return false;
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
    if (getaddrinfo(host[0] ? host : NULL, port, &hints, &res) != 0 || !res)
        return false;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return true;
}

static bool is_loopback(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
    if (ss->ss_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
    return false;
}

int cmd_serve(int argc, char **argv)
{
    static const struct option opts[] = {{"addr", required_argument, NULL, 'a'},
                                         {"models-dir", required_argument, NULL, 'm'},
                                         {"jobs", required_argument, NULL, 'j'},
                                         {"hub", no_argument, NULL, 'H'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *addr = "127.0.0.1:8080", *models_dir = NULL;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    uint64_t jobs = cpus >= 2 ? (uint64_t)cpus : 2;
    bool hub = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":a:m:j:h", opts, NULL)) != -1) {
        switch (c) {
        case 'a':
            addr = optarg;
            break;
        case 'm':
            models_dir = optarg;
            break;
        case 'j':
            if (!vf_parse_u64(optarg, &jobs) || jobs < 1 || jobs > 256)
                return vf_usage_error("serve", "--jobs %s: expected a count from 1 to 256", optarg);
            break;
        case 'H':
            hub = true;
            break;
        case 'h':
            help();
            return VF_EXIT_OK;
        case ':':
            return vf_usage_error("serve", "option '%s' needs a value", argv[optind - 1]);
        default:
            return vf_usage_error("serve", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return vf_usage_error("serve", "unexpected argument '%s'", argv[optind]);
    struct sockaddr_storage ss;
    socklen_t sslen = 0;
    memset(&ss, 0, sizeof ss);
    if (!parse_addr(addr, &ss, &sslen))
        return vf_usage_error("serve", "--addr '%s' is not HOST:PORT", addr);

    if (!vf_mhd()) {
        fprintf(stderr, "vramfit: serve needs libmicrohttpd (libmicrohttpd.so.12, Debian: libmicrohttpd12), "
                        "which cannot be loaded\n");
        return VF_EXIT_IO;
    }
    static vf_serve_ctx ctx;
    ssize_t k = readlink("/proc/self/exe", ctx.exe, sizeof ctx.exe - 1);
    if (k <= 0 || (size_t)k >= sizeof ctx.exe - 1) {
        fprintf(stderr, "vramfit: serve: cannot find this program's path\n");
        return VF_EXIT_IO;
    }
    ctx.exe[k] = '\0';
    ctx.loopback = is_loopback(&ss);
    if (models_dir && !realpath(models_dir, ctx.models_dir)) {
        fprintf(stderr, "vramfit: %s: %s\n", models_dir, strerror(errno));
        return VF_EXIT_IO;
    }
    ctx.n_jobs = (unsigned)jobs;
    ctx.hub = hub;
    sem_init(&ctx.jobs, 0, ctx.n_jobs);

    /* SIGINT/SIGTERM are taken by sigwait below: block them before the
     * daemon's thread starts so that it inherits the mask */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* a thread per connection: one slow request does not hold up the page or
     * the others; each connection's URL and headers fit in 64 KiB, an idle
     * one is closed after 30 s, and at most VF_SERVE_MAX_CONN are open */
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, 0, NULL, NULL, vf_serve_handle, &ctx, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT, (unsigned)VF_SERVE_MAX_CONN, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)30, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536,
        MHD_OPTION_THREAD_STACK_SIZE, (size_t)1 << 20, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "vramfit: %s: cannot listen (address in use or not available)\n", addr);
        return VF_EXIT_IO;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    ctx.port = info ? info->port : 0;
    char host[INET6_ADDRSTRLEN + 2] = "";
    if (ss.ss_family == AF_INET6) {
        char h[INET6_ADDRSTRLEN];
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, h, sizeof h);
        snprintf(host, sizeof host, "[%s]", h);
    } else {
        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host, sizeof host);
    }
    if (!ctx.loopback)
        fprintf(stderr, "vramfit: warning: %s is not a loopback address: anyone who can reach it can use the "
                        "calculator on this machine's files\n",
                host);
    fprintf(stderr, "vramfit: serving on http://%s:%u/ (Ctrl-C stops)\n", host, (unsigned)ctx.port);
    int sig = 0;
    sigwait(&stop, &sig);
    MHD_stop_daemon(d);
    fprintf(stderr, "vramfit: stopped\n");
    return VF_EXIT_OK;
}
