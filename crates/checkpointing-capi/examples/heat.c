/*
 * The adjoint of a 1D nonlinear heat equation, checkpointed through the C API
 * of checkpointing: by Revolve (single pulls and batched pulls), by H-Revolve
 * with a disk level (snapshots written to files in a temporary directory and
 * read back), and by the online OnlineR2 (number of steps told with
 * ckpt_schedule_finalize when the forward reaches it). Each gradient must be
 * bitwise equal to the same program's store-all gradient.
 *
 *   u[t+1]_i = u_i + R (u_{i-1} - 2 u_i + u_{i+1}) - DT u_i^3   (u_{-1} = u_N = 0)
 *   J = sum_i u[T]_i^2,  gradient dJ/du[0] by the hand-written adjoint.
 *
 * Build: cc heat.c $(pkg-config --cflags --libs checkpointing) -lm
 */
#include "checkpointing.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { N = 64 };
static const uint64_t T = 300;
static const double R = 0.25, DT = 0.05;

/* Exits with the library's message if a call fails. */
#define CKPT(call)                                                               \
    do {                                                                         \
        CkptStatus status_ = (call);                                             \
        if (status_ < 0) {                                                       \
            fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call,    \
                    ckpt_status_name(status_), ckpt_last_error());               \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

#define FAIL(...)                                                                \
    do {                                                                         \
        fprintf(stderr, "heat.c: " __VA_ARGS__);                                 \
        fputc('\n', stderr);                                                     \
        exit(1);                                                                 \
    } while (0)

static void step(const double *u, double *out) {
    for (int i = 0; i < N; i++) {
        double l = i > 0 ? u[i - 1] : 0.0, r = i < N - 1 ? u[i + 1] : 0.0;
        out[i] = u[i] + R * (l - 2.0 * u[i] + r) - DT * u[i] * u[i] * u[i];
    }
}

/* lam = (d step / d u at u)^T lam_next */
static void adjoint_step(const double *u, const double *lam_next, double *lam) {
    for (int j = 0; j < N; j++) {
        double l = j > 0 ? lam_next[j - 1] : 0.0, r = j < N - 1 ? lam_next[j + 1] : 0.0;
        lam[j] = lam_next[j] * (1.0 - 2.0 * R - 3.0 * DT * u[j] * u[j]) + R * (l + r);
    }
}

static void initial(double *u) {
    for (int i = 0; i < N; i++)
        u[i] = sin(3.14159265358979 * (i + 1) / (N + 1)) + 0.3 * cos(0.7 * i);
}

/* The reference: every state kept. */
static void store_all(double *grad) {
    double *states = malloc(sizeof(double) * N * (T + 1));
    initial(states);
    for (uint64_t t = 0; t < T; t++) step(states + t * N, states + (t + 1) * N);
    double lam[N], tmp[N];
    for (int i = 0; i < N; i++) lam[i] = 2.0 * states[T * N + i];
    for (uint64_t t = T; t-- > 0;) {
        adjoint_step(states + t * N, lam, tmp);
        memcpy(lam, tmp, sizeof lam);
    }
    memcpy(grad, lam, sizeof lam);
    free(states);
}

/* The executor: the forward state and its step, the adjoint, RAM
 * checkpoints and adjoint dependencies by step, disk checkpoints in files. */
typedef struct {
    double work[N];
    uint64_t wn;
    double lam[N];
    double **ram;  /* ram[n]: the state at step n, or NULL */
    double **deps; /* deps[t]: the state at the start of step t, or NULL */
    char dir[64];
    unsigned disk_writes, disk_reads, ram_peak, ram_now;
} Exec;

static void disk_path(const Exec *e, uint64_t n, char *path) {
    snprintf(path, 128, "%s/state_%llu.bin", e->dir, (unsigned long long)n);
}

static void store(Exec *e, int8_t level, uint64_t n, const double *state) {
    if (level == CKPT_RAM) {
        if (!e->ram[n]) {
            e->ram[n] = malloc(sizeof(double) * N);
            if (++e->ram_now > e->ram_peak) e->ram_peak = e->ram_now;
        }
        memcpy(e->ram[n], state, sizeof(double) * N);
    } else if (level == CKPT_DISK) {
        char path[128];
        disk_path(e, n, path);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(state, sizeof(double), N, f) != N || fclose(f)) FAIL("cannot write %s", path);
        e->disk_writes++;
    } else {
        FAIL("store in level %d", level);
    }
}

