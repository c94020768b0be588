// Helpers for tests that read ../shared/ref/models/*.json (the reference outputs).
#ifndef CABIN_TEST_REF_UTIL_H
#define CABIN_TEST_REF_UTIL_H

#include "engine/model.h"
#include "engine/wtype.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Tolerance as a fraction of the largest logit, by weight type (../shared/ref/README.md).
static inline double ref_tolerance(uint32_t type) {
    if (type == WT_F32 || type == WT_F16) return 0.003;
    if (type == WT_BF16) return 0.006;
    return 0.025;
}

// A JSON array of ids into a malloc'd int32 array; returns the count.
static inline int ref_load_ids(const cJSON *arr, int32_t **out) {
    int n = cJSON_GetArraySize(arr);
    *out = xmalloc((size_t)(n ? n : 1) * sizeof(int32_t));
    for (int i = 0; i < n; i++) (*out)[i] = (int32_t)cJSON_GetArrayItem(arr, i)->valuedouble;
    return n;
}

// max |ours[id] - ref| over [[id, logit], ...]; *scale receives the largest |ref logit|.
static inline double ref_compare_top(const cJSON *pairs, const float *logits, double *scale) {
    double worst = 0, big = 0;
    cJSON *p;
    cJSON_ArrayForEach(p, pairs) {
        int id = (int)cJSON_GetArrayItem(p, 0)->valuedouble;
        double v = cJSON_GetArrayItem(p, 1)->valuedouble;
        double d = fabs(logits[id] - v);
        if (d > worst) worst = d;
        if (fabs(v) > big) big = fabs(v);
    }
    *scale = big;
    return worst;
}

// The reference records: every NAME.json of REF/models and REF/next/models (next/ holds the
// files the README keeps apart until cabin handles them; this suite reads them too). root[i]
// gets REF or REF/next, name[i] the record's file name, sorted within each folder. Returns how
// many (at most max).
#define REF_MAX_RECORDS 64
typedef struct ref_record { char root[512]; char name[200]; } ref_record;
static int ref_cmp_record(const void *a, const void *b) {
    const ref_record *x = a, *y = b;
    int c = strcmp(x->root, y->root);
    return c ? c : strcmp(x->name, y->name);
}
static inline int ref_list_records(const char *ref, ref_record *out, int max) {
    int n = 0;
    for (int s = 0; s < 2; s++) {
        char root[512], dpath[600];
        snprintf(root, sizeof root, s ? "%s/next" : "%s", ref);
        snprintf(dpath, sizeof dpath, "%s/models", root);
        DIR *d = opendir(dpath);
        if (!d) continue;
        struct dirent *e;
        while ((e = readdir(d)) && n < max) {
            size_t len = strlen(e->d_name);
            if (len <= 5 || len >= sizeof out->name || strcmp(e->d_name + len - 5, ".json") != 0) continue;
            snprintf(out[n].root, sizeof out[n].root, "%s", root);
            memcpy(out[n].name, e->d_name, len + 1);
            n++;
        }
        closedir(d);
    }
    qsort(out, (size_t)n, sizeof *out, ref_cmp_record);
    return n;
}

// Reads DIR/models/JSON_NAME; fills model_path with the GGUF it describes. NULL (err set) if
// the file is missing or not JSON.
static inline cJSON *ref_load_json(const char *dir, const char *json_name, char *model_path, size_t n, errbuf *err) {
    if ((size_t)snprintf(model_path, n, "%s/models/%s", dir, json_name) >= n) {
        err_set(err, "%s: path too long", json_name);
        return NULL;
    }
    char *text = read_file_all(model_path, NULL, err);
    if (!text) return NULL;
    cJSON *root = cJSON_Parse(text);
    free(text);
    const cJSON *m = root ? cJSON_GetObjectItem(root, "model") : NULL;
    if (!cJSON_IsString(m)) {
        cJSON_Delete(root);
        err_set(err, "%s: bad JSON", model_path);
        return NULL;
    }
    if ((size_t)snprintf(model_path, n, "%s/models/%s", dir, m->valuestring) >= n) {
        cJSON_Delete(root);
        err_set(err, "%s: path too long", json_name);
        return NULL;
    }
    return root;
}

#endif
