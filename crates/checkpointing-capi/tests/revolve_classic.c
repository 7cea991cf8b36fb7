/*
 * The classic revolve() loop of Griewank and Walther's driver pattern, over a
 * scalar recurrence x[t+1] = f(x[t]) with J = x[T]^2: for a grid of (steps,
 * snaps) the forward steps (advanced plus one recorded per turn) must be the
 * binomial minimum, the advanced ones numforw(steps, snaps), and the gradient
 * bitwise that of storing every state. Then the same loop through the
 * extended driver (ckpt_revolve_driver_*) over other single-level schedules,
 * and the classic trajectory's writes through its spec.
 */
#include "revolve.h"
#include "checkpointing.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static double f(double x) { return sin(x) + 0.5 * x; }
static double df(double x) { return cos(x) + 0.5; }

static int passed, failed;
#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (cond) {                                                             \
            passed++;                                                           \
        } else {                                                                \
            failed++;                                                           \
            fprintf(stderr, "revolve_classic.c:%d: ", __LINE__);                \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
        }                                                                       \
    } while (0)

static double store_all_gradient(int steps) {
    double *x = malloc(sizeof(double) * (steps + 1));
    x[0] = 0.7;
    for (int t = 0; t < steps; t++) x[t + 1] = f(x[t]);
    double xb = 2.0 * x[steps];
    for (int t = steps; t-- > 0;) xb *= df(x[t]);
    free(x);
    return xb;
}

/* ANCHOR: reversal (included by docs/src/c-fortran.md) */
/* One reversal. `driver` NULL: revolve(); else ckpt_revolve_driver_next().
 * Returns 0 on success, with the forward and advanced counts. */
static int reversal(int steps, int snaps, CkptRevolveDriver *driver, long *forward, long *advanced,
                    double *gradient, int *max_check) {
    int check = -1, capo = 0, fine = steps, info = 0, oldcapo, j;
    double x = 0.7, xb = 0.0;
    double *slots = calloc(snaps > 0 ? snaps : 1, sizeof(double));
    enum action whatodo;
    *forward = *advanced = 0;
    *max_check = -1;
    do {
        oldcapo = capo;
        if (driver)
            whatodo = (enum action)ckpt_revolve_driver_next(driver, &check, &capo, &fine, &info);
        else
            whatodo = revolve(&check, &capo, &fine, snaps, &info);
        switch (whatodo) {
        case advance:
            for (j = oldcapo; j < capo; j++) x = f(x);
            *forward += capo - oldcapo;
            *advanced += capo - oldcapo;
            break;
        case takeshot:
            if (check > *max_check) *max_check = check;
            if (check >= 0 && check < snaps) slots[check] = x;
            break;
        case restore:
            x = slots[check];
            break;
        case firsturn:
            /* record the step capo -> capo + 1, initialise the adjoint */
            xb = 2.0 * f(x);
            xb *= df(x);
            *forward += 1;
            break;
        case youturn:
            xb *= df(x);
            *forward += 1;
            break;
        case terminate:
            break;
        case error:
            if (!(snaps == 1 && steps > 65 && info == 15))
                fprintf(stderr, "revolve error, info %d: %s\n", info, ckpt_last_error());
            break;
        }
    } while (whatodo != terminate && whatodo != error);
    free(slots);
    *gradient = xb;
    return whatodo == terminate ? 0 : -1;
}
/* ANCHOR_END: reversal */

