/* pyfloats.h — Python's bare Infinity / -Infinity / NaN in a config.json. */
#ifndef VF_READ_PYFLOATS_H
#define VF_READ_PYFLOATS_H

#include <stddef.h>

/* A copy of text (NUL-terminated) with those words outside strings replaced
 * by null (NaN by 0), padded to the same length; NULL when the text has none
 * or memory ran out. The caller frees it. */
char *vf__python_floats(const char *text, size_t len);

#endif
