/*
 * A driver written against the classic revolve.h of Griewank and Walther's
 * Algorithm 799 (ACM TOMS 26(1), 2000), and nothing else: it compiles
 * unchanged against the published code and against libcheckpointing_capi,
 * and prints every call of every scenario, so that the two outputs can be
 * compared byte for byte.
 *
 *     revolve_fixtures SET    with SET one of: grid large online aux
 *
 * For each scenario, a header line
 *     case NAME capo=C fine=F snaps=S info=I
 * then one line per revolve() call: the action's letter (A advance,
 * T takeshot, R restore, F firsturn, Y youturn, X terminate, E error) and
 * check, capo, fine, info as revolve() left them, then "end" and why the
 * driver stopped. Whatever revolve() prints itself (info > 0) lands in the
 * same stream. A scenario changes fine or snaps between calls where the
 * classic code allows it (during the forward sweep, to reverse a number of
 * steps not known in advance) and where it does not (snaps lowered, fine
 * grown when every slot is used), and goes on calling after terminate.
 *
 * scripts/revolve-fixtures.sh builds it against the reference source and
 * writes tests/fixtures/revolve/SET.txt.gz; run-c-tests.sh builds it
 * against ours and diffs.
 */
#include "revolve.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Calls in one scenario before the driver gives up (a reversal of 10,000
 * steps takes about 40,000). */
#define CALL_LIMIT 2000000

/* A change made by the caller before a call. */
enum change_kind {
    NO_CHANGE,
    FINE_ADD,         /* fine += value */
    FINE_FROM_CAPO,   /* fine = capo + value */
    SNAPS_SET,        /* snaps = value */
    FINE_ADD_ALL_USED /* fine += value once check + 1 == snaps, forward only */
};

struct change {
    int call; /* before this call (1-based); 0 for FINE_ADD_ALL_USED */
    enum change_kind kind;
    int value;
};

#define MAX_CHANGES 6

struct scenario {
    char name[64];
    int capo, fine, snaps, info;
    struct change changes[MAX_CHANGES];
    int after; /* calls made after terminate (or error) */
};

static char letter(enum action a) {
    switch (a) {
    case advance: return 'A';
    case takeshot: return 'T';
    case restore: return 'R';
    case firsturn: return 'F';
    case youturn: return 'Y';
    case terminate: return 'X';
    case error: return 'E';
    }
    return '?';
}

static void run(const struct scenario *s) {
    int check = -1, capo = s->capo, fine = s->fine, snaps = s->snaps, info = s->info;
    int call, k, reversing = 0, all_used_done = 0, extra = 0;
    enum action a;
    const char *why = "limit";
    printf("case %s capo=%d fine=%d snaps=%d info=%d\n", s->name, capo, fine, snaps, info);
    for (call = 1; call <= CALL_LIMIT; call++) {
        for (k = 0; k < MAX_CHANGES; k++) {
            const struct change *c = &s->changes[k];
            if (c->kind == FINE_ADD_ALL_USED) {
                if (!all_used_done && !reversing && check >= 0 && check + 1 == snaps) {
                    fine += c->value;
                    all_used_done = 1;
                }
                continue;
            }
            if (c->kind == NO_CHANGE || c->call != call) continue;
            if (c->kind == FINE_ADD) fine += c->value;
            if (c->kind == FINE_FROM_CAPO) fine = capo + c->value;
            if (c->kind == SNAPS_SET) snaps = c->value;
        }
        a = revolve(&check, &capo, &fine, snaps, &info);
        printf("%c %d %d %d %d\n", letter(a), check, capo, fine, info);
        if (a == firsturn || a == youturn || a == restore) reversing = 1;
        if (a == terminate || a == error) {
            if (extra == s->after) {
                why = a == terminate ? "terminate" : "error";
                break;
            }
            extra++;
        }
    }
    printf("end %s\n", why);
}