static void load(Exec *e, int8_t level, uint64_t n, double *state) {
    if (level == CKPT_RAM) {
        if (!e->ram[n]) FAIL("no RAM checkpoint of step %llu", (unsigned long long)n);
        memcpy(state, e->ram[n], sizeof(double) * N);
    } else if (level == CKPT_DISK) {
        char path[128];
        disk_path(e, n, path);
        FILE *f = fopen(path, "rb");
        if (!f || fread(state, sizeof(double), N, f) != N) FAIL("cannot read %s", path);
        fclose(f);
        e->disk_reads++;
    } else {
        FAIL("load from level %d", level);
    }
}

static void delete(Exec *e, int8_t level, uint64_t n) {
    if (level == CKPT_RAM) {
        free(e->ram[n]);
        e->ram[n] = NULL;
        e->ram_now--;
    } else if (level == CKPT_DISK) {
        char path[128];
        disk_path(e, n, path);
        remove(path);
    }
}

/* Applies one action; returns 1 at EndReverse. `finalize`: the schedule is
 * online and is told T when the forward reaches it. */
static int apply(Exec *e, CkptSchedule *s, const CkptActionRecord *a, int online, int *finalized) {
    double tmp[N];
    switch (a->kind) {
    case CKPT_FORWARD: {
        if (a->n0 != e->wn) FAIL("Forward from %llu, forward at %llu", (unsigned long long)a->n0,
                                 (unsigned long long)e->wn);
        if (a->flags & CKPT_WRITE_ICS) store(e, a->storage, a->n0, e->work);
        int keep = (a->flags & CKPT_WRITE_ADJ_DEPS) != 0;
        if (keep && a->storage != CKPT_WORK) FAIL("adjoint dependencies in level %d", a->storage);
        /* An online schedule runs "until told to stop": stop at T. */
        uint64_t end = a->n1 < T ? a->n1 : T;
        for (uint64_t t = a->n0; t < end; t++) {
            if (keep) {
                if (!e->deps[t]) e->deps[t] = malloc(sizeof(double) * N);
                memcpy(e->deps[t], e->work, sizeof(double) * N);
            }
            step(e->work, tmp);
            memcpy(e->work, tmp, sizeof tmp);
        }
        e->wn = end;
        if (online && !*finalized && e->wn == T) {
            CKPT(ckpt_schedule_finalize(s, T));
            *finalized = 1;
        }
        return 0;
    }
    case CKPT_END_FORWARD:
        if (e->wn != T) FAIL("EndForward at step %llu", (unsigned long long)e->wn);
        for (int i = 0; i < N; i++) e->lam[i] = 2.0 * e->work[i];
        return 0;
    case CKPT_REVERSE:
        for (uint64_t t = a->n1; t-- > a->n0;) {
            if (!e->deps[t]) FAIL("no adjoint dependencies of step %llu", (unsigned long long)t);
            adjoint_step(e->deps[t], e->lam, tmp);
            memcpy(e->lam, tmp, sizeof tmp);
            if (a->flags & CKPT_CLEAR_ADJ_DEPS) {
                free(e->deps[t]);
                e->deps[t] = NULL;
            }
        }
        return 0;
    case CKPT_COPY:
    case CKPT_MOVE:
        if (a->to_storage == CKPT_WORK) {
            load(e, a->from_storage, a->n0, e->work);
            e->wn = a->n0;
        } else if (a->to_storage != CKPT_NONE) {
            load(e, a->from_storage, a->n0, tmp);
            store(e, a->to_storage, a->n0, tmp);
        }
        if (a->kind == CKPT_MOVE) delete(e, a->from_storage, a->n0);
        return 0;
    case CKPT_END_REVERSE:
        return 1;
    default:
        FAIL("unknown action kind %d", a->kind);
    }
}

