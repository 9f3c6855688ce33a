// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fuzz_reader.c - libFuzzer target: any bytes as a trace file, read with
 * every stream, with the index (seek) path, converted to JSON, and
 * summarized by tracebpf report (text and JSON). Must
 * never crash, hang or allocate without bound (-rss_limit_mb).
 */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../lib/convert.h"
#include "../../user/report.h"
#include "../../lib/tbfile.h"

static int as_fd(const uint8_t *d, size_t n)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if (n && write(fd, d, n) != (ssize_t)n) {
		close(fd);
		return -1;
	}
	lseek(fd, 0, SEEK_SET);
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	const struct tb_rec_hdr *h;
	struct tb_reader *r;
	FILE *out;
	int fd;

	fd = as_fd(d, n);
	if (fd >= 0 && tb_reader_open_fd(&r, fd, 1) == 0) {
		tb_reader_set_streams(r, 1u << TB_STREAM_USER);   /* index path */
		while (tb_reader_next(r, &h) > 0)
			;
		tb_reader_close(r);
	}
	fd = as_fd(d, n);
	out = fopen("/dev/null", "w");
	if (fd >= 0 && out && tb_reader_open_fd(&r, fd, 1) == 0) {
		tb_convert_file(r, out);
		tb_reader_close(r);
	}
	for (int json = 0; json < 2 && out; json++) {
		fd = as_fd(d, n);
		if (fd >= 0 && tb_reader_open_fd(&r, fd, 1) == 0) {
			tb_report_file(r, out, json);
			tb_reader_close(r);
		}
	}
	if (out)
		fclose(out);
	return 0;
}
