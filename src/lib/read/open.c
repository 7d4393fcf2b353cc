/* open.c — vf_model_open: the one place that knows every reader. A path, a
 * directory or a catalog name is dispatched to its reader; the readers know only
 * the description (model.c) and not each other. */
#include "model/model.h"
#include "read/readers.h"
#include "read/hub/hub.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted list of directory entries ending with suffix (malloc'd strings). */
static vf_status list_dir(const char *dir, const char *suffix, char ***out, size_t *n, vf_error *err)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return vf__err(err, VF_EIO, dir, "cannot read directory");
    char **v = NULL;
    size_t cap = 0, k = 0;
    struct dirent *e;
    vf_status st = VF_OK;
    while ((e = readdir(d)) != NULL) {
        if (!vf__ends_with(e->d_name, suffix) || e->d_name[0] == '.')
            continue;
        if (k >= VF_MAX_SHARDS || !vf__grow((void **)&v, &cap, k, sizeof *v) || !(v[k] = strdup(e->d_name))) {
            st = vf__err(err, VF_ENOMEM, dir, "too many files");
            break;
        }
        k++;
    }
    closedir(d);
    if (st != VF_OK) {
        for (size_t i = 0; i < k; i++)
            free(v[i]);
        free(v);
        return st;
    }
    if (k > 1)
        qsort(v, k, sizeof *v, cmp_str);
    *out = v;
    *n = k;
    return VF_OK;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* Warns when the tensor list config.json implies stores a different number of
 * parameter elements (buffers excluded, packed words as stored) than the
 * weight files hold: the files stay the truth. */
static void check_sidecar_count(vf_model *m, const char *text, size_t len, const char *cfg_path)
{
    vf_model *c = vf__model_new(VF_FORMAT_CONFIG, cfg_path);
    vf_error e = {0};
    if (c && vf__hfconfig_read_text(c, text, len, cfg_path, &e) == VF_OK) {
        vf__model_classify(c);
        vf__model_classify(m);
        vf_model_totals tc, tf;
        vf_model_totals_get(c, &tc);
        vf_model_totals_get(m, &tf);
        uint64_t nc = tc.elements - tc.buffer_elements, nf = tf.elements - tf.buffer_elements;
        /* a file may store a copy of a tied head (Qwen3-0.6B does) */
        bool tied_copy = c->hp.tie_word_embeddings && nf > nc && nf - nc == c->hp.vocab_size * c->hp.hidden_size;
        if (nc != nf && !tied_copy)
            vf__model_warn(m, "%s: config.json implies %llu parameter elements, the weight files hold %llu", cfg_path,
                           (unsigned long long)nc, (unsigned long long)nf);
    }
    vf_model_free(c);
}

/* Reads config.json beside weight files into m->config and m->hp. A broken
 * config next to good weights is a warning, not a failure: the weights are
 * the truth. */
static void merge_sidecar_config(vf_model *m, vf__fs *fs, const char *dir)
{
    char *cfg_path = vf__path_join(dir, "config.json");
    if (!cfg_path)
        return;
    if (vf__fs_exists(fs, cfg_path)) {
        char *text = NULL;
        size_t len = 0;
        vf_error e = {0};
        if (vf__fs_read_small(fs, cfg_path, VF_MAX_CONFIG_BYTES, &text, &len, &e) == VF_OK) {
            json_t *cfg = vf__config_json_parse(text, len, cfg_path, &e);
            if (cfg && json_is_object(cfg)) {
                vf_hparams hp;
                memset(&hp, 0, sizeof hp);
                hp.torch_dtype = VF_DTYPE_UNKNOWN;
                if (vf__hfconfig_parse_hparams(&hp, cfg, cfg_path, &e) == VF_OK) {
                    vf__hparams_free(&m->hp);
                    m->hp = hp;
                    json_decref(m->config);
                    m->config = json_incref(cfg);
                    check_sidecar_count(m, text, len, cfg_path);
                } else {
                    vf__hparams_free(&hp);
                    vf__model_warn(m, "%s", e.msg);
                }
            } else if (cfg) {
                vf__model_warn(m, "%s: not a json object", cfg_path);
            } else {
                vf__model_warn(m, "%s", e.msg);
            }
            json_decref(cfg);
            free(text);
        } else {
            vf__model_warn(m, "%s", e.msg);
        }
    }
    free(cfg_path);
}

