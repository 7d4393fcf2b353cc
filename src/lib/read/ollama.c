/* ollama.c — "ollama:NAME[:TAG]": the model Ollama keeps under that name in
 * its local store, read from disk, else the catalog model the name stands
 * for priced at the tag's type.
 *
 * The store (Ollama's server/manifest.go and server/images.go; its root
 * $OLLAMA_MODELS, else ~/.ollama/models): manifests/HOST/NAMESPACE/MODEL/TAG
 * is a JSON manifest (registry.ollama.ai/library for a bare name, user/model
 * its own namespace) whose layers list blobs by digest; the layer of media
 * type application/vnd.ollama.image.model is the GGUF file, stored as
 * blobs/sha256-<64 hex>. Names and tags are checked before they make a path
 * (no '..', no separators beyond the namespace's one); the manifest is read
 * bounded and every field checked. */
#include "read/readers.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define OLLAMA_HOST "registry.ollama.ai"
#define MODEL_MEDIA "application/vnd.ollama.image.model"
#define MANIFEST_CAP ((size_t)1 << 20)

/* A name part as Ollama allows them (letters, digits, '.', '-', '_'; not
 * starting with '.'), at most cap - 1 characters. */
static bool part_ok(const char *s, size_t n, size_t cap)
{
    if (!n || n >= cap || s[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '-' && s[i] != '_')
            return false;
    return true;
}

bool vf__ollama_name_parse(const char *source, vf__ollama_name *out)
{
    memset(out, 0, sizeof *out);
    if (strncmp(source, "ollama:", 7) != 0)
        return false;
    const char *s = source + 7, *colon = strchr(s, ':'), *slash = strchr(s, '/');
    size_t n = colon ? (size_t)(colon - s) : strlen(s);
    const char *model = s;
    size_t mn = n;
    if (slash && slash < s + n) { /* user/model */
        size_t un = (size_t)(slash - s);
        if (!part_ok(s, un, sizeof out->space) || strchr(slash + 1, '/'))
            return false;
        memcpy(out->space, s, un);
        model = slash + 1;
        mn = n - un - 1;
    } else {
        memcpy(out->space, "library", 8);
    }
    const char *tag = colon ? colon + 1 : "latest";
    size_t tn = strlen(tag);
    if (!part_ok(model, mn, sizeof out->model) || !part_ok(tag, tn, sizeof out->tag))
        return false;
    memcpy(out->model, model, mn);
    memcpy(out->tag, tag, tn + 1);
    return true;
}

char *vf__ollama_root(void)
{
    const char *env = getenv("OLLAMA_MODELS"), *home = getenv("HOME");
    if (env && *env)
        return strdup(env);
    if (!home || !*home)
        return NULL;
    size_t n = strlen(home) + sizeof "/.ollama/models";
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/.ollama/models", home);
    return p;
}

/* The model layer's blob in the manifest at path: root/blobs/sha256-<hex>. */
static vf_status blob_of(const char *root, const char *path, char **blob, vf_error *err)
{
    char *text = NULL;
    size_t len = 0;
    vf_status st = vf__read_small_file(path, MANIFEST_CAP, &text, &len, err);
    if (st != VF_OK)
        return st;
    json_t *j = vf__json_parse(text, len, path, err);
    free(text);
    if (!j)
        return VF_EFORMAT;
    const json_t *layers = json_object_get(j, "layers");
    const char *digest = NULL;
    st = VF_OK;
    if (!json_is_array(layers))
        st = vf__err(err, VF_EFORMAT, path, "an Ollama manifest without a layers list");
    for (size_t i = 0; st == VF_OK && i < json_array_size(layers) && !digest; i++) {
        const json_t *l = json_array_get(layers, i);
        const char *mt = json_string_value(json_object_get(l, "mediaType"));
        if (mt && strcmp(mt, MODEL_MEDIA) == 0 && !(digest = json_string_value(json_object_get(l, "digest"))))
            st = vf__err(err, VF_EFORMAT, path, "the model layer has no digest");
    }
    if (st == VF_OK && !digest)
        st = vf__err(err, VF_EFORMAT, path, "no layer of media type %s (the GGUF file)", MODEL_MEDIA);
    bool hex = digest && strncmp(digest, "sha256:", 7) == 0 && strlen(digest + 7) == 64;
    for (size_t i = 7; hex && i < 71; i++)
        hex = isxdigit((unsigned char)digest[i]) != 0;
    if (st == VF_OK && !hex)
        st = vf__err(err, VF_EFORMAT, path, "the model layer's digest is not sha256:<64 hex digits>");
    if (st == VF_OK) {
        size_t n = strlen(root) + 80;
        if (!(*blob = malloc(n)))
            st = vf__err(err, VF_ENOMEM, path, "out of memory");
        else
            snprintf(*blob, n, "%s/blobs/sha256-%s", root, digest + 7);
    }
    json_decref(j);
    return st;
}

vf_status vf__ollama_find(const vf__ollama_name *o, char **blob, char **manifest, vf_error *err)
{
    *blob = *manifest = NULL;
    char *root = vf__ollama_root();
    if (!root)
        return VF_OK; /* no home: no store */
    size_t n = strlen(root) + sizeof OLLAMA_HOST + sizeof o->space + sizeof o->model + sizeof o->tag + 16;
    char *path = malloc(n);
    vf_status st = VF_OK;
    if (!path) {
        st = vf__err(err, VF_ENOMEM, root, "out of memory");
    } else {
        snprintf(path, n, "%s/manifests/%s/%s/%s/%s", root, OLLAMA_HOST, o->space, o->model, o->tag);
        if (vf__is_file(path) && (st = blob_of(root, path, blob, err)) == VF_OK && !vf__is_file(*blob))
            st = vf__err(err, VF_ENOENT, path, "its model blob %s is missing from the store", *blob);
    }
    if (st == VF_OK && *blob) {
        *manifest = path;
    } else {
        free(path);
        free(*blob);
        *blob = NULL;
    }
    free(root);
    return st;
}

/* ---- the catalog model an Ollama name stands for ---- */

/* "llama3.1" also as "llama-3.1": Ollama writes family and version together,
 * some catalog names part them. */
static void hyphenated(const char *name, char *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; name[i] && k + 2 < cap; i++) {
        if (i > 0 && isdigit((unsigned char)name[i]) && isalpha((unsigned char)name[i - 1]) && !strchr(name, '-'))
            out[k++] = '-';
        out[k++] = name[i];
    }
    out[k] = '\0';
}