static struct scenario plain(int capo, int steps, int snaps, int info) {
    struct scenario s;
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "plain");
    s.capo = capo;
    s.fine = capo + steps;
    s.snaps = snaps;
    s.info = info;
    return s;
}

/* Steps 0-200 x snaps 0-25 from capo 0. */
static void grid(void) {
    int steps, snaps;
    for (steps = 0; steps <= 200; steps++)
        for (snaps = 0; snaps <= 25; snaps++) {
            struct scenario s = plain(0, steps, snaps, 0);
            run(&s);
        }
}

/* Long reversals, a nonzero or negative first capo, snapshots up to 200
 * (beyond the classic code's 64 slots), and the classic code's own
 * diagnostics (info = 1). */
static void large(void) {
    static const int long_steps[] = {1000, 10000};
    static const int first_capo[] = {-7, -1, 1, 13, 1000};
    static const int many_snaps[] = {63, 64, 65, 100, 200};
    size_t i;
    int snaps;
    for (i = 0; i < sizeof long_steps / sizeof *long_steps; i++)
        for (snaps = 1; snaps <= 30; snaps++) {
            struct scenario s = plain(0, long_steps[i], snaps, 0);
            run(&s);
        }
    for (i = 0; i < sizeof first_capo / sizeof *first_capo; i++)
        for (snaps = 1; snaps <= 6; snaps++) {
            struct scenario s = plain(first_capo[i], 37, snaps, 0);
            run(&s);
        }
    for (i = 0; i < sizeof many_snaps / sizeof *many_snaps; i++) {
        struct scenario s = plain(0, 100, many_snaps[i], 0);
        run(&s);
        s = plain(0, 1000, many_snaps[i], 0);
        run(&s);
    }
    for (snaps = 1; snaps <= 8; snaps++) {
        struct scenario s = plain(0, 60, snaps, 1);
        run(&s);
    }
    {
        struct scenario s = plain(0, 100, 65, 1); /* info 14, with info > 0 */
        run(&s);
        s = plain(0, 0, 3, 1); /* terminate at once, printing the counters */
        run(&s);
    }
}

/* The number of steps learnt during the forward sweep: fine grown once or
 * several times, shrunk, set to capo + 1 to start the reversal, grown when
 * every slot is used (info 13); snaps raised or lowered midway (info 11);
 * calls after terminate and after error. */
static void online(void) {
    int steps, snaps, call, d;
    for (steps = 2; steps <= 40; steps += 3)
        for (snaps = 1; snaps <= 6; snaps++)
            for (call = 1; call <= 12; call++)
                for (d = 1; d <= 25; d += 6) {
                    struct scenario s = plain(0, steps, snaps, 0);
                    snprintf(s.name, sizeof s.name, "grow-once@%d+%d", call, d);
                    s.changes[0] = (struct change){call, FINE_ADD, d};
                    run(&s);
                }
    for (steps = 2; steps <= 30; steps += 4)
        for (snaps = 2; snaps <= 6; snaps++) {
            struct scenario s = plain(0, steps, snaps, 0);
            snprintf(s.name, sizeof s.name, "grow-thrice");
            s.changes[0] = (struct change){2, FINE_ADD, 5};
            s.changes[1] = (struct change){4, FINE_ADD, 9};
            s.changes[2] = (struct change){6, FINE_ADD, 20};
            run(&s);
            /* the classic online pattern: fine far ahead, then capo + 1 */
            s = plain(0, 1000, snaps, 0);
            snprintf(s.name, sizeof s.name, "unknown-end@%d", 2 * steps);
            s.changes[0] = (struct change){2 * steps, FINE_FROM_CAPO, 1};
            run(&s);
            s = plain(0, 1000, snaps, 0);
            snprintf(s.name, sizeof s.name, "shrink@%d", steps);
            s.changes[0] = (struct change){steps, FINE_FROM_CAPO, steps / 2 + 1};
            run(&s);
            s = plain(0, 50, snaps, 0);
            snprintf(s.name, sizeof s.name, "shrink-below-capo@%d", steps);
            s.changes[0] = (struct change){steps, FINE_FROM_CAPO, -1};
            s.after = 2;
            run(&s);
        }
    for (steps = 3; steps <= 60; steps += 7)
        for (snaps = 1; snaps <= 5; snaps++)
            for (d = 1; d <= 9; d += 4) {
                struct scenario s = plain(0, steps, snaps, 0);
                snprintf(s.name, sizeof s.name, "grow-all-used+%d", d);
                s.changes[0] = (struct change){0, FINE_ADD_ALL_USED, d};
                s.after = 2;
                run(&s);
            }
    for (steps = 5; steps <= 40; steps += 5)
        for (snaps = 2; snaps <= 6; snaps++)
            for (call = 2; call <= 40; call += 2) {
                static const int deltas[] = {-1, 1, -2, 3};
                size_t i;
                for (i = 0; i < sizeof deltas / sizeof *deltas; i++) {
                    struct scenario s = plain(0, steps, snaps, 0);
                    int to = snaps + deltas[i];
                    snprintf(s.name, sizeof s.name, "snaps@%d=%d", call, to);
                    s.changes[0] = (struct change){call, SNAPS_SET, to};
                    s.after = 1;
                    run(&s);
                }
            }
    for (steps = 0; steps <= 12; steps++)
        for (snaps = 0; snaps <= 3; snaps++) {
            struct scenario s = plain(0, steps, snaps, 0);
            snprintf(s.name, sizeof s.name, "after-end");
            s.after = 3;
            run(&s);
        }
}

