/* substrings.h — does a text contain any of a set of names? (Aho–Corasick:
 * one pass over the text whatever the number of names.) */
#ifndef VF_BASE_SUBSTRINGS_H
#define VF_BASE_SUBSTRINGS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct vf__substrings vf__substrings;

/* A set of at most max_chars name bytes in all; NULL when out of memory. */
vf__substrings *vf__substrings_new(size_t max_chars);
void vf__substrings_free(vf__substrings *s);
/* Adds a non-empty name (before the first query); false when the set is full. */
bool vf__substrings_add(vf__substrings *s, const char *name, size_t len);
/* True when some name added is a substring of text. */
bool vf__substrings_any(vf__substrings *s, const char *text);

#endif
