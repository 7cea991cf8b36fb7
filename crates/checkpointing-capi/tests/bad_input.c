/*
 * Bad input through the C API: every case must return its status code (and a
 * message), never crash. Also run under valgrind by run-c-tests.sh.
 */
#include "checkpointing.h"
#include "revolve.h"

#include <stdio.h>
#include <string.h>

static int passed, failed;

#define EXPECT(call, want)                                                       \
    do {                                                                         \
        int got_ = (int)(call);                                                  \
        if (got_ == (int)(want)) {                                               \
            passed++;                                                            \
        } else {                                                                 \
            failed++;                                                            \
            fprintf(stderr, "bad_input.c:%d: %s returned %s, expected %s (%s)\n", \
                    __LINE__, #call, ckpt_status_name(got_), #want, ckpt_last_error()); \
        }                                                                        \
    } while (0)

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (cond) {                                                              \
            passed++;                                                            \
        } else {                                                                 \
            failed++;                                                            \
            fprintf(stderr, "bad_input.c:%d: %s\n", __LINE__, #cond);            \
        }                                                                        \
    } while (0)

int main(void) {
    CkptSchedule *s = NULL, *t = NULL;
    CkptActionRecord rec;
    size_t written = 0;
    uint64_t u = 0;

    /* Zero steps, no snapshot, bad storage codes. */
    EXPECT(ckpt_schedule_revolve(0, 3, &s), CKPT_STATUS_INVALID_PARAMETER);
    CHECK(s == NULL);
    CHECK(strstr(ckpt_last_error(), "max_n") != NULL);
    EXPECT(ckpt_schedule_revolve(10, 0, &s), CKPT_STATUS_INVALID_PARAMETER);
    EXPECT(ckpt_schedule_hrevolve(10, 1, 1, -1.0, 1.0, 2.0, 2.0, &s), CKPT_STATUS_INVALID_PARAMETER);
    EXPECT(ckpt_schedule_mixed(10, 2, 7, &s), CKPT_STATUS_INVALID_PARAMETER);
    EXPECT(ckpt_schedule_two_level(0, 2, CKPT_DISK, &s), CKPT_STATUS_INVALID_PARAMETER);
    EXPECT(ckpt_schedule_from_json("{\"schedule\":\"revolve\",\"max_n\":0,\"snapshots_in_ram\":3}", &s),
           CKPT_STATUS_INVALID_PARAMETER);
    CHECK(s == NULL);

    /* Invalid JSON, unknown schedule or field, NULL strings and outputs. */
    EXPECT(ckpt_schedule_from_json("{not json", &s), CKPT_STATUS_INVALID_JSON);
    CHECK(strlen(ckpt_last_error()) > 0);
    EXPECT(ckpt_schedule_from_json("{\"schedule\":\"nope\",\"max_n\":3}", &s), CKPT_STATUS_INVALID_JSON);
    EXPECT(ckpt_schedule_from_json("{\"schedule\":\"revolve\",\"max_n\":3,\"snapshots_in_ram\":1,\"x\":1}", &s),
           CKPT_STATUS_INVALID_JSON);
    EXPECT(ckpt_schedule_from_json("\xff\xfe", &s), CKPT_STATUS_INVALID_JSON);
    EXPECT(ckpt_schedule_from_json(NULL, &s), CKPT_STATUS_NULL_ARGUMENT);
    EXPECT(ckpt_schedule_from_json("{\"schedule\":\"revolve\",\"max_n\":3,\"snapshots_in_ram\":1}", NULL),
           CKPT_STATUS_NULL_ARGUMENT);
    EXPECT(ckpt_schedule_drive_json("[]", &s), CKPT_STATUS_INVALID_JSON);
    CHECK(s == NULL);

    /* NULL handles. */
    EXPECT(ckpt_schedule_next(NULL, &rec), CKPT_STATUS_NULL_HANDLE);
    EXPECT(ckpt_schedule_next_records(NULL, &rec, 1, &written), CKPT_STATUS_NULL_HANDLE);
    EXPECT(ckpt_schedule_finalize(NULL, 3), CKPT_STATUS_NULL_HANDLE);
    EXPECT(ckpt_schedule_position(NULL, &u, NULL, NULL, NULL, NULL), CKPT_STATUS_NULL_HANDLE);
    EXPECT(ckpt_schedule_free(NULL), CKPT_STATUS_NULL_HANDLE);
    EXPECT(ckpt_revolve_driver_free(NULL), CKPT_STATUS_NULL_HANDLE);

    /* A live handle: NULL outputs, pulls to the end. */
    EXPECT(ckpt_schedule_revolve(4, 2, &s), CKPT_STATUS_OK);
    EXPECT(ckpt_schedule_next(s, NULL), CKPT_STATUS_NULL_ARGUMENT);
    EXPECT(ckpt_schedule_next_records(s, NULL, 4, &written), CKPT_STATUS_NULL_ARGUMENT);
    EXPECT(ckpt_schedule_next_records(s, &rec, 1, NULL), CKPT_STATUS_NULL_ARGUMENT);
    EXPECT(ckpt_schedule_uses_storage(s, 42, NULL), CKPT_STATUS_INVALID_PARAMETER);
    int uses = -1;
    EXPECT(ckpt_schedule_uses_storage(s, CKPT_RAM, &uses), CKPT_STATUS_OK);
    CHECK(uses == 1);
    EXPECT(ckpt_schedule_finalize(s, 5), CKPT_STATUS_FINALIZE);
    int count = 0;
    while (ckpt_schedule_next(s, &rec) == CKPT_STATUS_OK) count++;
    CHECK(count == 16 && rec.kind == CKPT_END_REVERSE);
    EXPECT(ckpt_schedule_next(s, &rec), CKPT_STATUS_END);
    int exhausted = 0;
    EXPECT(ckpt_schedule_position(s, NULL, &u, NULL, NULL, &exhausted), CKPT_STATUS_OK);
    CHECK(u == 4 && exhausted == 1);

    /* Use after free, double free, a foreign pointer, a handle of the other kind. */
    EXPECT(ckpt_schedule_free(s), CKPT_STATUS_OK);
    EXPECT(ckpt_schedule_next(s, &rec), CKPT_STATUS_INVALID_HANDLE);
    CHECK(strstr(ckpt_last_error(), "not a live") != NULL);
    EXPECT(ckpt_schedule_free(s), CKPT_STATUS_INVALID_HANDLE);
    int not_a_handle = 0;
    EXPECT(ckpt_schedule_next((CkptSchedule *)&not_a_handle, &rec), CKPT_STATUS_INVALID_HANDLE);
    EXPECT(ckpt_schedule_free((CkptSchedule *)&not_a_handle), CKPT_STATUS_INVALID_HANDLE);
    CkptRevolveDriver *d = NULL;
    EXPECT(ckpt_revolve_driver_new("{\"schedule\":\"revolve\",\"max_n\":5,\"snapshots_in_ram\":2}", &d),
           CKPT_STATUS_OK);
    EXPECT(ckpt_schedule_next((CkptSchedule *)d, &rec), CKPT_STATUS_INVALID_HANDLE);
    EXPECT(ckpt_revolve_driver_free(d), CKPT_STATUS_OK);
    EXPECT(ckpt_revolve_driver_free(d), CKPT_STATUS_INVALID_HANDLE);

    /* Online schedules: finalize rules. */
    EXPECT(ckpt_schedule_online_r2(3, &t), CKPT_STATUS_OK);
    uint64_t n = 0, max_n = 1;
    int known = 1;
    EXPECT(ckpt_schedule_position(t, &n, NULL, &max_n, &known, NULL), CKPT_STATUS_OK);
    CHECK(known == 0 && max_n == 0);
    EXPECT(ckpt_schedule_finalize(t, 0), CKPT_STATUS_FINALIZE);
    EXPECT(ckpt_schedule_finalize(t, 100), CKPT_STATUS_FINALIZE);
    EXPECT(ckpt_schedule_free(t), CKPT_STATUS_OK);

    /* Costs. */
    CkptCost cost;
    EXPECT(ckpt_spec_cost("{\"schedule\":\"revolve\",\"max_n\":4,\"snapshots_in_ram\":2}", &cost), CKPT_STATUS_OK);
    CHECK(cost.forward_steps == 8 && cost.adjoint_steps == 4 && cost.ram.peak == 2);
    EXPECT(ckpt_spec_cost("{\"schedule\":\"revolve\"}", &cost), CKPT_STATUS_INVALID_JSON);
    EXPECT(ckpt_spec_cost("{\"schedule\":\"revolve\",\"max_n\":4,\"snapshots_in_ram\":2}", NULL),
           CKPT_STATUS_NULL_ARGUMENT);
    EXPECT(ckpt_spec_steps("{\"schedule\":\"online-r2\",\"steps\":9,\"snapshots\":2}", &u), CKPT_STATUS_OK);
    CHECK(u == 9);
    EXPECT(ckpt_binomial_forward_steps(0, 2, &u), CKPT_STATUS_INVALID_PARAMETER);

    /* revolve(): inconsistent arguments (an error that leaves info, as
     * Algorithm 799), no snapshot (info 11), then what is undefined there and
     * refused here with info 9: NULL pointers, a forged check, no start. */
    int check = -2, capo = 0, fine = 10, info = 5;
    CHECK(revolve(&check, &capo, &fine, 3, &info) == error && info == 5);
    check = -1, capo = 5, fine = 2;
    CHECK(revolve(&check, &capo, &fine, 3, &info) == error && info == 5);
    check = -1, capo = 0, fine = 10, info = 0;
    CHECK(revolve(&check, &capo, &fine, 0, &info) == error && info == 11);
    CHECK(revolve(NULL, &capo, &fine, 3, &info) == error && info == 9);
    check = -1, capo = 0, fine = 10, info = 0;
    CHECK(revolve(&check, &capo, &fine, 3, &info) == takeshot && check == 0);
    check = 2;
    CHECK(revolve(&check, &capo, &fine, 3, &info) == error && info == 9);
    CHECK(ckpt_revolve_driver_next(NULL, &check, &capo, &fine, &info) == CKPT_REVOLVE_ACTION_ERROR &&
          info == 9);
    /* A schedule revolve() cannot express (a multi-step reverse): info 20. */
    EXPECT(ckpt_revolve_driver_new("{\"schedule\":\"single-memory\",\"steps\":5}", &d), CKPT_STATUS_OK);
    check = -1, capo = 0, fine = 5, info = 0;
    enum CkptRevolveAction a;
    do a = ckpt_revolve_driver_next(d, &check, &capo, &fine, &info);
    while (a != CKPT_REVOLVE_ACTION_ERROR && a != CKPT_REVOLVE_ACTION_TERMINATE);
    CHECK(a == CKPT_REVOLVE_ACTION_ERROR && info == CKPT_REVOLVE_INFO_UNTRANSLATABLE);
    EXPECT(ckpt_revolve_driver_free(d), CKPT_STATUS_OK);

    /* Messages. */
    char small[8];
    size_t len = ckpt_last_error_copy(small, sizeof small);
    CHECK(len == strlen(ckpt_last_error()) && strlen(small) == 7);
    CHECK(strcmp(ckpt_status_name(CKPT_STATUS_INVALID_HANDLE), "CKPT_STATUS_INVALID_HANDLE") == 0);
    CHECK(strcmp(ckpt_version(), CKPT_VERSION) == 0);

    printf("bad_input: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
