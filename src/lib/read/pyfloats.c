/* pyfloats.c — Python's non-JSON float words in a config.json's text. Self-
 * contained (the build's catalog index tool links it too). */
#include "read/pyfloats.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Python's json.dump writes float('inf') and nan as the bare words Infinity,
 * -Infinity and NaN (Nemotron-H's time_step_limit): JSON has no such tokens.
 * Outside strings they become null, padded to the same length so positions in
 * error messages hold. NULL when the text has none (or no memory). */
char *vf__python_floats(const char *text, size_t len)
{
    char *out = NULL;
    bool in_str = false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = false;
            continue;
        }
        if (c == '"') {
            in_str = true;
            continue;
        }
        size_t n = len - i >= 9 && memcmp(text + i, "-Infinity", 9) == 0 ? 9
                   : len - i >= 8 && memcmp(text + i, "Infinity", 8) == 0  ? 8
                   : len - i >= 3 && memcmp(text + i, "NaN", 3) == 0       ? 3
                                                                           : 0;
        if (!n)
            continue;
        if (!out) {
            if (!(out = malloc(len + 1)))
                return NULL;
            memcpy(out, text, len);
            out[len] = '\0';
        }
        memcpy(out + i, n == 3 ? "0  " : "null     ", n);
        i += n - 1;
    }
    return out;
}
