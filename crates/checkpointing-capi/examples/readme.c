/* The C example of the crate's README: a schedule from JSON, pulled action by action. */
#include <checkpointing.h>
#include <stdio.h>

int main(void) {
    CkptSchedule *s;
    if (ckpt_schedule_from_json("{\"schedule\":\"revolve\",\"max_n\":4,\"snapshots_in_ram\":2}", &s)) {
        fprintf(stderr, "error: %s\n", ckpt_last_error());
        return 1;
    }
    CkptActionRecord a;
    while (ckpt_schedule_next(s, &a) == CKPT_STATUS_OK) {
        switch (a.kind) {
        case CKPT_FORWARD: printf("forward %d -> %d%s\n", (int)a.n0, (int)a.n1,
                                  a.flags & CKPT_WRITE_ICS ? ", store the start" : ""); break;
        case CKPT_REVERSE: printf("adjoint %d -> %d\n", (int)a.n1, (int)a.n0); break;
        case CKPT_COPY: case CKPT_MOVE: printf("restart from step %d\n", (int)a.n0); break;
        default: break; /* CKPT_END_FORWARD, CKPT_END_REVERSE */
        }
    }
    return ckpt_schedule_free(s) != CKPT_STATUS_OK;
}