/* Whether numforw(steps, snaps) of the classic code overflows an int in
 * its loop `range = range * (reps + snaps) / reps` (undefined behaviour
 * there, so no fixture can say what it does). */
static int numforw_overflows(int steps, int snaps) {
    long long reps = 0, range = 1;
    if (snaps < 1 || snaps > 64) return 0;
    while (range < steps) {
        reps += 1;
        if (range * (reps + snaps) > INT_MAX) return 1;
        range = range * (reps + snaps) / reps;
    }
    return 0;
}

/* numforw, expense, maxrange and adjust, diagnostics included, where the
 * classic code terminates (its adjust() loops for steps < 0) and
 * its arithmetic is defined. */
static void aux(void) {
    int steps, snaps, ss, tt;
    static const int big[] = {1000, 4096, 10000, 65536, 100000, 1000000};
    size_t i;
    for (steps = -2; steps <= 130; steps++)
        for (snaps = -1; snaps <= 70; snaps++)
            printf("numforw(%d, %d) = %d; expense = %.17g\n", steps, snaps,
                   numforw(steps, snaps), expense(steps, snaps));
    for (i = 0; i < sizeof big / sizeof *big; i++)
        for (snaps = 1; snaps <= 65; snaps++)
            if (!numforw_overflows(big[i], snaps))
                printf("numforw(%d, %d) = %d; expense = %.17g\n", big[i], snaps,
                   numforw(big[i], snaps), expense(big[i], snaps));
    for (ss = -1; ss <= 40; ss++)
        for (tt = -1; tt <= 40; tt++) printf("maxrange(%d, %d) = %d\n", ss, tt, maxrange(ss, tt));
    for (steps = 0; steps <= 3000; steps++) printf("adjust(%d) = %d\n", steps, adjust(steps));
    for (i = 0; i < sizeof big / sizeof *big; i++)
        printf("adjust(%d) = %d\n", big[i], adjust(big[i]));
    printf("adjust(%d) = %d\n", INT_MAX, adjust(INT_MAX));
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s grid|large|online|aux\n", argv[0]);
        return 2;
    }
    if (strcmp(argv[1], "grid") == 0)
        grid();
    else if (strcmp(argv[1], "large") == 0)
        large();
    else if (strcmp(argv[1], "online") == 0)
        online();
    else if (strcmp(argv[1], "aux") == 0)
        aux();
    else {
        fprintf(stderr, "unknown set %s\n", argv[1]);
        return 2;
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
