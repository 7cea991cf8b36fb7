/*
 * revolve.h: the interface of Griewank and Walther's revolve() (ACM TOMS
 * 26(1), 2000, Algorithm 799), implemented by libcheckpointing_capi on top of
 * its Revolve schedule. A code written against the classic revolve.h
 * compiles against this one and switches by relinking:
 *
 *     cc driver.c $(pkg-config --cflags --libs checkpointing)
 *
 * Same argument meanings and action codes. Start with check = -1, capo = the
 * first step, fine = the last step, then call revolve() until terminate or
 * error:
 *   advance   run the forward from the previous capo to the new capo
 *   takeshot  store the state at capo in slot check (0 <= check < snaps)
 *   restore   load slot check: the forward is at capo
 *   firsturn  record step capo -> capo + 1, initialise the adjoint, reverse it
 *   youturn   record step capo -> capo + 1 and reverse it
 *   terminate the adjoint has reached the first step
 *   error     info: 9 inconsistent check/capo/fine (or not the values the
 *             previous call returned, or not initialised), 11 too few snaps,
 *             20 untranslatable action, 21 schedule or internal error;
 *             ckpt_last_error() (checkpointing.h) gives the message.
 * The advanced steps total numforw(steps, snaps), the binomial minimum; with
 * the one recorded step per turn, ckpt_binomial_forward_steps().
 *
 * Differences from Algorithm 799 (see the crate's README): the state is per
 * thread, not per process; the optimal split chosen may differ (never the
 * counts); capo and fine are checked on every call; info > 0 prints nothing
 * and info is written only on error; a call after terminate without
 * re-initialising is an error. maxrange() and adjust() are not provided.
 */
#ifndef CHECKPOINTING_REVOLVE_H
#define CHECKPOINTING_REVOLVE_H

#ifdef __cplusplus
extern "C" {
#endif

enum action { advance, takeshot, restore, firsturn, youturn, terminate, error };

enum action revolve(int *check, int *capo, int *fine, int snaps, int *info);
int numforw(int steps, int snaps);
double expense(int steps, int snaps);

#ifdef __cplusplus
}
#endif

#endif /* CHECKPOINTING_REVOLVE_H */
