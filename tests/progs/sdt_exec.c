/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * sdt_exec N - what sdt_app ... exec execs: a program with a plain
 * <sys/sdt.h> probe the recorder has not seen before the exec. Fires
 * sdtexec:hit (int i, char * "exec-<i>") for i in 0..N-1, prints
 * "exec pid=<pid>" and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char name[32];
	int n, i;

	if (argc < 2) {
		fprintf(stderr, "usage: sdt_exec N\n");
		return 2;
	}
	n = atoi(argv[1]);
	for (i = 0; i < n; i++) {
		int k = i;
		const char *s = name;

		snprintf(name, sizeof(name), "exec-%d", i);
		/* read from registers at the probe, not folded constants */
		__asm__ __volatile__("" : "+r"(k), "+r"(s));
		STAP_PROBE2(sdtexec, hit, k, s);
	}
	printf("exec pid=%d\n", (int)getpid());
	return 0;
}
