// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* test_ftrace.c - kernel records -> ftrace lines (lib/ftrace.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ftrace.h"
#include "util/json.h"

static void hdr(struct tb_rec_hdr *h, uint16_t type, uint16_t size, uint64_t ts,
		uint32_t pid, uint32_t tid, uint32_t cpu)
{
	h->type = type;
	h->size = size;
	h->ts = ts;
	h->pid = pid;
	h->tid = tid;
	h->cpu = cpu;
}

static void test_switch_and_wakeups(void **state)
{
	struct tb_rec_switch sw = { 0 };
	struct tb_rec_wake wk = { 0 };
	struct tb_ftrace *f;
	const char *text;
	char line[512];

	(void)state;
	assert_int_equal(tb_ftrace_new(&f), 0);
	assert_null(tb_ftrace_text(f));
	hdr(&sw.hdr, TB_REC_SWITCH, sizeof(sw), 8123456789123ull, 1234, 1235, 1);
	sw.next_tid = 0;
	sw.prev_prio = 120;
	sw.next_prio = 120;
	sw.prev_state = 1;
	memcpy(sw.prev_comm, "my worker", 9);       /* a space: must go */
	strcpy(sw.next_comm, "swapper/1");
	assert_int_equal(tb_ftrace_add(f, &sw.hdr), 0);
	tb_ftrace_format_line(f, &sw.hdr, true, line, sizeof(line));
	assert_string_equal(line, "       my_worker-1235    (   1234) [001] d..2  8123.456789: "
			    "sched_switch: prev_comm=my_worker prev_pid=1235 prev_prio=120 "
			    "prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120");
	sw.prev_state = TB_TASK_PREEMPTED;
	tb_ftrace_format_line(f, &sw.hdr, true, line, sizeof(line));
	assert_non_null(strstr(line, " prev_state=R+ ==> "));
	sw.prev_state = 0x80;   /* idle kernel thread: I, shown to viewers as S */
	tb_ftrace_format_line(f, &sw.hdr, true, line, sizeof(line));
	assert_non_null(strstr(line, " prev_state=S ==> "));
	tb_ftrace_format_line(f, &sw.hdr, false, line, sizeof(line));
	assert_non_null(strstr(line, " prev_state=I ==> "));

	hdr(&wk.hdr, TB_REC_WAKE, sizeof(wk), 8123456790000ull, 0, 0, 0);
	wk.kind = TB_WAKE_WAKEUP_NEW;
	wk.tid = 77;
	wk.tgid = 70;
	wk.prio = 120;
	wk.target_cpu = 1;
	strcpy(wk.comm, "kid");
	assert_int_equal(tb_ftrace_add(f, &wk.hdr), 0);
	tb_ftrace_format_line(f, &wk.hdr, true, line, sizeof(line));
	assert_string_equal(line, "          <idle>-0       (      0) [000] d...  8123.456790: "
			    "sched_wakeup: comm=kid pid=77 prio=120 success=1 target_cpu=001");
	tb_ftrace_format_line(f, &wk.hdr, false, line, sizeof(line));
	assert_non_null(strstr(line, "sched_wakeup_new: comm=kid pid=77"));

	text = tb_ftrace_text(f);
	assert_non_null(text);
	assert_true(!strncmp(text, "# tracer: nop\n# clock_type=LINUX_CLOCK_MONOTONIC\n", 49));
	assert_int_equal(text[strlen(text) - 1], '\n');
	assert_int_equal(tb_ftrace_lines(f), 2);

	/* the text is kept in a file and streamed into the JSON string */
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&buf, &len);
		struct tb_json j;

		assert_non_null(m);
		tb_json_init(&j, m);
		assert_int_equal(tb_ftrace_write_json(f, &j), 0);
		assert_int_equal(tb_json_error(&j), 0);   /* writes it out */
		fclose(m);
		assert_true(!strncmp(buf, "\"# tracer: nop\\n# clock_type=LINUX_CLOCK_MONOTONIC\\n", 51));
		assert_non_null(strstr(buf, "sched_wakeup: comm=kid pid=77 prio=120 success=1 target_cpu=001\\n\""));
		assert_int_equal(buf[len - 1], '"');
		assert_null(strchr(buf, '\n'));   /* every newline escaped */
		free(buf);
	}
	/* collect off (dump): lines are formatted on demand, not kept */
	tb_ftrace_collect(f, false);
	assert_int_equal(tb_ftrace_add(f, &wk.hdr), 0);
	assert_int_equal(tb_ftrace_lines(f), 2);
	tb_ftrace_free(f);
}

static void test_ktask_not_for_viewers(void **state)
{
	struct tb_rec_ktask k = { 0 };
	struct tb_ftrace *f;
	char line[256];

	(void)state;
	assert_int_equal(tb_ftrace_new(&f), 0);
	hdr(&k.hdr, TB_REC_KTASK, sizeof(k), 1000, 10, 11, 0);
	k.kind = TB_KTASK_RENAME;
	k.tid = 11;
	k.tgid = 10;
	strcpy(k.comm, "old");
	strcpy(k.comm2, "new");
	assert_int_equal(tb_ftrace_add(f, &k.hdr), 0);
	assert_null(tb_ftrace_text(f));   /* neither viewer reads it */
	assert_int_equal(tb_ftrace_format_line(f, &k.hdr, true, line, sizeof(line)), 0);
	assert_true(tb_ftrace_format_line(f, &k.hdr, false, line, sizeof(line)) > 0);
	/* after the rename, the thread's lines carry the new name */
	assert_non_null(strstr(line, "             new-11      (     10) [000] ....     0.000001: "
			       "task_rename: pid=11 oldcomm=old newcomm=new"));
	tb_ftrace_free(f);
}

static void test_garbage_is_skipped(void **state)
{
	unsigned char buf[64 + 4096];
	struct tb_rec_tp *tp = (void *)buf;
	struct tb_rec_format *fm = (void *)buf;
	struct tb_ftrace *f;
	char line[256];

	(void)state;
	assert_int_equal(tb_ftrace_new(&f), 0);
	memset(buf, 0xff, sizeof(buf));
	hdr(&fm->hdr, TB_REC_FORMAT, 64, 1, 0, 0, ~0u);
	fm->len = 5000;                      /* past the record */
	assert_int_equal(tb_ftrace_add(f, &fm->hdr), 0);
	hdr(&tp->hdr, TB_REC_TP, 64, 2, 1, 1, 0);
	tp->len = 4000;                      /* past the record */
	assert_int_equal(tb_ftrace_add(f, &tp->hdr), 0);
	tp->len = 16;                        /* no format for this id */
	tp->id = 12345;
	assert_int_equal(tb_ftrace_format_line(f, &tp->hdr, true, line, sizeof(line)), 0);
	assert_null(tb_ftrace_text(f));
	tb_ftrace_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_switch_and_wakeups),
		cmocka_unit_test(test_ktask_not_for_viewers),
		cmocka_unit_test(test_garbage_is_skipped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
