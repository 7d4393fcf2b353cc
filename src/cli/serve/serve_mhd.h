/* serve_mhd.h — libmicrohttpd, loaded when 'vramfit serve' starts.
 *
 * libmicrohttpd brings GnuTLS and its ~10 libraries, whose loading and
 * constructors took ~2.3 ms of every command's start (measured: a program
 * that only links it, 0.3 -> 2.6 ms CPU), serve or not. The serve files call
 * it through this table, opened with dlopen by vf_mhd(); included in place
 * of <microhttpd.h>, it turns their MHD_* calls into calls through it.
 * vf_mhd() is NULL when no libmicrohttpd can be loaded: cmd_serve checks
 * that before anything else. */
#ifndef VF_SERVE_MHD_H
#define VF_SERVE_MHD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <microhttpd.h>

#define VF_MHD_FNS(X)                                                                                                 \
    X(start_daemon) X(stop_daemon) X(get_daemon_info) X(queue_response) X(create_response_from_buffer)              \
    X(destroy_response) X(add_response_header) X(lookup_connection_value) X(get_connection_values)

typedef struct vf_mhd_fns {
#define VF_MHD_FIELD_(name) __typeof__(&MHD_##name) name;
    VF_MHD_FNS(VF_MHD_FIELD_)
#undef VF_MHD_FIELD_
} vf_mhd_fns;

/* The table, NULL when libmicrohttpd (libmicrohttpd.so.12) cannot be loaded. */
const vf_mhd_fns *vf_mhd(void);

#ifndef VF_MHD_TABLE_IMPL
#define MHD_start_daemon (vf_mhd()->start_daemon)
#define MHD_stop_daemon (vf_mhd()->stop_daemon)
#define MHD_get_daemon_info (vf_mhd()->get_daemon_info)
#define MHD_queue_response (vf_mhd()->queue_response)
#define MHD_create_response_from_buffer (vf_mhd()->create_response_from_buffer)
#define MHD_destroy_response (vf_mhd()->destroy_response)
#define MHD_add_response_header (vf_mhd()->add_response_header)
#define MHD_lookup_connection_value (vf_mhd()->lookup_connection_value)
#define MHD_get_connection_values (vf_mhd()->get_connection_values)
#endif

#endif
