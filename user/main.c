// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* main.c - tracebpf command line: the table of its commands (record,
 * convert, info, report, dump, list, pack, ctl, version, help), each
 * declared in tracebpf.h and run with its own argv. */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/probes.h"
#include "convert/convert.h"
#include "cli/cli.h"
#include "ctl/ctl.h"
#include "report/report.h"
#include "kern/kern.h"
#include "tracebpf.h"

const char *argp_program_version = "tracebpf " TRACEBPF_VERSION;
const char *argp_program_bug_address = "the tracebpf issue tracker";

static int cmd_version(int argc, char **argv, const char *cmdline);
static int cmd_help(int argc, char **argv, const char *cmdline);

/* The commands: dispatch, `tracebpf --help`, `tracebpf help` and the man
 * pages (each has docs/tracebpf-NAME.md: tests/integration/test_install.py
 * holds the two lists to each other). */
static const struct tb_command commands[] = {
	{ "record", tb_cmd_record, "record a running process (-p PID) or a command (-- CMD)" },
	{ "convert", tb_cmd_convert, "render a trace file (.tbt) as Chrome trace JSON" },
	{ "info", tb_cmd_info, "describe a trace file: version, streams, events, drops" },
	{ "report", tb_cmd_report, "summarize a trace: losses, slices by total and self time" },
	{ "dump", tb_cmd_dump, "print a trace file one line per record" },
	{ "list", tb_cmd_list, "list the sites a program carries (tracebpf's 'perf list')" },
	{ "pack", tb_cmd_pack, "rewrite a trace at maximum compression for transport" },
	{ "ctl", tb_cmd_ctl, "control a running recording (start|stop|status|list|filter)" },
	{ "version", cmd_version, "print the version" },
	{ "help", cmd_help, "list the commands (--commands: their names alone)" },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct tb_command *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

/* The top-level help: the commands' table (argp's doc string, made once). */
static const char *top_doc(void)
{
	static char doc[2048];
	int n = snprintf(doc, sizeof(doc), "tracebpf -- trace C/C++ applications with USDT "
			 "probes and BPF\n\nCommands:\n");

	for (size_t i = 0; i < NCOMMANDS && n < (int)sizeof(doc); i++)
		n += snprintf(doc + n, sizeof(doc) - (size_t)n, "  %-10s %s\n", commands[i].name,
			      commands[i].summary);
	if (n < (int)sizeof(doc))
		snprintf(doc + n, sizeof(doc) - (size_t)n,
			 "\nRun 'tracebpf COMMAND --help' for a command's options.");
	return doc;
}

static int cmd_version(int argc, char **argv, const char *cmdline)
{
	(void)argc;
	(void)argv;
	(void)cmdline;
	puts(argp_program_version);
	return 0;
}

/* `tracebpf help`: the table; `help --commands`: the names, one a line. */
static int cmd_help(int argc, char **argv, const char *cmdline)
{
	(void)cmdline;
	if (argc > 1 && !strcmp(argv[1], "--commands")) {
		for (size_t i = 0; i < NCOMMANDS; i++)
			puts(commands[i].name);
		return 0;
	}
	fputs(top_doc(), stdout);
	putchar('\n');
	return 0;
}

/* What a command printed must have reached stdout: a full disk would
 * otherwise pass for success (coreutils' close_stdout does the same). */
static int check_stdout(const char *cmd, int ret)
{
	int err;

	errno = 0;
	if ((!fflush(stdout) && !ferror(stdout)) || ret)
		return ret;   /* a command that failed has said why */
	err = errno;   /* 0: an earlier write failed, its errno is gone */
	fprintf(stderr, "tracebpf: %s: failed to write '<stdout>': %s\n", cmd,
		err ? strerror(err) : "a write failed, the output is cut short");
	if (!err)
		fprintf(stderr, "tracebpf: hint: check the free space where the output goes, "
				"or redirect it to another file system\n");
	else if (tb_write_hint(-err))
		fprintf(stderr, "tracebpf: hint: %s\n", tb_write_hint(-err));
	return ret ? ret : 1;
}

static char *join_args(int argc, char **argv)
{
	size_t len = 1;
	char *s;

	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	s = calloc(1, len);
	if (!s)
		return NULL;
	for (int i = 0; i < argc; i++) {
		if (i)
			strcat(s, " ");
		strcat(s, argv[i]);
	}
	return s;
}

/* libtracebpf's warnings and notes, on stderr like every message. */
static void print_stderr(enum tracebpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	vfprintf(stderr, fmt, ap);
}

int main(int argc, char **argv)
{
	struct argp top = { NULL, NULL, "COMMAND [ARG...]", top_doc(), NULL, NULL, NULL };
	const struct tb_command *cmd;
	char *cmdline, name[32];
	int ret;

	tracebpf_set_print(print_stderr);
	if (argc < 2 || argv[1][0] == '-') {
		if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))) {
			puts(argp_program_version);
			return 0;
		}
		if (argc < 2)
			fprintf(stderr, "tracebpf: no command given: try 'tracebpf --help'\n");
		argp_parse(&top, argc, argv, 0, NULL, NULL);
		return 64;
	}
	cmdline = join_args(argc, argv);
	cmd = find_command(argv[1]);
	if (!cmd) {
		fprintf(stderr, "tracebpf: unknown command '%s': try 'tracebpf --help'\n", argv[1]);
		free(cmdline);
		return 64;
	}
	/* argv[1..] as the command's argv: argv[0] becomes "tracebpf record" */
	snprintf(name, sizeof(name), "tracebpf %s", cmd->name);
	argv[1] = name;
	ret = cmd->run(argc - 1, argv + 1, cmdline);
	free(cmdline);
	if (ret != 64)   /* usage errors print to stderr only */
		ret = check_stdout(cmd->name, ret);
	return ret;
}