int main(void) {
    int grid[][2] = {{1, 1}, {2, 1}, {5, 2}, {10, 3}, {37, 4}, {65, 1}, {100, 5},
                     {250, 7}, {1000, 10}, {1000, 3}, {5000, 20}, {20, 30}};
    for (size_t g = 0; g < sizeof grid / sizeof grid[0]; g++) {
        int steps = grid[g][0], snaps = grid[g][1], max_check;
        long forward, advanced;
        double gradient;
        uint64_t want;
        int rc = reversal(steps, snaps, NULL, &forward, &advanced, &gradient, &max_check);
        CHECK(rc == 0, "revolve(%d, %d) failed", steps, snaps);
        CHECK(ckpt_binomial_forward_steps(steps, snaps, &want) == CKPT_STATUS_OK, "binomial");
        CHECK((uint64_t)forward == want, "steps %d snaps %d: %ld forward steps, binomial minimum %llu",
              steps, snaps, forward, (unsigned long long)want);
        CHECK(advanced == numforw(steps, snaps), "steps %d snaps %d: advanced %ld, numforw %d", steps,
              snaps, advanced, numforw(steps, snaps));
        CHECK(max_check < snaps, "steps %d snaps %d: slot %d", steps, snaps, max_check);
        CHECK(gradient == store_all_gradient(steps), "steps %d snaps %d: gradient", steps, snaps);
        printf("revolve(steps %5d, snaps %2d): %8ld forward steps = binomial minimum %8llu, "
               "numforw %7d, expense %.3f\n",
               steps, snaps, forward, (unsigned long long)want, numforw(steps, snaps),
               expense(steps, snaps));
    }
    /* A dense grid, counts only. One snapshot for more than 65 steps takes
     * more than Algorithm 799's 64 repetitions (REPSUP): info 15 there and
     * here. */
    for (int steps = 1; steps <= 120; steps++)
        for (int snaps = 1; snaps <= 9; snaps++) {
            long forward, advanced;
            double gradient;
            uint64_t want = 0;
            int max_check;
            int rc = reversal(steps, snaps, NULL, &forward, &advanced, &gradient, &max_check);
            if (snaps == 1 && steps > 65) {
                CHECK(rc != 0, "grid steps %d snaps 1: no REPSUP error", steps);
                continue;
            }
            ckpt_binomial_forward_steps(steps, snaps, &want);
            CHECK(rc == 0 && (uint64_t)forward == want && gradient == store_all_gradient(steps),
                  "grid steps %d snaps %d", steps, snaps);
        }

    /* The extended driver over other single-level schedules. */
    const char *specs[] = {
        "{\"schedule\":\"revolve\",\"max_n\":200,\"snapshots_in_ram\":6}",
        "{\"schedule\":\"multistage\",\"max_n\":200,\"snapshots_in_ram\":6}",
        "{\"schedule\":\"online-r2\",\"steps\":200,\"snapshots\":6}",
    };
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        CkptRevolveDriver *driver = NULL;
        CHECK(ckpt_revolve_driver_new(specs[i], &driver) == CKPT_STATUS_OK, "%s: %s", specs[i],
              ckpt_last_error());
        long forward, advanced;
        double gradient;
        int max_check;
        int rc = reversal(200, 64, driver, &forward, &advanced, &gradient, &max_check);
        CHECK(rc == 0 && gradient == store_all_gradient(200), "%s: gradient", specs[i]);
        CHECK(max_check < 6, "%s: slot %d", specs[i], max_check);
        printf("driver %-60s %6ld forward steps, slots 0..%d\n", specs[i], forward, max_check);
        CHECK(ckpt_revolve_driver_free(driver) == CKPT_STATUS_OK, "free");
    }
    /* The classic trajectory as a schedule, by its spec: the same forward
     * steps as the reference package's, the published code's 4,960
     * checkpoint writes for (10,000, 30) against 9,126. */
    {
        CkptCost classic, reference;
        CHECK(ckpt_spec_cost("{\"schedule\":\"revolve\",\"max_n\":10000,\"snapshots_in_ram\":30,"
                             "\"trajectory\":\"classic\"}",
                             &classic) == CKPT_STATUS_OK,
              "classic spec: %s", ckpt_last_error());
        CHECK(ckpt_spec_cost("{\"schedule\":\"revolve\",\"max_n\":10000,\"snapshots_in_ram\":30}",
                             &reference) == CKPT_STATUS_OK,
              "reference spec");
        CHECK(classic.forward_steps == reference.forward_steps, "forward steps differ");
        CHECK(classic.ram.writes == 4960 && reference.ram.writes == 9126, "writes %llu %llu",
              (unsigned long long)classic.ram.writes, (unsigned long long)reference.ram.writes);
    }
    printf("revolve_classic: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
