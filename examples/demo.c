/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * demo - a small traced pipeline, the program tracebpf's documentation runs.
 *
 * A producer thread makes work items and puts them in a bounded queue; two
 * consumer threads take them and "process" them (a little arithmetic and a
 * short sleep). Everything is instrumented with tracebpf/trace.h:
 *
 *   - scoped slices (TRACE_EVENTn) with arguments of every type: integers,
 *     unsigned, double, bool, string and pointer; nested slices;
 *   - explicit TRACE_EVENT_BEGIN/END pairs;
 *   - instants of each scope (thread, process, global);
 *   - counters (queue depth; items done per consumer).
 *
 * Runs for about 1.5 s and exits 0. Without a tracer the sites cost about a
 * nanosecond each. Try:  tracebpf record -o demo.tbt -- ./demo
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "tracebpf/trace.h"

#define QUEUE_CAP   8
#define NCONSUMERS  2
#define NITEMS      300
#define PRODUCE_US  4000   /* 300 items * 4 ms ~ 1.2 s */
#define CONSUME_US  6000

struct item {
	unsigned id;
	double weight;
	bool urgent;
	char label[16];
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t not_empty, not_full;
	struct item items[QUEUE_CAP];
	unsigned head, len;
	bool closed;
} queue = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.not_empty = PTHREAD_COND_INITIALIZER,
	.not_full = PTHREAD_COND_INITIALIZER,
};

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

static void queue_put(const struct item *it)
{
	TRACE_EVENT1("queue", "put", "id", it->id);
	pthread_mutex_lock(&queue.lock);
	while (queue.len == QUEUE_CAP) {
		TRACE_EVENT_INSTANT1("queue", "full", TRACE_EVENT_SCOPE_THREAD,
				     "len", queue.len);
		pthread_cond_wait(&queue.not_full, &queue.lock);
	}
	queue.items[(queue.head + queue.len) % QUEUE_CAP] = *it;
	queue.len++;
	TRACE_COUNTER1("queue", "depth", queue.len);
	pthread_cond_signal(&queue.not_empty);
	pthread_mutex_unlock(&queue.lock);
}

/* Returns false once the queue is closed and empty. */
static bool queue_get(struct item *it)
{
	bool got = false;

	TRACE_EVENT0("queue", "get");
	pthread_mutex_lock(&queue.lock);
	while (queue.len == 0 && !queue.closed)
		pthread_cond_wait(&queue.not_empty, &queue.lock);
	if (queue.len > 0) {
		*it = queue.items[queue.head];
		queue.head = (queue.head + 1) % QUEUE_CAP;
		queue.len--;
		TRACE_COUNTER1("queue", "depth", queue.len);
		pthread_cond_signal(&queue.not_full);
		got = true;
	}
	pthread_mutex_unlock(&queue.lock);
	return got;
}

static void queue_close(void)
{
	pthread_mutex_lock(&queue.lock);
	queue.closed = true;
	pthread_cond_broadcast(&queue.not_empty);
	pthread_mutex_unlock(&queue.lock);
	TRACE_EVENT_INSTANT0("queue", "closed", TRACE_EVENT_SCOPE_PROCESS);
}

static void *producer(void *arg)
{
	unsigned i;

	(void)arg;
	pthread_setname_np(pthread_self(), "producer");
	for (i = 0; i < NITEMS; i++) {
		struct item it;

		TRACE_EVENT1("demo", "produce", "i", i);
		it.id = i;
		it.weight = 0.5 + (i % 7) * 0.25;
		it.urgent = (i % 10) == 0;
		snprintf(it.label, sizeof(it.label), "item-%u", i);
		sleep_us(PRODUCE_US / 2);
		queue_put(&it);
		sleep_us(PRODUCE_US / 2);
	}
	queue_close();
	return NULL;
}

static uint64_t checksum(const struct item *it)
{
	uint64_t h = 1469598103934665603ull;
	size_t k;

	TRACE_EVENT1("demo", "checksum", "label", it->label);
	for (k = 0; k < strlen(it->label); k++)
		h = (h ^ (unsigned char)it->label[k]) * 1099511628211ull;
	return h;
}

struct consumer {
	pthread_t thread;
	int index;
	unsigned done;
	uint64_t sum;
};

static void *consumer(void *arg)
{
	struct consumer *c = arg;
	char name[16];
	struct item it;

	snprintf(name, sizeof(name), "consumer-%d", c->index);
	pthread_setname_np(pthread_self(), name);
	while (queue_get(&it)) {
		TRACE_EVENT2("demo", "process", "id", it.id, "weight", it.weight);
		{
			/* nested: string, bool and pointer arguments */
			TRACE_EVENT2("demo", "inspect", "label", it.label,
				     "urgent", it.urgent);
			TRACE_EVENT_INSTANT1("demo", "item_at",
					     TRACE_EVENT_SCOPE_THREAD, "ptr", &it);
			if (it.urgent)
				TRACE_EVENT_INSTANT2("demo", "urgent",
						     TRACE_EVENT_SCOPE_GLOBAL, "id",
						     it.id, "by", c->index);
		}
		TRACE_EVENT_BEGIN1("demo", "work", "delta", (long)it.id - 150);
		c->sum += checksum(&it);
		sleep_us(CONSUME_US);
		TRACE_EVENT_END0("demo", "work");
		c->done++;
		TRACE_COUNTER2("demo", "consumed", "done", c->done, "sum_low",
			       (unsigned)(c->sum & 0xffff));
	}
	return NULL;
}

int main(void)
{
	struct consumer consumers[NCONSUMERS];
	pthread_t prod;
	unsigned total = 0;
	int i;

	TRACE_EVENT0("demo", "main");
	TRACE_EVENT_INSTANT1("demo", "start", TRACE_EVENT_SCOPE_PROCESS,
			     "version", TRACEBPF_VERSION);
	memset(consumers, 0, sizeof(consumers));
	for (i = 0; i < NCONSUMERS; i++) {
		consumers[i].index = i;
		pthread_create(&consumers[i].thread, NULL, consumer,
			       &consumers[i]);
	}
	pthread_create(&prod, NULL, producer, NULL);
	pthread_join(prod, NULL);
	for (i = 0; i < NCONSUMERS; i++) {
		pthread_join(consumers[i].thread, NULL);
		total += consumers[i].done;
	}
	TRACE_EVENT_INSTANT1("demo", "finished", TRACE_EVENT_SCOPE_GLOBAL,
			     "items", total);
	printf("demo: %u items through %d consumers\n", total, NCONSUMERS);
	return total == NITEMS ? 0 : 1;
}