static vf_status read_config_file(vf_model *m, vf__fs *fs, const char *path, vf_error *err)
{
    char *text = NULL;
    size_t len = 0;
    vf_status st = vf__fs_read_small(fs, path, VF_MAX_CONFIG_BYTES, &text, &len, err);
    if (st == VF_OK) {
        /* refuse malformed json here, the same way for every config reader */
        json_t *j = vf__config_json_parse(text, len, path, err);
        if (!j)
            st = VF_EFORMAT;
        else if (!json_is_object(j))
            st = vf__err(err, VF_EFORMAT, path, "config is not a json object");
        json_decref(j);
    }
    if (st == VF_OK)
        st = vf__hfconfig_read_text(m, text, len, path, err);
    free(text);
    return st;
}

/* A GGUF split is opened by its first shard: "-00001-of-0000N.gguf". */
static const char *first_gguf(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strstr(names[i], "-of-") || strstr(names[i], "-00001-of-"))
            return names[i];
    return n ? names[0] : NULL;
}

/* A Mistral-format consolidated*.safetensors beside an HF-format set holds the
 * same weights: the set is read, as transformers reads it (not counted twice). */
static size_t drop_consolidated(char **names, size_t n)
{
    size_t k = 0;
    bool hf = false;
    for (size_t i = 0; i < n; i++)
        hf = hf || strncmp(names[i], "consolidated", 12) != 0;
    for (size_t i = 0; i < n; i++) {
        if (hf && strncmp(names[i], "consolidated", 12) == 0)
            free(names[i]);
        else
            names[k++] = names[i];
    }
    return k;
}

static vf_status open_dir(vf_model **mp, const char *dir, vf_error *err)
{
    vf_status st;
    char *p = NULL;
    char **names = NULL;
    size_t n = 0;
    vf_model *m = NULL;

    if ((p = vf__path_join(dir, "model.safetensors.index.json")) && vf__is_file(p)) {
        m = vf__model_new(VF_FORMAT_SAFETENSORS, dir);
        st = m ? vf__safetensors_read_index(m, &vf__local_fs, p, err) : vf__err(err, VF_ENOMEM, dir, "out of memory");
        goto done;
    }
    free(p);
    p = NULL;
    if ((st = list_dir(dir, ".safetensors", &names, &n, err)) != VF_OK)
        goto done;
    n = drop_consolidated(names, n);
    if (n > 0) {
        m = vf__model_new(VF_FORMAT_SAFETENSORS, dir);
        if (!m) {
            st = vf__err(err, VF_ENOMEM, dir, "out of memory");
            goto done;
        }
        for (size_t i = 0; i < n && st == VF_OK; i++) {
            char *fp = vf__path_join(dir, names[i]);
            st = fp ? vf__safetensors_read(m, &vf__local_fs, fp, err) : vf__err(err, VF_ENOMEM, dir, "out of memory");
            free(fp);
        }
        goto done;
    }
    free_list(names, n);
    names = NULL;
    if ((st = list_dir(dir, ".gguf", &names, &n, err)) != VF_OK)
        goto done;
    if (n > 0) {
        m = vf__model_new(VF_FORMAT_GGUF, dir);
        p = vf__path_join(dir, first_gguf(names, n));
        st = m && p ? vf__gguf_read(m, &vf__local_fs, p, err) : vf__err(err, VF_ENOMEM, dir, "out of memory");
        goto done;
    }
    if ((p = vf__path_join(dir, "config.json")) && vf__is_file(p)) {
        m = vf__model_new(VF_FORMAT_CONFIG, dir);
        st = m ? read_config_file(m, &vf__local_fs, p, err) : vf__err(err, VF_ENOMEM, dir, "out of memory");
        goto done;
    }
    st = vf__err(err, VF_ENOENT, dir, "no model files (config.json, *.safetensors, *.gguf) in directory");
done:
    if (st == VF_OK && m && m->format != VF_FORMAT_CONFIG)
        merge_sidecar_config(m, &vf__local_fs, dir);
    free(p);
    free_list(names, n);
    if (st != VF_OK) {
        vf_model_free(m);
        m = NULL;
    }
    *mp = m;
    return st;
}