bool vf__ollama_catalog(const vf__ollama_name *o, char *base, size_t cap, char *ftype, size_t fcap)
{
    /* the tag: SIZE[-VARIANT...][-QUANT] ("8b", "8b-instruct-q4_K_M", "7b-q8_0") */
    char size[32] = "", quant[32] = "q4_k_m"; /* Ollama's library default */
    const char *t = o->tag;
    size_t sn = strcspn(t, "-");
    if (strcmp(t, "latest") == 0 || sn == 0 || sn >= sizeof size || !isdigit((unsigned char)t[0]))
        return false; /* "latest" names no size here: the store has it, or a size tag is needed */
    memcpy(size, t, sn);
    for (const char *p = t; (p = strchr(p, '-')) != NULL;) {
        p++;
        size_t qn = strcspn(p, "-");
        if (qn && qn < sizeof quant && (tolower((unsigned char)p[0]) == 'q' || strncasecmp(p, "fp16", 4) == 0 ||
                                        strncasecmp(p, "bf16", 4) == 0 || strncasecmp(p, "iq", 2) == 0)) {
            for (size_t i = 0; i < qn; i++)
                quant[i] = (char)tolower((unsigned char)p[i]);
            quant[qn] = '\0';
            if (strcmp(quant, "fp16") == 0)
                memcpy(quant, "f16", 4);
        }
    }
    if (strcmp(o->space, "library") != 0 || strlen(quant) >= fcap)
        return false;
    char forms[2][sizeof o->model * 2];
    snprintf(forms[0], sizeof forms[0], "%s", o->model);
    hyphenated(o->model, forms[1], sizeof forms[1]);
    static const char *const suffix[] = {"-instruct", "-it", "-chat", ""}; /* Ollama ships the chat models */
    for (size_t f = 0; f < 2; f++)
        for (size_t s = 0; s < sizeof suffix / sizeof suffix[0]; s++) {
            char alias[sizeof forms[0] + sizeof size + 16];
            const char *canonical = NULL;
            snprintf(alias, sizeof alias, "%.191s-%.31s%.9s", forms[f], size, suffix[s]);
            if (vf__catalog_config_text(alias, NULL, &canonical) && strlen(canonical) < cap) {
                snprintf(base, cap, "%s", canonical);
                snprintf(ftype, fcap, "%s", quant);
                return true;
            }
        }
    return false;
}
