// Helpers for tests that read ../shared/ref/models/*.json (the reference outputs).
#ifndef CABIN_TEST_REF_UTIL_H
#define CABIN_TEST_REF_UTIL_H

#include "engine/model.h"
#include "engine/wtype.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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