/* One file, by its name: read through fs (the local files or a Hub repository). */
static vf_status open_file(vf_model **mp, vf__fs *fs, const char *source, vf_error *err)
{
    vf_status st;
    vf_model *m = NULL;
    char *dir = vf__path_dir(source);
    if (!dir)
        return vf__err(err, VF_ENOMEM, source, "out of memory");
    if (vf__ends_with(source, ".safetensors")) {
        m = vf__model_new(VF_FORMAT_SAFETENSORS, source);
        st = m ? vf__safetensors_read(m, fs, source, err) : VF_ENOMEM;
    } else if (vf__ends_with(source, ".index.json")) {
        m = vf__model_new(VF_FORMAT_SAFETENSORS, source);
        st = m ? vf__safetensors_read_index(m, fs, source, err) : VF_ENOMEM;
    } else if (vf__ends_with(source, ".gguf")) {
        m = vf__model_new(VF_FORMAT_GGUF, source);
        st = m ? vf__gguf_read(m, fs, source, err) : VF_ENOMEM;
    } else if (vf__ends_with(source, ".onnx")) {
        /* the graph reader reads local files (its own bounded window) */
        m = fs == &vf__local_fs ? vf__model_new(VF_FORMAT_ONNX, source) : NULL;
        st = m ? vf__onnx_read(m, source, err)
           : fs != &vf__local_fs ? vf__err(err, VF_EUNSUPPORTED, source, "an onnx graph is read from a local file only")
                                 : VF_ENOMEM;
    } else if (vf__ends_with(source, ".json")) {
        m = vf__model_new(VF_FORMAT_CONFIG, source);
        st = m ? read_config_file(m, fs, source, err) : VF_ENOMEM;
    } else {
        st = vf__err(err, VF_EUNSUPPORTED, source,
                     "unrecognised file type (expected .safetensors, .gguf, .onnx, .index.json or config.json)");
    }
    if (st == VF_ENOMEM && !m)
        vf__err(err, VF_ENOMEM, source, "out of memory");
    if (st == VF_OK && m->format == VF_FORMAT_SAFETENSORS)
        merge_sidecar_config(m, fs, dir);
    free(dir);
    if (st != VF_OK) {
        vf_model_free(m);
        m = NULL;
    }
    *mp = m;
    return st;
}

/* A catalog answer that is not the model's own published file says so. */
static void warn_provenance(vf_model *m, const char *id)
{
    vf_catalog_info ci;
    if (vf_catalog_entry(vf_catalog_find(id), &ci) != VF_OK || !ci.provenance)
        return;
    if (strcmp(ci.provenance, "variant") == 0)
        vf__model_warn(m, "%s: the catalog answers with its base model's config.json (a variant whose own file it "
                          "does not hold; data/models/catalog.tsv says which and why)", id);
    else if (strcmp(ci.provenance, "assembled") == 0)
        vf__model_warn(m, "%s: the catalog's config.json was assembled from code and docs, not copied from the "
                          "published file (data/models/catalog.tsv says from what)", id);
}

