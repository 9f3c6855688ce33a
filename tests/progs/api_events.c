/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * api_events - one use of every macro family of the extended API, in a
 * fixed order, for tests/integration/test_api.py (which checks the exact
 * JSON each produces):
 *   counters with ids, async (begin/step/end), nestable async, flows from
 *   the main thread to a consumer thread, COPY names (one longer than the
 *   bound), the category guards, process/thread names and sort indices.
 * Prints "pid=<pid> active=<0|1> enabled=<0|1>" and exits 0.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "tracebpf/trace.h"

static void *consumer(void *arg)
{
	(void)arg;
	TRACE_THREAD_NAME("consumer thread");
	TRACE_THREAD_SORT_INDEX(7);
	{
		TRACE_EVENT0("flow", "consume");
		TRACE_EVENT_FLOW_END1("flow", "job", 0x99, "where", "consumer");
	}
	return NULL;
}

int main(void)
{
	static int object;
	char dyn[32], longname[400];
	pthread_t th;
	int active, enabled = 0;

	/* counters with ids */
	TRACE_COUNTER_ID1("ctr", "queue", 7, 3);
	TRACE_COUNTER_ID2("ctr", "mem", 8, "used", 10, "free", 2.5);

	/* async, keyed by a pointer */
	TRACE_EVENT_ASYNC_BEGIN1("async", "request", &object, "url", "/index");
	TRACE_EVENT_ASYNC_STEP_INTO1("async", "request", &object, "parse", "bytes", 100);
	TRACE_EVENT_ASYNC_STEP_INTO0("async", "request", &object, "reply");
	TRACE_EVENT_ASYNC_END1("async", "request", &object, "status", 200u);

	/* nestable async, keyed by an integer */
	TRACE_EVENT_NESTABLE_ASYNC_BEGIN0("nest", "outer", 5);
	TRACE_EVENT_NESTABLE_ASYNC_BEGIN1("nest", "inner", 5, "k", 1);
	TRACE_EVENT_NESTABLE_ASYNC_INSTANT2("nest", "mark", 5, "a", -1, "b", (bool)true);
	TRACE_EVENT_NESTABLE_ASYNC_END0("nest", "inner", 5);
	TRACE_EVENT_NESTABLE_ASYNC_END2("nest", "outer", 5, "x", 1, "y", 2.5);

	/* a flow from a slice here, through a second slice, to the consumer */
	{
		TRACE_EVENT0("flow", "produce");
		TRACE_EVENT_FLOW_BEGIN1("flow", "job", 0x99, "n", 1);
	}
	{
		TRACE_EVENT0("flow", "relay");
		usleep(1000);
		TRACE_EVENT_FLOW_STEP0("flow", "job", 0x99, "relayed");
	}
	pthread_create(&th, NULL, consumer, NULL);
	pthread_join(th, NULL);

	/* names that are not literals */
	snprintf(dyn, sizeof(dyn), "dyn_%d", 7);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	TRACE_EVENT_COPY_BEGIN1("copy", dyn, "a", 1);
	TRACE_EVENT_COPY_END0("copy", dyn);
	TRACE_EVENT_COPY_INSTANT1("copy", dyn, TRACE_EVENT_SCOPE_PROCESS, "s", dyn);
	TRACE_EVENT_COPY_INSTANT0("copy", longname, TRACE_EVENT_SCOPE_THREAD);
	TRACE_EVENT_COPY_ASYNC_BEGIN0("copy", dyn, 3);
	TRACE_EVENT_COPY_ASYNC_END0("copy", dyn, 3);

	/* guards */
	active = TRACE_EVENT_CATEGORY_ACTIVE("guard");
	TRACE_EVENT_CATEGORY_GROUP_ENABLED("guard", &enabled);
	if (TRACE_EVENT_CATEGORY_ACTIVE("guard"))
		TRACE_EVENT_INSTANT1("guard", "expensive", TRACE_EVENT_SCOPE_THREAD,
				     "active", active);

	/* names and order */
	TRACE_PROCESS_NAME("api process");
	TRACE_PROCESS_SORT_INDEX(-5);
	TRACE_THREAD_NAME(dyn);
	TRACE_THREAD_SORT_INDEX(2);

	printf("pid=%d active=%d enabled=%d\n", (int)getpid(), active, enabled);
	return 0;
}
