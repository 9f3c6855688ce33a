// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* thread.c - the library's threads start with every signal blocked (see
 * thread.h). */
#include <errno.h>
#include <signal.h>
/* C11 threads: <pthread.h> would find user/sched.h for <sched.h> */
#include <threads.h>

#include "util/thread.h"

int tb_thread_start(thrd_t *t, thrd_start_t fn, void *arg)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = thrd_create(t, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err != thrd_success)
		return err == thrd_nomem ? -ENOMEM : -EAGAIN;
	return 0;
}
