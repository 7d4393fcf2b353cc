/* hub_curl.h — libcurl, loaded when the Hub is first asked (hidden).
 *
 * libcurl pulls ~30 shared libraries (TLS, Kerberos, LDAP, ...) whose
 * relocation took 3-5 ms of every command's start, Hub or not: that was
 * most of a small model's inspect. The Hub's HTTP (hub_http.c) calls the
 * same functions through this table, opened with dlopen on first use.
 * Included after <curl/curl.h>, it turns the curl_* calls of the file that
 * includes it into calls through the table; vf__curl() is NULL when no
 * libcurl can be loaded, and every path into the Hub checks that first. */
#ifndef VF_HUB_CURL_H
#define VF_HUB_CURL_H

#define CURL_DISABLE_TYPECHECK /* plain prototypes: the table takes their types */
#include <curl/curl.h>

#include "model/model.h"

#define VF_CURL_FNS(X)                                                                                                \
    X(global_init) X(easy_init) X(easy_setopt) X(easy_getinfo) X(easy_cleanup) X(easy_strerror) X(free)               \
    X(multi_init) X(multi_add_handle) X(multi_remove_handle) X(multi_perform) X(multi_poll) X(multi_cleanup)          \
    X(multi_info_read) X(multi_setopt) X(slist_append) X(slist_free_all) X(url) X(url_cleanup) X(url_get)            \
    X(url_set)

typedef struct vf__curl_fns {
#define VF_CURL_FIELD_(name) __typeof__(&curl_##name) name;
    VF_CURL_FNS(VF_CURL_FIELD_)
#undef VF_CURL_FIELD_
} vf__curl_fns;

/* The table, NULL when libcurl (libcurl.so.4 or a distribution's variant)
 * cannot be loaded. Thread-safe. */
VF_HIDDEN const vf__curl_fns *vf__curl(void);

#ifndef VF_CURL_TABLE_IMPL
#undef curl_easy_setopt /* curl.h's pass-through macros for the three variadic calls */
#undef curl_easy_getinfo
#undef curl_multi_setopt
#define curl_global_init (vf__curl()->global_init)
#define curl_easy_init (vf__curl()->easy_init)
#define curl_easy_setopt (vf__curl()->easy_setopt)
#define curl_easy_getinfo (vf__curl()->easy_getinfo)
#define curl_easy_cleanup (vf__curl()->easy_cleanup)
#define curl_easy_strerror (vf__curl()->easy_strerror)
#define curl_free (vf__curl()->free)
#define curl_multi_init (vf__curl()->multi_init)
#define curl_multi_add_handle (vf__curl()->multi_add_handle)
#define curl_multi_remove_handle (vf__curl()->multi_remove_handle)
#define curl_multi_perform (vf__curl()->multi_perform)
#define curl_multi_poll (vf__curl()->multi_poll)
#define curl_multi_cleanup (vf__curl()->multi_cleanup)
#define curl_multi_info_read (vf__curl()->multi_info_read)
#define curl_multi_setopt (vf__curl()->multi_setopt)
#define curl_slist_append (vf__curl()->slist_append)
#define curl_slist_free_all (vf__curl()->slist_free_all)
#define curl_url (vf__curl()->url)
#define curl_url_cleanup (vf__curl()->url_cleanup)
#define curl_url_get (vf__curl()->url_get)
#define curl_url_set (vf__curl()->url_set)
#endif

#endif
