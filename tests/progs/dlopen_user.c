/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * dlopen_user LIB - emits "before_dlopen", dlopens LIB (not linked: the
 * recorder cannot know it at start), calls its tbtest_dl_event(i) for
 * i = 0..4 right away, emits "after_dl". Prints "dl ok". With
 * DLOPEN_USER_WAIT set it dlopens only once a line arrives on stdin.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include "tracebpf/trace.h"

int main(int argc, char **argv)
{
	void (*fn)(int);
	void *h;
	int i;

	if (argc < 2)
		return 2;
	if (getenv("DLOPEN_USER_WAIT")) {
		char line[16];

		printf("waiting\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	TRACE_EVENT_INSTANT0("test", "before_dlopen", TRACE_EVENT_SCOPE_THREAD);
	h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen_user: %s\n", dlerror());
		return 1;
	}
	*(void **)&fn = dlsym(h, "tbtest_dl_event");
	if (!fn)
		return 1;
	for (i = 0; i < 5; i++)
		fn(i);
	TRACE_EVENT_INSTANT0("test", "after_dl", TRACE_EVENT_SCOPE_THREAD);
	printf("dl ok\n");
	return 0;
}