/* Runs the adjoint through schedule `s` (freed here) into `grad`. */
static Exec *run(CkptSchedule *s, int online, int batched, double *grad) {
    Exec *e = calloc(1, sizeof *e);
    /* An online schedule may plan past T before it is finalized. */
    e->ram = calloc(4 * T + 8, sizeof(double *));
    e->deps = calloc(4 * T + 8, sizeof(double *));
    strcpy(e->dir, "/tmp/ckpt-heat-XXXXXX");
    if (!mkdtemp(e->dir)) FAIL("mkdtemp");
    initial(e->work);
    int finalized = 0, done = 0;
    CkptActionRecord batch[64];
    while (!done) {
        size_t count = 0;
        if (batched) {
            CKPT(ckpt_schedule_next_records(s, batch, 64, &count));
        } else {
            count = ckpt_schedule_next(s, batch) == CKPT_STATUS_OK;
        }
        if (count == 0) FAIL("the schedule ended before EndReverse");
        for (size_t i = 0; i < count && !done; i++) done = apply(e, s, &batch[i], online, &finalized);
    }
    memcpy(grad, e->lam, sizeof e->lam);
    CKPT(ckpt_schedule_free(s));
    for (uint64_t n = 0; n < 4 * T + 8; n++) {
        if (e->ram[n]) delete(e, CKPT_RAM, n);
        free(e->deps[n]);
        if (n <= T) delete(e, CKPT_DISK, n); /* H-Revolve keeps its disk files */
    }
    free(e->ram);
    free(e->deps);
    if (rmdir(e->dir)) FAIL("temporary directory %s not empty", e->dir);
    return e;
}

static int check(const char *name, const double *grad, const double *want, Exec *e) {
    int same = memcmp(grad, want, sizeof(double) * N) == 0;
    printf("heat.c: %-28s gradient %s store-all (RAM peak %u, disk writes %u, reads %u)\n", name,
           same ? "bitwise equal to" : "DIFFERS from", e->ram_peak, e->disk_writes, e->disk_reads);
    free(e);
    return same;
}

int main(void) {
    double want[N], grad[N];
    store_all(want);
    int ok = 1;
    CkptSchedule *s = NULL;
    Exec *e;

    CKPT(ckpt_schedule_revolve(T, 6, &s));
    e = run(s, 0, 0, grad);
    ok &= e->ram_peak <= 6;
    ok &= check("revolve (single pulls)", grad, want, e);

    CKPT(ckpt_schedule_from_json("{\"schedule\":\"revolve\",\"max_n\":300,\"snapshots_in_ram\":6}", &s));
    ok &= check("revolve JSON (batched pulls)", grad, want, run(s, 0, 1, grad));

    CKPT(ckpt_schedule_from_json("{\"schedule\":\"hrevolve\",\"max_n\":300,\"snapshots_in_ram\":2,"
                                 "\"snapshots_on_disk\":6,\"wd\":0.5,\"rd\":0.5}",
                                 &s));
    e = run(s, 0, 1, grad);
    ok &= e->disk_writes > 0 && e->disk_reads > 0 && e->ram_peak <= 2;
    ok &= check("hrevolve RAM + disk files", grad, want, e);

    CKPT(ckpt_schedule_online_r2(6, &s));
    e = run(s, 1, 0, grad);
    ok &= e->ram_peak <= 6;
    ok &= check("online-r2 (finalize)", grad, want, e);

    if (!ok) {
        fprintf(stderr, "heat.c: FAILED\n");
        return 1;
    }
    printf("heat.c: all gradients bitwise equal\n");
    return 0;
}