static vf_status open_catalog(vf_model **mp, const char *source, const char *hub_note, vf_error *err)
{
    size_t len = 0;
    const char *canonical = NULL;
    const char *text = vf__catalog_config_text(source, &len, &canonical);
    *mp = NULL;
    if (!text) {
        const char *near[3];
        size_t nn = vf_catalog_suggest(source, near, 3);
        if (nn == 0)
            return vf__err(err, VF_ENOENT, source, "no such file, directory or catalog model%s", hub_note);
        return vf__err(err, VF_ENOENT, source, "no such file, directory or catalog model%s; did you mean: %s%s%s%s%s",
                       hub_note, near[0], nn > 1 ? ", " : "", nn > 1 ? near[1] : "", nn > 2 ? ", " : "",
                       nn > 2 ? near[2] : "");
    }
    vf_model *m = vf__model_new(VF_FORMAT_CONFIG, canonical ? canonical : source);
    vf_status st = m ? vf__hfconfig_read_text(m, text, len, canonical ? canonical : source, err)
                     : vf__err(err, VF_ENOMEM, source, "out of memory");
    if (st == VF_OK && canonical && !m->hp.name[0])
        snprintf(m->hp.name, sizeof m->hp.name, "%s", canonical);
    if (st == VF_OK)
        warn_provenance(m, canonical ? canonical : source);
    if (st != VF_OK)
        vf_model_free(m);
    else
        *mp = m;
    return st;
}

vf_status vf_catalog_open(size_t i, vf_model **out, vf_error *err)
{
    vf_catalog_info ci;
    if (!out)
        return vf__err(err, VF_EINVAL, "", "no model given");
    *out = NULL;
    if (vf_catalog_entry(i, &ci) != VF_OK)
        return vf__err(err, VF_EINVAL, "", "catalog entry %zu out of range (%zu entries)", i, vf_catalog_count());
    vf_status st = open_catalog(out, ci.id, "", err);
    if (st != VF_OK)
        return st;
    snprintf((*out)->origin, sizeof (*out)->origin, "the embedded catalog");
    vf__model_classify(*out);
    return VF_OK;
}

/* A Hub repository: the file the opener reads first, through the Hub's file
 * set; what was fetched is cached once the whole model read cleanly. */
static vf_status open_hub(vf_model **mp, const vf__hub_id *id, const vf_open_opts *o, vf_error *err)
{
    vf__hub_opts ho = {.offline = o->offline, .refresh = o->refresh, .file = o->file,
                       .timeout_s = o->hub_timeout_s, .progress = o->progress, .progress_ctx = o->progress_ctx};
    vf__hub *h = NULL;
    vf_status st = vf__hub_open(id, &ho, &h, err);
    if (st == VF_OK)
        st = open_file(mp, vf__hub_fs(h), vf__hub_pick(h), err);
    if (st == VF_OK) {
        vf__hub_save(h);
        vf_model *m = *mp;
        char *src = strdup(vf__hub_root(h));
        if (src) {
            free(m->source);
            m->source = src;
        }
        snprintf(m->origin, sizeof m->origin, "%s", vf__hub_answered(h));
    }
    vf__hub_free(h);
    return st;
}

/* Offline, a plain id vramfit's cache of the Hub holds (models --update
 * fetched it, or an earlier run online): true when it answered. */
static bool cached_hub(vf_model **mp, const vf__hub_id *id, const vf_open_opts *o)
{
    vf_open_opts off = *o;
    off.offline = true;
    off.refresh = false;
    return open_hub(mp, id, &off, NULL) == VF_OK;
}

/* An id neither the HF cache nor the catalog holds, offline: what was
 * searched, the nearest catalog ids and how to answer anyway, in one line. */
static vf_status offline_miss(const char *source, const vf_error *ce, vf_error *err)
{
    char *root = vf__hfcache_root();
    const char *near = strstr(ce->msg, "did you mean: ");
    vf_status st = vf__err(err, VF_ENOENT, source,
                           "not in the embedded catalog%s%s, nor in the Hugging Face cache (%s); offline, so the Hub "
                           "was not asked: give a path to its config.json or weights, or drop --offline/HF_HUB_OFFLINE "
                           "to read hf://%s",
                           near ? "; nearest: " : "", near ? near + 14 : "", root ? root : "no cache directory",
                           source);
    free(root);
    return st;
}

/* A catalog model standing for a GGUF file it is not: its weights priced at
 * a llama-quantize type (memory/estimate.c). */
