"""A throwaway PostgreSQL cluster for the tests that record a real program's
own USDT probes (Debian's PostgreSQL 15 is built with them):

    with PgCluster() as pg:
        pg.psql("select 1")          # one new connection: one new backend
        pg.postmaster_pid, pg.bin    # what a recorder attaches to

The cluster lives in a new directory under /tmp: its data, its log and a
private Unix socket directory. It listens on no TCP address (listen_addresses
is empty), so its port only names its socket and clusters of tests that run
side by side never meet. PostgreSQL refuses to run as root; when the tests
run as root (CI does) every PostgreSQL command runs as the unprivileged user
`nobody`, which owns the directory. Leaving the block, also on an exception,
stops the cluster (immediate shutdown, then SIGKILL for a postmaster still
there) and removes the directory.
"""
import os
import pwd
import random
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

PG_BINDIR = Path("/usr/lib/postgresql/15/bin")
PG_USER = "nobody"


class PgError(RuntimeError):
    pass


class PgCluster:
    """A private PostgreSQL cluster, running between __enter__ and __exit__.

    Attributes once entered: dir (the temporary directory), data, sockdir,
    port, log (the server log), bin (the postgres binary), postmaster_pid.
    """

    def __init__(self, bindir=PG_BINDIR, user=PG_USER, timeout=120.0, settings=None):
        self.bindir = Path(bindir)
        self.bin = str(self.bindir / "postgres")
        self.timeout = timeout
        # extra postgresql.conf lines, e.g. {"max_connections": "20"}
        self.settings = dict(settings or {})
        self.port = random.randrange(20000, 60000)
        self.postmaster_pid = None
        self.dir = None
        if os.geteuid() == 0:
            pw = pwd.getpwnam(user)
            self._ids = dict(user=pw.pw_uid, group=pw.pw_gid, extra_groups=[])
            self.user = user
        else:
            self._ids = {}
            self.user = pwd.getpwuid(os.geteuid()).pw_name

    # ---- running PostgreSQL's commands as its user ----

    def _env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(HOME=str(self.dir), LC_ALL="C", LANG="C", USER=self.user,
                   LOGNAME=self.user)
        return env

    def _run(self, *args, check=True, timeout=None):
        p = subprocess.run([str(self.bindir / args[0]), *args[1:]], cwd=self.dir,
                           env=self._env(), stdin=subprocess.DEVNULL,
                           capture_output=True, text=True,
                           timeout=timeout or self.timeout, **self._ids)
        if check and p.returncode != 0:
            raise PgError(f"{args[0]} exited {p.returncode}: {p.stderr.strip()}"
                          f"{self._log_tail()}")
        return p

    def _log_tail(self, lines=20):
        try:
            text = Path(self.log).read_text(errors="replace").splitlines()[-lines:]
        except (OSError, TypeError):
            return ""
        return "\nserver log:\n" + "\n".join(text) if text else ""

    # ---- start and stop ----

    def __enter__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="tracebpf-pg-", dir="/tmp"))
        try:
            self._start()
        except BaseException:
            self._cleanup()
            raise
        return self

    def __exit__(self, *exc):
        self._cleanup()
        return False

    def _start(self):
        self.data = self.dir / "data"
        self.sockdir = self.dir / "sock"
        self.log = self.dir / "server.log"
        self.sockdir.mkdir()
        if self._ids:
            for p in (self.dir, self.sockdir):
                os.chown(p, self._ids["user"], self._ids["group"])
        self._run("initdb", "-D", str(self.data), "--auth=trust", "--no-sync",
                  "--encoding=UTF8", "--locale=C", "--no-instructions")
        conf = {
            "listen_addresses": "''",
            "port": str(self.port),
            "unix_socket_directories": f"'{self.sockdir}'",
            # a test cluster: nothing to keep across a crash
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            **self.settings,
        }
        with open(self.data / "postgresql.conf", "a") as f:
            f.write("\n# tests/integration/pgcluster.py\n")
            f.writelines(f"{k} = {v}\n" for k, v in conf.items())
        # -w: pg_ctl returns once the postmaster reports it is ready
        self._run("pg_ctl", "start", "-D", str(self.data), "-l", str(self.log),
                  "-w", "-t", str(int(self.timeout)))
        self.postmaster_pid = int((self.data / "postmaster.pid").read_text().split()[0])
        self._wait_ready()

    def _wait_ready(self):
        """Until a connection is accepted (pg_isready), bounded by timeout;
        fails at once if the postmaster died."""
        end = time.monotonic() + self.timeout
        while True:
            p = self._run("pg_isready", "-h", str(self.sockdir), "-p", str(self.port),
                          "-d", "postgres", "-t", "5", check=False)
            if p.returncode == 0:
                return
            if not _alive(self.postmaster_pid):
                raise PgError(f"postgres {self.postmaster_pid} exited before it accepted "
                              f"connections{self._log_tail()}")
            if time.monotonic() > end:
                raise PgError(f"postgres accepted no connection in {self.timeout} s: "
                              f"{p.stdout.strip()}{self._log_tail()}")
            time.sleep(0.05)

    def _cleanup(self):
        try:
            if self.postmaster_pid is None and self.dir is not None:
                pidfile = self.dir / "data" / "postmaster.pid"
                if pidfile.exists():    # started, then failed before we read it
                    self.postmaster_pid = int(pidfile.read_text().split()[0])
            if self.dir is not None and (self.dir / "data" / "postmaster.pid").exists():
                try:
                    self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "immediate",
                              "-w", "-t", "30", check=False, timeout=60)
                except (OSError, subprocess.SubprocessError):
                    pass
            if self.postmaster_pid is not None and _alive(self.postmaster_pid):
                try:
                    os.kill(self.postmaster_pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                end = time.monotonic() + 30
                while _alive(self.postmaster_pid) and time.monotonic() < end:
                    time.sleep(0.02)
        finally:
            if self.dir is not None:
                shutil.rmtree(self.dir, ignore_errors=True)

    # ---- use ----

    def psql(self, *sql, db="postgres", timeout=None):
        """Run each sql, one query each, in one new psql connection (one new
        backend process); returns its unaligned, tuples-only output."""
        cs = [a for s in sql for a in ("-c", s)]
        p = self._run("psql", "-h", str(self.sockdir), "-p", str(self.port), "-X", "-q",
                      "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", db, *cs,
                      check=False, timeout=timeout)
        if p.returncode != 0:
            raise PgError(f"psql -c {sql!r} exited {p.returncode}: {p.stderr.strip()}")
        return p.stdout

    def child(self, title):
        """The pid of the postmaster's child whose title begins
        "postgres: <title>" (the checkpointer, the walwriter, ...)."""
        for d in Path("/proc").iterdir():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                cmd = (d / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
            except (OSError, ValueError, IndexError):
                continue
            if ppid == self.postmaster_pid and cmd.startswith(f"postgres: {title}"):
                return int(d.name)
        raise PgError(f"no postgres: {title} process")

    def spawn_psql(self, *sql, db="postgres"):
        """psql running each sql in one new connection, in the background:
        a Popen whose stdout is its output, line by line."""
        cs = [a for s in sql for a in ("-c", s)]
        return subprocess.Popen([str(self.bindir / "psql"), "-h", str(self.sockdir), "-p",
                                 str(self.port), "-X", "-q", "-A", "-t", "-d", db, *cs],
                                cwd=self.dir, env=self._env(), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                **self._ids)


def _alive(pid):
    """pid exists and is not a zombie (the postmaster is pg_ctl's child,
    not ours: nobody here reaps it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