static void price_as(vf_model *m, const char *ftype, const char *named, bool own_recipe)
{
    snprintf(m->priced_as, sizeof m->priced_as, "%.31s", ftype);
    snprintf(m->priced_named, sizeof m->priced_named, "%.47s", named);
    m->priced_own_recipe = own_recipe;
}

/* "ollama:NAME[:TAG]": the GGUF file the local Ollama store keeps under that
 * name, else the catalog model it stands for priced at the tag's type. */
static vf_status open_ollama(vf_model **mp, const char *source, vf_error *err)
{
    vf__ollama_name o;
    if (!vf__ollama_name_parse(source, &o))
        return vf__err(err, VF_ENOENT, source, "not an Ollama name: ollama:NAME[:TAG] (or USER/NAME) of letters, "
                                               "digits, '.', '-' and '_'");
    char *blob = NULL, *manifest = NULL;
    vf_status st = vf__ollama_find(&o, &blob, &manifest, err);
    if (st != VF_OK)
        return st;
    if (blob) {
        vf_model *m = vf__model_new(VF_FORMAT_GGUF, blob);
        st = m ? vf__gguf_read(m, &vf__local_fs, blob, err) : vf__err(err, VF_ENOMEM, source, "out of memory");
        if (st == VF_OK) {
            snprintf(m->origin, sizeof m->origin, "the local Ollama store (%.500s)", manifest);
            *mp = m;
        } else {
            vf_model_free(m);
        }
        free(blob);
        free(manifest);
        return st;
    }
    char base[160], ft[32], *root = vf__ollama_root();
    if (!vf__ollama_catalog(&o, base, sizeof base, ft, sizeof ft)) {
        st = vf__err(err, VF_ENOENT, source, "not in the local Ollama store (%s), nor a catalog model by that name "
                                             "and size: a size tag (ollama:qwen3:8b), a path to the GGUF file, or "
                                             "'ollama pull' it first", root ? root : "no home directory");
        free(root);
        return st;
    }
    if ((st = open_catalog(mp, base, "", err)) == VF_OK) {
        vf_model *m = *mp;
        char named[48];
        snprintf(named, sizeof named, "%s", ft);
        for (char *c = named; *c; c++)
            *c = (char)toupper((unsigned char)*c);
        price_as(m, ft, named, false);
        snprintf(m->origin, sizeof m->origin, "the embedded catalog's %s, its weights priced as %s", base, named);
        vf__model_warn(m, "%s: not in the local Ollama store (%s): the catalog's %s with its weights as "
                          "llama-quantize's %s rules make the file", source, root ? root : "no home directory", base, ft);
    }
    free(root);
    return st;
}

/* A GGUF repository's name the catalog does not hold, offline: its base
 * model, priced at the type the name gives. false: not such a name. */
static bool open_gguf_repo(vf_model **mp, const char *source, vf_status *st, vf_error *err)
{
    vf__gguf_repo g;
    if (!vf__gguf_repo_resolve(source, &g))
        return false;
    *st = open_catalog(mp, g.base, "", err);
    if (*st != VF_OK)
        return true;
    vf_model *m = *mp;
    price_as(m, g.ftype, g.named, g.own_recipe);
    snprintf(m->origin, sizeof m->origin, "the embedded catalog's %s, its weights priced as %s", g.base, g.named);
    if (g.own_recipe)
        vf__model_warn(m, "%s: the repository's own mix (%s) is not read: priced by llama-quantize's %s rules", source,
                       g.named, g.ftype);
    vf__model_warn(m, "%s: offline, the catalog's %s with its weights as llama-quantize's %s rules make the file; "
                      "online, hf://%s reads the repository's own header", source, g.base, g.ftype, source);
    return true;
}

/* The same id when the Hub could not be reached: still an I/O error (exit
 * 4), its one line saying also what was searched and how to answer anyway. */
static vf_status unreachable_miss(const char *source, const vf_error *ce, vf_error *err)
{
    char hub[160];
    const char *at = strstr(err->msg, "cannot reach ");
    snprintf(hub, sizeof hub, "%s", at ? at : "the Hub did not answer");
    char *root = vf__hfcache_root();
    const char *near = strstr(ce->msg, "did you mean: ");
    vf_status st = vf__err(err, VF_EIO, source,
                           "%s; not in the embedded catalog%s%s, nor in the Hugging Face cache (%s): give a path to "
                           "its config.json or weights, or retry when the Hub answers",
                           hub, near ? "; nearest: " : "", near ? near + 14 : "", root ? root : "no cache directory");
    free(root);
    return st;
}

/* A Hub id: the local HF cache first; a plain org/name then the catalog, then
 * the Hub; hf:// always the Hub (or a cache of it). */
static vf_status open_by_id(vf_model **mp, const char *source, const vf_open_opts *o, vf_error *err)
{
    vf__hub_id id;
    bool hub = vf__hub_id_parse(source, &id);
    char *snap = NULL;
    vf_status st = hub ? vf__hfcache_find(&id, &snap, err) : VF_OK;
    if (st != VF_OK)
        return st;
    if (snap) {
        st = open_dir(mp, snap, err);
        if (st == VF_OK)
            snprintf((*mp)->origin, sizeof (*mp)->origin, "the local Hugging Face cache (%s)", snap);
        free(snap);
        return st;
    }
    vf_error ce = {0};
    bool missed = false; /* a plain org/name the catalog does not hold */
    if (!hub || !id.explicit_hub) {
        bool offline = o->offline || vf__hub_env_offline();
        st = open_catalog(mp, source, "", &ce);
        missed = st == VF_ENOENT;
        if (st == VF_OK) {
            snprintf((*mp)->origin, sizeof (*mp)->origin, "the embedded catalog");
            return st;
        }
        vf_status gs;
        if (hub && offline && st == VF_ENOENT && cached_hub(mp, &id, o))
            return VF_OK;
        if (hub && offline && st == VF_ENOENT)
            return open_gguf_repo(mp, source, &gs, err) ? gs : offline_miss(source, &ce, err);
        if (!hub || offline || st != VF_ENOENT) {
            if (err)
                *err = ce;
            return st;
        }
    }
    st = open_hub(mp, &id, o, err);
    if (st == VF_ENOENT && !id.explicit_hub && err && strstr(err->msg, "has no repository"))
        return open_catalog(mp, source, ", nor a Hub repository", err);
    vf_status gs;
    if (st == VF_EIO && missed && open_gguf_repo(mp, source, &gs, NULL) && gs == VF_OK)
        return gs;
    if (st == VF_EIO && missed && err)
        return unreachable_miss(source, &ce, err);
    return st;
}

bool vf_hub_id_valid(const char *source)
{
    vf__hub_id id;
    return source && vf__hub_id_parse(source, &id);
}

vf_status vf_model_open_with(const char *source, const vf_open_opts *opts, vf_model **out, vf_error *err)
{
    if (!source || !out)
        return vf__err(err, VF_EINVAL, "", "no model given");
    *out = NULL;
    vf_open_opts o;
    memset(&o, 0, sizeof o);
    if (opts)
        o = *opts;
    vf_status st;
    vf_model *m = NULL;
    if (vf__is_dir(source))
        st = open_dir(&m, source, err);
    else if (vf__is_file(source))
        st = open_file(&m, &vf__local_fs, source, err);
    else if (strncmp(source, "ollama:", 7) == 0)
        st = open_ollama(&m, source, err);
    else
        st = open_by_id(&m, source, &o, err);
    if (st != VF_OK)
        return st;
    if (!m->origin[0])
        snprintf(m->origin, sizeof m->origin, "local files");
    vf__model_classify(m);
    *out = m;
    return VF_OK;
}

vf_status vf_model_open(const char *source, vf_model **out, vf_error *err)
{
    return vf_model_open_with(source, NULL, out, err);
}

const char *vf_model_origin(const vf_model *m) { return m ? m->origin : ""; }
